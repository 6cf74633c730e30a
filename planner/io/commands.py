"""`planner import|export|generate`: typer sub-applications over `planner.io` and
`planner.generate` (mounted by `planner/cli.py`).

Every command that makes a spec writes it atomically to `-o FILE`; `--cluster FILE`
(repeatable) imports a cluster file into it and adds one plan per cluster defined there
(named `GRAPH_CLUSTER`). The spec's header records the command that regenerates it.
Data goes to the output file (or stdout for `export` without `-o`); warnings and a one-line
summary go to stderr. Failures are `PlannerError`s rendered as diagnostics with their exit
code, never a traceback.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from ..commands.outputs import check_outputs
from ..errors import Diagnostic, Span, SpecError, UsageError, render_all
from ..render.diagnostics import guard
from ..units import format_bytes
from .atomic import write_text_atomic
from .workload import Imported, PlanDef

import_app = typer.Typer(help="Make a .plan spec from a model file.", no_args_is_help=True,
                         add_completion=False, pretty_exceptions_enable=False,
                         rich_markup_mode=None)
export_app = typer.Typer(help="Write a spec in another format.", no_args_is_help=True,
                         add_completion=False, pretty_exceptions_enable=False,
                         rich_markup_mode=None)
generate_app = typer.Typer(help="Generate analytic model graphs as .plan specs.",
                           no_args_is_help=True, add_completion=False,
                           pretty_exceptions_enable=False, rich_markup_mode=None)

ZOO_PREFIX = "zoo:"

# ---- shared options ---------------------------------------------------------------------

Output = Annotated[Path, typer.Option("-o", "--output", help="The .plan file to write.",
                                      dir_okay=False)]
Clusters = Annotated[list[Path] | None, typer.Option(
    "--cluster", help="A cluster file to import; adds a plan per cluster in it (repeatable).")]
Name = Annotated[str | None, typer.Option(
    "--name", help="The graph's name (default: from the model).")]
Memory = Annotated[str, typer.Option("--memory", help="Memory model of the plans: "
                                     "static | liveness.")]
Contention = Annotated[str, typer.Option("--contention", help="Contention model of the plans: "
                                         "none | link | device.")]
Dtype = Annotated[str, typer.Option("--dtype", help="Tensor dtype: fp32 | fp16.")]
Profile = Annotated[str, typer.Option("--device-profile", help="Reference device the roofline "
                                      "times are for: v100 | a100 | cpu.")]
Training = Annotated[bool, typer.Option("--training", help="Add a backward op per forward op, "
                                        "gradients and optimizer state.")]
Optimizer = Annotated[str, typer.Option("--optimizer", help="Optimizer state with --training: "
                                        "sgd | momentum | adam.")]


_diagnostics = guard


def _command(parts: list[str], options: dict[str, object]) -> str:
    """The canonical command line that regenerates a spec, for its header."""
    words = ["planner", *parts]
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = f"--{key.replace('_', '-')}" if len(key) > 1 else f"-{key}"
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            for v in value:
                words.extend([flag, str(v)])
        else:
            words.extend([flag, str(value)])
    return " ".join(shlex.quote(w) for w in words)


def _finish(result: Imported, output: Path, clusters: list[Path] | None, memory: str,
            contention: str) -> None:
    """Add cluster imports and plans, check the spec loads, write it, report on stderr."""
    import planner

    from ..model import CONTENTIONS, MEMORY_MODELS

    for key, value, options in (("memory", memory, MEMORY_MODELS),
                                ("contention", contention, CONTENTIONS)):
        if value not in options:
            raise UsageError(Diagnostic("E930", f"unknown --{key} `{value}`", None,
                                        ("one of: " + ", ".join(options),)))
    out_dir = output.resolve().parent
    for path in clusters or []:
        spec = planner.load(path)
        if not spec.clusters:
            raise UsageError(Diagnostic("E931", f"{path} defines no cluster",
                                        Span.start_of(str(path))))
        rel = os.path.relpath(path.resolve(), out_dir).replace(os.sep, "/")
        result.imports.append(rel)
        totals = result.workload.totals()
        need = totals["params_bytes"] + totals["output_bytes"]
        for cname, cluster in spec.clusters.items():
            name = f"{result.workload.name}_{cname}"
            largest = max((d.memory_bytes for d in cluster.devices), default=0)
            fits = ("more than one device: memory forces a split" if need > largest
                    else "one device, if placement chooses")
            note = (f"{len(cluster.devices)} devices, the largest {format_bytes(largest)}; "
                    f"params + outputs ({format_bytes(need)}) fit on {fits}.")
            result.plans.append(PlanDef(name, result.workload.name, cname, memory, contention,
                                        comment=note))
    totals = result.workload.totals()
    footprint = format_bytes(totals["params_bytes"] + totals["output_bytes"])
    result.header += (f"\nFootprint: params + outputs {footprint} in all (the static memory "
                      "model's minimum, before copies between devices).")
    text = result.to_spec()
    # the spec imports the clusters given, wherever they are: check it with a root that
    # holds them all (a later `planner check` of it may need `--root` the same way)
    root = os.path.commonpath([out_dir, *(p.resolve().parent for p in clusters or [])])
    try:
        planner.loads(text, str(output), base=out_dir, root=root)
    except SpecError as err:  # a bug in an importer: say which, do not write the file
        raise SpecError(Diagnostic("E932", "the generated spec does not load: "
                                   + "; ".join(d.message for d in err.diagnostics[:3]), None,
                                   ("this is a bug in planner's importer; please report it",)
                                   )) from None
    write_text_atomic(output, text)
    for w in result.warnings:
        sys.stderr.write(render_all([w]) + "\n")
    sys.stderr.write(f"wrote {output}: {len(result.workload.ops)} ops, "
                     f"{len(result.workload.edges)} edges, {len(result.plans)} plan(s)\n")


def _run(make: Callable[[], Imported], output: Path, clusters: list[Path] | None, memory: str,
         contention: str) -> None:
    with _diagnostics():
        check_outputs({"-o/--output": output})
        _finish(make(), output, clusters, memory, contention)


def resolve_model(model: str) -> Path:
    """`zoo:NAME` -> the model-zoo "light" file shipped inside the onnx package; else a path."""
    if not model.startswith(ZOO_PREFIX):
        return Path(model)
    from .onnx_import import zoo_path

    return zoo_path(model[len(ZOO_PREFIX):])


# ---- import -----------------------------------------------------------------------------


@import_app.command("onnx")
def import_onnx_command(
    model: Annotated[str, typer.Argument(help="An .onnx file, or zoo:NAME for a model-zoo "
                                         "'light' file inside the onnx package "
                                         "(zoo:resnet50, zoo:inception_v2, ...).")],
    output: Output,
    batch: Annotated[int | None, typer.Option(
        "--batch", help="Batch size (default: the model's own, 1 for the zoo files).")] = None,
    dtype: Dtype = "fp32",
    device_profile: Profile = "v100",
    training: Training = False,
    optimizer: Optimizer = "adam",
    name: Name = None,
    cluster: Clusters = None,
    memory: Memory = "static",
    contention: Contention = "link",
) -> None:
    """Import an ONNX model: one op per node, weights as params, roofline op times."""
    from .onnx_import import import_onnx

    command = _command(["import", "onnx", model], {
        "batch": batch, "dtype": dtype if dtype != "fp32" else None,
        "device_profile": device_profile if device_profile != "v100" else None,
        "training": training, "optimizer": optimizer if training and optimizer != "adam"
        else None, "name": name, "cluster": cluster, "memory": _nondefault(memory, "static"),
        "contention": _nondefault(contention, "link"), "o": output})

    def make() -> Imported:
        return import_onnx(resolve_model(model), batch, dtype, device_profile, training,
                           optimizer, name, command)

    _run(make, output, cluster, memory, contention)


@import_app.command("pipedream")
def import_pipedream_command(
    graph: Annotated[Path, typer.Argument(help="A PipeDream profile (graph.txt).")],
    output: Output,
    training: Training = False,
    optimizer: Optimizer = "adam",
    name: Name = None,
    cluster: Clusters = None,
    memory: Memory = "static",
    contention: Contention = "link",
) -> None:
    """Import a PipeDream profile, keeping its measured times."""
    from .pipedream import import_pipedream

    command = _command(["import", "pipedream", str(graph)], {
        "training": training, "optimizer": optimizer if training and optimizer != "adam"
        else None, "name": name, "cluster": cluster, "memory": _nondefault(memory, "static"),
        "contention": _nondefault(contention, "link"), "o": output})
    _run(lambda: import_pipedream(graph, training, optimizer, name, command), output, cluster,
         memory, contention)


@import_app.command("json")
def import_json_command(
    file: Annotated[Path, typer.Argument(help="A planner-graph JSON file (or a "
                                         "dnn-partitioning graph).")],
    output: Output,
    name: Name = None,
    cluster: Clusters = None,
    memory: Memory = "static",
    contention: Contention = "link",
) -> None:
    """Import the JSON interchange format (schema: planner/io/interchange.schema.json)."""
    from .interchange import import_json

    command = _command(["import", "json", str(file)], {
        "name": name, "cluster": cluster, "memory": _nondefault(memory, "static"),
        "contention": _nondefault(contention, "link"), "o": output})
    _run(lambda: import_json(file, name, command), output, cluster, memory, contention)


def _nondefault(value: str, default: str) -> str | None:
    return None if value == default else value


# ---- export -----------------------------------------------------------------------------


@export_app.command("json")
def export_json_command(
    spec: Annotated[Path, typer.Argument(help="The .plan spec to export.")],
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="Write here instead of stdout.", dir_okay=False)] = None,
    plan: Annotated[str | None, typer.Option(
        "--plan", help="Export this plan (its graph, cluster and pins).")] = None,
    graph: Annotated[str | None, typer.Option(
        "--graph", help="Export this graph alone.")] = None,
) -> None:
    """Export a graph (and its plan's cluster) as planner-graph JSON."""
    import planner

    from .interchange import dumps, export_spec

    with _diagnostics():
        check_outputs({"-o/--output": output})
        text = dumps(export_spec(planner.load(spec), plan, graph))
        if output is None:
            sys.stdout.write(text)
        else:
            write_text_atomic(output, text)


# ---- generate ---------------------------------------------------------------------------


@generate_app.command("transformer")
def generate_transformer_command(
    output: Output,
    arch: Annotated[str, typer.Option("--arch", help="gpt (decoder stack) | encdec.")] = "gpt",
    layers: Annotated[int, typer.Option("--layers", help="Layers (encoder layers for "
                                        "encdec).")] = 12,
    decoder_layers: Annotated[int | None, typer.Option(
        "--decoder-layers", help="Decoder layers of encdec (default: --layers).")] = None,
    hidden: Annotated[int, typer.Option("--hidden", help="Hidden size.")] = 768,
    heads: Annotated[int, typer.Option("--heads", help="Attention heads.")] = 12,
    ffn: Annotated[int | None, typer.Option(
        "--ffn", help="Feed-forward size (default 4 x hidden).")] = None,
    seq: Annotated[int, typer.Option("--seq", help="Sequence length.")] = 1024,
    tgt_seq: Annotated[int | None, typer.Option(
        "--tgt-seq", help="Target length of encdec (default: --seq).")] = None,
    batch: Annotated[int, typer.Option("--batch", help="Batch size.")] = 8,
    vocab: Annotated[int, typer.Option("--vocab", help="Vocabulary size.")] = 50257,
    dtype: Dtype = "fp32",
    device_profile: Profile = "v100",
    training: Training = False,
    optimizer: Optimizer = "adam",
    name: Name = None,
    cluster: Clusters = None,
    memory: Memory = "static",
    contention: Contention = "link",
) -> None:
    """A Transformer (GPT-style or encoder-decoder) as an op graph."""
    from ..generate.transformer import generate

    options: dict[str, object] = {
        "arch": _nondefault(arch, "gpt"), "layers": layers, "decoder_layers": decoder_layers,
        "hidden": hidden, "heads": heads, "ffn": ffn, "seq": seq, "tgt_seq": tgt_seq,
        "batch": batch, "vocab": vocab, "dtype": _nondefault(dtype, "fp32"),
        "device_profile": _nondefault(device_profile, "v100"), "training": training,
        "optimizer": optimizer if training and optimizer != "adam" else None, "name": name,
        "cluster": cluster, "memory": _nondefault(memory, "static"),
        "contention": _nondefault(contention, "link"), "o": output}
    command = _command(["generate", "transformer"], options)
    _run(lambda: generate(arch, layers, hidden, heads, ffn, seq, batch, vocab, decoder_layers,
                          tgt_seq, dtype, device_profile, training, optimizer, name, command),
         output, cluster, memory, contention)


@generate_app.command("gnmt")
def generate_gnmt_command(
    output: Output,
    layers: Annotated[int, typer.Option("--layers", help="LSTM layers on each side "
                                        "(GNMT: 4 or 8).")] = 8,
    hidden: Annotated[int, typer.Option("--hidden", help="Hidden (and embedding) size.")] = 1024,
    vocab: Annotated[int, typer.Option("--vocab", help="Vocabulary size.")] = 32000,
    seq: Annotated[int, typer.Option("--seq", help="Source steps unrolled.")] = 50,
    tgt_seq: Annotated[int | None, typer.Option(
        "--tgt-seq", help="Target steps unrolled (default: --seq).")] = None,
    batch: Annotated[int, typer.Option("--batch", help="Batch size.")] = 128,
    dtype: Dtype = "fp32",
    device_profile: Profile = "v100",
    training: Training = False,
    optimizer: Optimizer = "adam",
    name: Name = None,
    cluster: Clusters = None,
    memory: Memory = "static",
    contention: Contention = "link",
) -> None:
    """GNMT (stacked LSTMs with attention), unrolled over the sequence."""
    from ..generate.gnmt import generate

    options: dict[str, object] = {
        "layers": layers, "hidden": hidden, "vocab": vocab, "seq": seq, "tgt_seq": tgt_seq,
        "batch": batch, "dtype": _nondefault(dtype, "fp32"),
        "device_profile": _nondefault(device_profile, "v100"), "training": training,
        "optimizer": optimizer if training and optimizer != "adam" else None, "name": name,
        "cluster": cluster, "memory": _nondefault(memory, "static"),
        "contention": _nondefault(contention, "link"), "o": output}
    command = _command(["generate", "gnmt"], options)
    _run(lambda: generate(layers, hidden, vocab, seq, tgt_seq, batch, dtype, device_profile,
                          training, optimizer, name, command),
         output, cluster, memory, contention)
