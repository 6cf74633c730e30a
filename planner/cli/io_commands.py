"""`planner import|generate`: typer sub-applications over `planner.io` and
`planner.generate` (mounted by `planner.cli` in `LAZY_COMMANDS`; `export` is
`export_commands`).

Every command that makes a spec writes it atomically to `-o FILE`; `--cluster FILE`
(repeatable) imports a cluster file into it and adds one plan per cluster defined there
(named `GRAPH_CLUSTER`). The import is relative to the spec; a cluster file outside the
root that later commands give the spec (its git repository, else its folder), whose import
they would refuse, is copied in instead, exactly, with a comment that says so. The
spec's header records the command that regenerates it. `--memory` and `--contention` set
the plans made for `--cluster` and the plans that `import json`'s file carries, where the
file does not give them; contradicting one it gives is E930.
Data goes to the output file (or stdout for `export` without `-o`); warnings and a one-line
summary go to stderr. Failures are `PlannerError`s rendered as diagnostics with their exit
code, never a traceback.
"""

from __future__ import annotations

import functools
import inspect
import os
import shlex
import sys
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import limits
from ..errors import Diagnostic, Span, SpecError, UsageError, render_all
from ..files import Input, check_outputs, output_path, write_text_atomic
from ..generate import gnmt, transformer
from ..io.interchange import import_json
from ..io.onnx_import import import_onnx, zoo_path
from ..io.pipedream import import_pipedream
from ..io.times import overlay_times, read_times
from ..io.torch_import import import_torch, target_file
from ..model import CONTENTIONS, MEMORY_MODELS, Spec
from ..roots import default_root, display_path, outside_root
from ..spec.load import load_path, load_text
from ..spec.lower.attrs import QUANTITY_CODES
from ..spec.names import name_problem
from ..units import format_bytes, format_bytes_of
from ..workload import Imported, PlanDef, plan_origin, render_cluster
from .clashes import check_clashes, shared_import, two_clusters
from .guard import guard
from .ignored import CONTEXT, in_effect, warn_ignored
from .options import CaptureOption, ExampleOption, InputOption, LimitOption

import_app = typer.Typer(help="Make a .plan spec from a model file.", no_args_is_help=True,
                         add_completion=False, pretty_exceptions_enable=False,
                         rich_markup_mode=None)
generate_app = typer.Typer(help="Generate analytic model graphs as .plan specs.",
                           no_args_is_help=True, add_completion=False,
                           pretty_exceptions_enable=False, rich_markup_mode=None)

ZOO_PREFIX = "zoo:"

# ---- shared options ---------------------------------------------------------------------

# no click `dir_okay` (no code, no hint): `check_outputs` says E604, the readers E002
Output = Annotated[Path, typer.Option("-o", "--output", parser=output_path,
                                      help="The .plan file to write.")]
Clusters = Annotated[list[Path] | None, typer.Option(
    "--cluster", help="A cluster file to import; adds a plan per cluster in it (repeatable).")]
Name = Annotated[str | None, typer.Option(
    "--name", help="The graph's name (default: from the model).")]
Memory = Annotated[str | None, typer.Option(
    "--memory", help="Memory model of the plans: static | liveness (default: liveness for "
    "a training graph, whose activations are freed by their backward ops; else static).")]
Contention = Annotated[str | None, typer.Option(
    "--contention", help="Contention model of the plans: none | link | device (default: "
    "link).")]
Dtype = Annotated[str, typer.Option("--dtype", help="Tensor dtype: fp32 | fp16.")]
Profile = Annotated[str, typer.Option("--device-profile", help="Reference device the roofline "
                                      "times are for: v100 | a100 | cpu.")]
Training = Annotated[bool, typer.Option("--training", help="Add a backward op per forward op, "
                                        "gradients and optimizer state.")]
Optimizer = Annotated[str, typer.Option("--optimizer", help="Optimizer state with --training: "
                                        "sgd | momentum | adam.")]
GranularityOption = Annotated[str, typer.Option(
    "--granularity", help="One op per graph node (op), or per module call (module, or "
    "module:DEPTH with the model's children at depth 1), so that cuts fall on modules.")]
Times = Annotated[Path | None, typer.Option(
    "--times", help="Measured op times to lay over the estimates: CSV `name,seconds`, JSON "
    "{name: seconds}, or a torch.profiler Chrome trace.")]
TimesKind = Annotated[str | None, typer.Option(
    "--times-kind", help="Write --times as `time[KIND]` (for devices of that kind) instead "
    "of `time`.")]


@dataclass(frozen=True)
class SpecOptions:
    """The options shared by the commands that make a spec, each default stated once here.
    A command lists those it takes with `_with_spec_options`; the rest keep their defaults."""

    dtype: Dtype = "fp32"
    device_profile: Profile = "v100"
    training: Training = False
    optimizer: Optimizer = "adam"
    name: Name = None
    cluster: Clusters = None
    memory: Memory = None
    contention: Contention = None
    times: Times = None
    times_kind: TimesKind = None
    limit: LimitOption = None

    def recorded(self) -> dict[str, object]:
        """The options as the spec's header records them: defaults left out, and those
        ignored without another (`--optimizer` without `--training`, `--times-kind`
        without `--times`: W927) too, as they made nothing of the spec."""
        kept = in_effect({f.name: getattr(self, f.name) for f in fields(self)})
        return {f.name: kept[f.name] for f in fields(self)
                if f.name in kept and kept[f.name] not in (f.default, IMPLIED.get(f.name))}


#: the value a `SpecOptions` field of default None stands for wherever it applies alike
IMPLIED = {"contention": "link"}

#: `SpecOptions`' fields in groups that commands take whole, in their `--help` order
ROOFLINE_OPTIONS = ("dtype", "device_profile")
TRAINING_OPTIONS = ("training", "optimizer")
PLAN_OPTIONS = ("name", "cluster", "memory", "contention", "limit")
TIMES_OPTIONS = ("times", "times_kind")


def _with_spec_options(*groups: tuple[str, ...]
                       ) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A command that declares `*, options: SpecOptions` gets, in that parameter's place, a
    typer option per field of `groups`, and is called with them as one `SpecOptions`.

    typer reads a command's options from `inspect.signature(eval_str=True)` and
    `typing.get_type_hints`, hence both `__signature__` and `__annotations__`."""
    names = [name for group in groups for name in group]
    hints = typing.get_type_hints(SpecOptions, include_extras=True)
    defaults = {f.name: f.default for f in fields(SpecOptions)}
    shared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                default=defaults[name], annotation=hints[name])
              for name in names]

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        own = inspect.signature(command, eval_str=True)
        params = [p for param in own.parameters.values()
                  for p in (shared if param.name == "options" else [param])]
        params.append(inspect.Parameter(CONTEXT, inspect.Parameter.KEYWORD_ONLY,
                                        annotation=typer.Context))  # typer passes it

        @functools.wraps(command)
        def with_options(**given: Any) -> None:
            values = {name: given.pop(name) for name in names}
            # the command's own options too: `import torch`'s --warmup needs its --measure
            warn_ignored(given.pop(CONTEXT), {**given, **values})
            command(**given, options=SpecOptions(**values))

        with_options.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        with_options.__annotations__ = {p.name: p.annotation for p in params}
        with_options.__annotations__["return"] = own.return_annotation
        return with_options

    return decorate


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


def _finish(result: Imported, output: Path, clusters: list[tuple[Path, Spec]],
            memory: str | None, contention: str | None,
            source: str | os.PathLike[str] | None = None) -> None:
    """Add cluster imports and plans, check the spec loads, write it, report on stderr.

    Without `--memory`, a training graph's plans use `liveness` (those of `import json`'s
    file too, unless it gives `memory`): static accounting holds
    every tensor to the end of the step, about twice a training step's real peak (the
    forward activations, held until their backward ops, and a few gradients)."""
    check_clashes(result, clusters, source)
    for key, value, options in (("memory", memory, MEMORY_MODELS),
                                ("contention", contention, CONTENTIONS)):
        if value is not None and value not in options:
            raise UsageError(Diagnostic("E930", f"unknown --{key} `{value}`", None,
                                        ("one of: " + ", ".join(options),)))
        for plan in result.plans:  # the input file's own (JSON) plans: were left as they were
            _set_file_plan(plan, key, value, source)
    if memory is None:  # the file's plans that give none too (were left static)
        training = any(op.backward_of for op in result.workload.ops)
        memory = "liveness" if training else "static"
        for plan in result.plans:
            plan.memory = plan.memory if "memory" in plan.given else memory
    contention = contention or IMPLIED["contention"]
    # the root that a later `planner solve OUTPUT` (or check, simulate) gives the spec: a file
    # outside it, whose import the loader refuses, is copied in instead
    root = default_root(output)
    copied = _add_clusters(result, clusters, output.resolve().parent, root, memory, contention)
    totals = result.workload.totals()
    footprint = format_bytes(totals["params_bytes"] + totals["output_bytes"])
    result.header += (f"\nFootprint: params + outputs {footprint} in all (the static memory "
                      "model's minimum, before copies between devices).")
    _graph_within_limits(len(result.workload.ops), len(result.workload.edges))
    try:  # its text passes through the formatter, which may refuse it only by a bug
        text = result.to_spec()
    except SpecError as err:
        raise _not_loading(err, output, source) from None
    _within_limits("file", ("E007", "file_bytes", "bytes", len(text.encode())))
    try:  # as the next command will load it: its imports inside its default root
        load_text(text, str(output), output.resolve().parent, root)
    except SpecError as err:
        raise _not_loading(err, output, source, text, result.plans) from None
    write_text_atomic(output, text)
    for w in result.warnings:
        sys.stderr.write(render_all([w]) + "\n")
    sys.stderr.write(f"wrote {output}: {len(result.workload.ops)} ops, "
                     f"{len(result.workload.edges)} edges, {len(result.plans)} plan(s)\n")
    for line in copied:
        sys.stderr.write(line + "\n")


def _set_file_plan(plan: PlanDef, key: str, value: str | None,
                   source: str | os.PathLike[str] | None) -> None:
    """Set `--memory` or `--contention` (`key`, its `value`; None: not given) on a plan of
    the input file: E930 where the file gives that plan another value."""
    if value is None or getattr(plan, key) == value:
        return
    if key in plan.given:
        raise UsageError(Diagnostic(
            "E930", f"--{key} {value} contradicts plan `{plan.name}` of {source}, whose "
            f"{key} is {getattr(plan, key)}", None,
            (f'leave out --{key}, or change the plan\'s "{key}" in the file',)))
    setattr(plan, key, value)


def _not_loading(err: SpecError, output: Path, source: str | os.PathLike[str] | None,
                 text: str = "", plans: Sequence[PlanDef] = ()) -> SpecError:
    """Why the generated spec does not load. A rule of the language that the input's values
    break together (a tie larger than an op's params, colocated ops pinned apart, an op
    with only FLOPs and a `--cluster` device with no FLOP rate, ...) is the input's: its
    own code and message, at the input file (the field of a JSON file's plan that gives the
    line of `text` reported, `workload.plan_origin`, else the file's start; `text` is never
    written). A file or syntax error (E001-E010, E1xx) can only be a bug in the importer,
    which writes the text: E932, with no location in a text the user never sees."""
    diagnostics = err.diagnostics
    if any(_writer_bug(d.code) for d in diagnostics):
        return SpecError(Diagnostic("E932", "the generated spec does not load: "
                                    + "; ".join(d.message for d in diagnostics[:3]), None,
                                    ("this is a bug in planner's importer; please report it",)))
    at = Span.start_of(str(source)) if source is not None and str(source).endswith(
        ".json") else None
    given = f"the values of {source}" if source is not None else "the options given"
    lead = (f"the spec made from {given} would break this rule of the .plan language; "
            "correct them there")
    unwritten = str(output)  # places in the spec's text, never written: the input instead
    moved = []
    for d in diagnostics:
        unseen = d.span is not None and d.span.file == unwritten
        op = (_op_at(text, d.span.line) if unseen and d.span is not None
              and d.code in QUANTITY_CODES else None)
        moved.append(replace(
            d, message=d.message if op is None else f"{d.message} (op {op})",
            span=at if d.span is None else d.span if not unseen
            else plan_origin(text, d.span.line, plans) or at,
            hints=(lead, *d.hints), notes=tuple(n for n in d.notes if n[1].file != unwritten)))
    # without the text's places, a name's every mention (its op, each edge) read the same:
    # `import onnx` printed one E261 three times
    return SpecError(list(dict.fromkeys(moved)))


def _op_at(text: str, line: int) -> str | None:
    """The op that line `line` (1-based) of the generated spec `text` declares, as written
    there (`op x { ... }` on one line), else None: what a value's error names, its place
    in a text the user never sees being dropped."""
    lines = text.splitlines()
    words = lines[line - 1].strip() if 1 <= line <= len(lines) else ""
    return f"`{words[3:].split(' {', 1)[0]}`" if words.startswith("op ") else None


def _writer_bug(code: str) -> bool:
    """Whether a diagnostic of a generated spec is the writer's: a file or syntax error."""
    return code.startswith("E1") or "E001" <= code <= "E010"


def _check_name(name: str | None, option: str = "--name") -> None:
    """E930 for a `--name` (or `--times-kind`) that the spec cannot take as a name (empty,
    a control or bidi character, ...: `names.name_problem`), before the import's work
    (before, a kind was written, and the spec made of it refused at the input file)."""
    problem = None if name is None else name_problem(name)
    if problem is not None:
        message, hints = problem
        raise UsageError(Diagnostic("E930", f"{option}: {message}", None, hints))


def _graph_within_limits(ops: int, edges: int) -> None:
    """E011 or E012 for a graph of `ops` ops and `edges` edges over the `ops` or `edges`
    limit; the generators call it with the counts of their options, before building."""
    _within_limits("graph", ("E011", "ops", "ops", ops), ("E012", "edges", "edges", edges))


def _within_limits(what: str, *checks: tuple[str, str, str, int]) -> None:
    """Each check `(code, limit name, unit, count)` of the spec made (its graph's ops and
    edges, E011 and E012; its file's bytes, E007): refused where it is over a limit that a
    command loading it applies, before the text is written (minutes, for a graph of a
    million ops), with the `--limit` that lets it through here and on those commands."""
    active = limits.active()
    for code, name, unit, count in checks:
        limit = getattr(active, name)
        if count > limit:
            flag = name.replace("_", "-")
            raise SpecError(Diagnostic(
                code, f"the spec would hold a {what} of {count:_} {unit}, more than the "
                f"`{flag}` limit ({limit:_}) of the commands that load it", None,
                (limits.raise_hint(flag, count, lead="raise it here and on those commands "
                                   "with"),)))


def _read_clusters(paths: list[Path] | None) -> tuple[list[tuple[Path, Spec]], list[str]]:
    """Each `--cluster` file loaded, before the import's work (a capture of a model takes
    seconds): a mistake in one is reported at once. E931 for a file that defines none.
    With the files they read (themselves and their imports)."""
    out = []
    read: list[str] = []
    seen: dict[str, tuple[Path, Span | None, list[str]]] = {}  # cluster -> its file, place, text
    for path in paths or []:
        spec = (loaded := load_path(path)).spec
        if not spec.clusters:
            raise UsageError(Diagnostic("E931", f"{path} defines no cluster",
                                        Span.start_of(str(path))))
        for cname, cluster in spec.clusters.items():  # was E201 at the input file
            given = (path, loaded.locations.clusters.get(cname), render_cluster(cluster, True))
            first = seen.setdefault(cname, given)
            if first is not given and not shared_import(first, given):
                raise two_clusters(cname, first, given)
        out.append((path, spec))
        read.extend(loaded.sources)
    return out, read


def _add_clusters(result: Imported, clusters: list[tuple[Path, Spec]], out_dir: Path,
                  root: Path, memory: str, contention: str) -> list[str]:
    """Each `--cluster` file's clusters, and a plan per cluster, into `result`: imported
    (relative to the output's folder) when the file lies inside `root`, the output's
    default root, else copied in, since a later command would refuse the import.
    Returns a line for stderr per file copied."""
    copied: list[str] = []
    done: set[str] = set()
    for path, spec in clusters:
        # a cluster two files import from a third (`shared_import`) has one plan
        fresh = {c: k for c, k in spec.clusters.items() if c not in done}
        target = path.resolve()
        rel = (os.path.relpath(target, out_dir).replace(os.sep, "/")
               if not outside_root(target, root) else None)
        if rel is not None:
            result.imports.append(rel)
        else:
            why = (f"outside this spec's root ({display_path(root)}: its git repository, "
                   "else its folder), where an import of it is refused")
            names = ", ".join(f"`{c}`" for c in spec.clusters)
            copied.append(f"copied cluster(s) {names} from {path} into the spec, {why}; to "
                          "import it instead, keep the cluster file inside that root")
            for cluster in fresh.values():
                result.clusters.append(render_cluster(
                    cluster, exact=True, comment=f"Copied, exactly, from {path}, {why}."))
        done.update(spec.clusters)
        totals = result.workload.totals()
        need = totals["params_bytes"] + totals["output_bytes"]
        for cname, cluster in fresh.items():
            name = f"{result.workload.name}_{cname}"
            largest = max((d.memory_bytes for d in cluster.devices), default=0)
            fits = ("more than one device: memory forces a split" if need > largest
                    else "one device, if placement chooses")
            if memory == "liveness" and need > largest:
                fits = ("more than one device by static accounting; `memory liveness` "
                        "checks the lower peak of tensors freed after their last use")
            needs, holds = format_bytes_of(need, largest)
            note = (f"{len(cluster.devices)} devices, the largest {holds}; "
                    f"params + outputs ({needs}) fit on {fits}.")
            result.plans.append(PlanDef(name, result.workload.name, cname, memory, contention,
                                        comment=note))
    return copied


def _run(make: Callable[[], Imported], output: Path, options: SpecOptions,
         source: Input = ("", None)) -> None:
    """Make the spec and write it; `source`: the input file it is made from, if any."""
    with _diagnostics():
        check_outputs({"-o/--output": output}, [
            source, *(("--cluster", c) for c in options.cluster or []),
            ("--times", options.times)])
        _check_name(options.name)
        _check_name(options.times_kind, "--times-kind")
        clusters, imported = _read_clusters(options.cluster)
        # again, now that the cluster files are read: what they import is an input too
        check_outputs({"-o/--output": output}, [("--cluster's import", f) for f in imported])
        times = None if options.times is None else read_times(options.times)
        result = make()
        if options.times is not None and times is not None:  # read before the work
            _overlay(result, options.times, times, options.times_kind)
        _finish(result, output, clusters, options.memory, options.contention, source[1])


def _overlay(result: Imported, times: Path, read: dict[str, float], kind: str | None) -> None:
    """Lay the measured times `read` from `times` over `result`; say so in its header."""
    hit, warnings = overlay_times(result.workload, read, str(times), kind)
    result.warnings.extend(warnings)
    where = "time" if kind is None else f"time[{kind}]"
    result.header += (f"\n{where} of {hit} of {len(result.workload.ops)} ops measured, "
                      f"from {times.name} (the others keep the estimate above).")


def resolve_model(model: str) -> Path:
    """`zoo:NAME` -> the model-zoo "light" file shipped inside the onnx package; else a path."""
    if not model.startswith(ZOO_PREFIX):
        return Path(model)
    return zoo_path(model[len(ZOO_PREFIX):])


# ---- import -----------------------------------------------------------------------------


@import_app.command("onnx")
@_with_spec_options(ROOFLINE_OPTIONS, TRAINING_OPTIONS, PLAN_OPTIONS, TIMES_OPTIONS)
def import_onnx_command(
    model: Annotated[str, typer.Argument(help="An .onnx file, or zoo:NAME for a model-zoo "
                                         "'light' file inside the onnx package "
                                         "(zoo:resnet50, zoo:inception_v2, ...).")],
    output: Output,
    batch: Annotated[int | None, typer.Option(
        "--batch", help="Batch size (default: the model's own, 1 for the zoo files).")] = None,
    *,
    options: SpecOptions,
) -> None:
    """Import an ONNX model: one op per node, weights as params, roofline op times."""
    command = _command(["import", "onnx", model],
                       {"batch": batch, **options.recorded(), "o": output})

    def make() -> Imported:
        return import_onnx(resolve_model(model), batch, options.dtype, options.device_profile,
                           options.training, options.optimizer, options.name, command)

    _run(make, output, options, ("MODEL", None if model.startswith(ZOO_PREFIX) else model))


@import_app.command("pipedream")
@_with_spec_options(TRAINING_OPTIONS, PLAN_OPTIONS, TIMES_OPTIONS)
def import_pipedream_command(
    graph: Annotated[Path, typer.Argument(help="A PipeDream profile (graph.txt).")],
    output: Output,
    *,
    options: SpecOptions,
) -> None:
    """Import a PipeDream profile, keeping its measured times."""
    command = _command(["import", "pipedream", str(graph)], {**options.recorded(), "o": output})
    _run(lambda: import_pipedream(graph, options.training, options.optimizer, options.name,
                                  command), output, options, ("GRAPH", graph))


@import_app.command("json")
@_with_spec_options(PLAN_OPTIONS, TIMES_OPTIONS)
def import_json_command(
    file: Annotated[Path, typer.Argument(help="A planner-graph JSON file (or a "
                                         "dnn-partitioning graph).")],
    output: Output,
    *,
    options: SpecOptions,
) -> None:
    """Import the JSON interchange format (schema: planner/io/interchange.schema.json)."""
    command = _command(["import", "json", str(file)], {**options.recorded(), "o": output})
    _run(lambda: import_json(file, options.name, command), output, options, ("FILE", file))


@import_app.command("torch")
@_with_spec_options(TRAINING_OPTIONS, PLAN_OPTIONS, TIMES_OPTIONS)
def import_torch_command(
    model: Annotated[str, typer.Argument(help="MODULE:NAME or FILE.py:NAME (NAME: an "
                                         "nn.Module or a function returning one; default "
                                         "`model`).")],
    output: Output,
    inputs: InputOption = None,
    example: ExampleOption = None,
    # its own, not ROOFLINE_OPTIONS: `--help` lists it here, with the measuring options
    device_profile: Profile = SpecOptions.device_profile,
    measure: Annotated[str | None, typer.Option(
        "--measure", help="Time every op on this torch device (cpu, cuda:0) and write "
        "`time[KIND]`.")] = None,
    kind: Annotated[str | None, typer.Option(
        "--kind", help="The device kind measured times are for (default: cpu, or gpu for "
        "cuda).")] = None,
    warmup: Annotated[int, typer.Option("--warmup", help="Untimed runs before measuring.")
                      ] = 3,
    repeat: Annotated[int, typer.Option("--repeat", help="Timed runs; each op's median is "
                                        "kept.")] = 10,
    threads: Annotated[int | None, typer.Option(
        "--threads", help="torch.set_num_threads while measuring (default: torch's).")] = None,
    capture: CaptureOption = "auto",
    granularity: GranularityOption = "op",
    *,
    options: SpecOptions,
) -> None:
    """Import a PyTorch model (torch.export, or torch.fx): one op per node or per module
    call, module paths as names."""
    command = _command(["import", "torch", model], in_effect({
        "input": inputs, "example": example, "capture": _nondefault(capture, "auto"),
        "granularity": _nondefault(granularity, "op"),
        "device_profile": _nondefault(device_profile, SpecOptions.device_profile),
        "measure": measure, "kind": kind, "warmup": _nondefault(warmup, 3),
        "repeat": _nondefault(repeat, 10), "threads": threads,  # all four need --measure
        **options.recorded(), "o": output}))

    def make() -> Imported:
        return import_torch(model, inputs or (), example, device_profile, measure, kind,
                            warmup, repeat, options.training, options.optimizer, options.name,
                            command, threads, capture, granularity)

    _run(make, output, options, ("MODEL", target_file(model)))


def _nondefault(value: object, default: object) -> object | None:
    return None if value == default else value


# ---- generate ---------------------------------------------------------------------------


@generate_app.command("transformer")
@_with_spec_options(ROOFLINE_OPTIONS, TRAINING_OPTIONS, PLAN_OPTIONS)
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
    *,
    options: SpecOptions,
) -> None:
    """A Transformer (GPT-style or encoder-decoder) as an op graph."""
    given: dict[str, object] = {
        "arch": _nondefault(arch, "gpt"), "layers": layers, "decoder_layers": decoder_layers,
        "hidden": hidden, "heads": heads, "ffn": ffn, "seq": seq, "tgt_seq": tgt_seq,
        "batch": batch, "vocab": vocab, **options.recorded(), "o": output}
    command = _command(["generate", "transformer"], given)
    _run(lambda: transformer.generate(arch, layers, hidden, heads, ffn, seq, batch, vocab,
                                      decoder_layers, tgt_seq, options.dtype,
                                      options.device_profile, options.training,
                                      options.optimizer, options.name, command,
                                      _graph_within_limits),
         output, options)


@generate_app.command("gnmt")
@_with_spec_options(ROOFLINE_OPTIONS, TRAINING_OPTIONS, PLAN_OPTIONS)
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
    *,
    options: SpecOptions,
) -> None:
    """GNMT (stacked LSTMs with attention), unrolled over the sequence."""
    given: dict[str, object] = {
        "layers": layers, "hidden": hidden, "vocab": vocab, "seq": seq, "tgt_seq": tgt_seq,
        "batch": batch, **options.recorded(), "o": output}
    command = _command(["generate", "gnmt"], given)
    _run(lambda: gnmt.generate(layers, hidden, vocab, seq, tgt_seq, batch, options.dtype,
                               options.device_profile, options.training, options.optimizer,
                               options.name, command, _graph_within_limits),
         output, options)
