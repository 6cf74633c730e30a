"""`planner export json|torch`: a spec in the interchange format, or a plan handed to
PyTorch (placed modules, an accelerate device_map, a `torch.distributed.pipelining`
pipeline and its script); mounted by `planner.cli` in `LAZY_COMMANDS`.

Data goes to `-o FILE` (written atomically) or stdout; warnings and a one-line summary go
to stderr. Failures are `PlannerError`s rendered as diagnostics with their exit code.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import Diagnostic, Severity, Span, SpecError, UsageError, render_all
from ..files import check_outputs, output_path, write_text_atomic, write_texts_atomic
from ..io.codegen import compiled
from ..io.interchange import dumps, export_spec
from ..io.torch_device_map import Alternative
from ..io.torch_device_map import nearest as nearest_plan
from ..io.torch_export import (
    Placed,
    apply_plan,
    check_params,
    export_document,
    parse_device_map,
    torch_devices,
)
from ..io.torch_import import (
    Example,
    Traced,
    example_inputs,
    forward_ops,
    load_target,
    regroup,
    target_file,
    trace,
)
from ..io.torch_pipeline import (
    TorchPipeline,
    pipeline_document,
    pipeline_error,
    pipeline_export,
    summary,
)
from ..io.torch_pipeline_script import pipeline_script
from ..model import Problem
from ..plan import Plan
from ..roots import display_path, resolved
from ..spec.load import load_path
from . import _load
from .given import plan_named, read_placed
from .guard import guard
from .options import CaptureOption, ExampleOption, InputOption, LimitOption, RootOption
from .runs import check_imports_kept, problem_of

#: how `export` writes to stdout: the hint where `-o -` is refused
_STDOUT = "leave out -o to write to standard output"

export_app = typer.Typer(help="Write a spec in another format.", no_args_is_help=True,
                         add_completion=False, pretty_exceptions_enable=False,
                         rich_markup_mode=None)


@export_app.command("json")
def export_json_command(
    spec: Annotated[Path, typer.Argument(help="The .plan spec to export.")],
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", parser=output_path, help="Write here instead of stdout.")] = None,
    plan: Annotated[str | None, typer.Option(
        "--plan", help="Export this plan (its graph, cluster and settings).")] = None,
    graph: Annotated[str | None, typer.Option(
        "--graph", help="Export this graph alone.")] = None,
    limit: LimitOption = None,
    root: RootOption = None,
) -> None:
    """Export a graph (and its plan's cluster) as planner-graph JSON."""
    with guard():
        check_outputs({"-o/--output": output}, [("SPEC", spec)], stdout=_STDOUT)
        loaded = load_path(spec)
        check_imports_kept({"-o/--output": output}, loaded)
        try:
            text = dumps(export_spec(loaded.spec, plan, graph))
        except UsageError as err:
            if graph is not None or not loaded.spec.plans:
                raise
            # a plan to choose (E925): placed where E602 places one, at the plans declared
            places, first = loaded.plan_places(plan), err.diagnostics[0]
            raise UsageError(dataclasses.replace(
                first, span=places.span, hints=first.hints or places.hints,
                notes=places.notes)) from None
        if output is None:
            sys.stdout.write(text)
        else:
            write_text_atomic(output, text)


@export_app.command("torch")
def export_torch_command(
    spec: Annotated[Path, typer.Argument(help="The spec `planner import torch` wrote.")],
    model: Annotated[str, typer.Argument(help="The model, as given to `import torch`.")],
    placement: Annotated[Path, typer.Option(
        "--placement", help="The plan JSON (`planner solve --out`) to apply.")],
    plan: Annotated[str | None, typer.Option(
        "--plan", help="The spec's plan the placement is for (default: the one the "
        "--placement file names, or the spec's only plan).")] = None,
    inputs: InputOption = None,
    example: ExampleOption = None,
    device_map: Annotated[str | None, typer.Option(
        "--device-map", help="SPEC_DEVICE=TORCH_DEVICE,... (default: by kind, gpu3 -> "
        "cuda:3, cpu0 -> cpu).")] = None,
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", parser=output_path,
        help="Write the JSON here instead of stdout.")] = None,
    code: Annotated[Path | None, typer.Option(
        "--code", parser=output_path,
        help="Also write the placed model's forward() source here (with "
        "--pipeline: a script that runs one pipelined step).")] = None,
    pipeline: Annotated[bool, typer.Option(
        "--pipeline", help="Write what torch.distributed.pipelining reads: the split_spec, "
        "the stages' devices, the schedule and the micro-batches of an `objective pipeline` "
        "plan.")] = False,
    nearest: Annotated[bool, typer.Option(
        "--nearest", help="When the plan cuts outside module boundaries, export the nearest "
        "plan that does not (with --pipeline: the nearest split; else the nearest "
        "module-level plan, whose device_map accelerate runs).")] = False,
    ranks: Annotated[int | None, typer.Option(
        "--ranks", min=1, help="With --pipeline: run the plan's stages on this many "
        "processes where the split allows (gpipe, 1f1b: consecutive stages merge; "
        "interleaved: the stages loop over the ranks). Default: a rank per planned "
        "device.")] = None,
    capture: CaptureOption = "auto",
    granularity: Annotated[str | None, typer.Option(
        "--granularity", help="As given to `import torch` (default: the one whose ops are "
        "the spec's).")] = None,
    limit: LimitOption = None,
    root: RootOption = None,
) -> None:
    """Apply a plan to a PyTorch model: devices, `.to()` copies, an accelerate device_map;
    with --pipeline, the split, schedule and a script for torch.distributed.pipelining."""
    with guard():
        check_outputs({"-o/--output": output, "--code": code},
                      [("SPEC", spec), ("--placement", placement), ("MODEL", target_file(model))],
                      stdout=_STDOUT)
        if ranks is not None and not pipeline:
            raise UsageError(Diagnostic("E640", "--ranks applies only with --pipeline", None,
                                        ("add --pipeline to export the plan's pipeline",)))
        loaded = _load(spec)
        check_imports_kept({"-o/--output": output, "--code": code}, loaded)
        # a spec of several plans: the one the placement file names, as `simulate` reads it
        plan, parsed = plan_named(loaded, plan, placement)
        problem = problem_of(loaded, plan)
        read, replicas, recompute = read_placed(problem, placement, loaded.spec.plans, parsed)
        chosen = read.to_json(problem)["placement"]
        given = parse_device_map(device_map)
        devices = torch_devices(problem.cluster, given)
        module, namespace = load_target(model)
        traced = _traced_for(problem, module, example_inputs(inputs or (), example, namespace,
                                                             module), capture, granularity)
        check_params(problem, traced)
        if pipeline:
            _export_pipeline(problem, traced, chosen, devices, placement, nearest, output,
                             code, (model, inputs or [], example, display_path(spec)), ranks,
                             replicas, recompute, given)
            return
        if replicas:
            _replicas_dropped(problem, placement)
        if recompute:
            _recompute_dropped(problem, placement, recompute)
        placed, document = _placed(problem, traced, read, devices, nearest)
        used = set(document["placement"].values())
        _left_to_the_default([d.name for d in problem.cluster.devices if d.name in used],
                             devices, given, "the plan places ops on")
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        _write(output, text, code, lambda name: compiled(placed.module.code.lstrip("\n"),
                                                         name))
        sys.stderr.write(_export_summary(placed, set(traced.names.values())))


def _placed(problem: Problem, traced: Traced, read: Plan, devices: dict[str, str],
            nearest: bool) -> tuple[Placed, dict[str, Any]]:
    """The plan `read` applied, and its document; where it is no device map, with the
    nearest module-level plan (`nearest`: that one applied instead, E951 where it does not
    fit)."""
    chosen = read.to_json(problem)["placement"]
    placed = apply_plan(traced, chosen, devices, move=False)
    alternative = nearest_plan(traced, problem, read) if placed.device_map is None else None
    if nearest and alternative is not None:
        _exportable(alternative)
        chosen = alternative.placement
        placed = apply_plan(traced, chosen, devices, move=False)
    document = export_document(placed, problem.name, chosen)
    if alternative is not None:
        document["nearest_module_plan"] = {
            "granularity": alternative.granularity, "exported": nearest,
            "makespan_s": alternative.makespan_s,
            "plan_makespan_s": alternative.plan_makespan_s, "fits": alternative.fits,
            "placement": alternative.placement}
        placed.device_map_note += "; " + alternative.describe() + (
            " (exported, --nearest)" if nearest else " (--nearest exports it)")
        document["device_map_note"] = placed.device_map_note
    return placed, document


def _replicas_dropped(problem: Problem, placement: Path) -> None:
    """W950: without --pipeline, a hybrid plan's replicas are not in what is written."""
    sys.stderr.write(render_all([Diagnostic(
        "W950", f"plan `{problem.name}`'s stages are replicated (`replicas` in "
        f"{display_path(placement)}), and without --pipeline the model is placed once: each "
        "stage on its first device, its replicas left out",
        Span.start_of(display_path(resolved(placement))),
        ("add --pipeline to export the replicated stages as a 2-D DeviceMesh (pipeline x "
         "data)",), severity=Severity.WARNING)]) + "\n")


def _recompute_dropped(problem: Problem, placement: Path, recompute: Sequence[str]) -> None:
    """W952: without --pipeline, the devices the plan has recompute their activations
    keep them: the placed model and its device_map run no checkpoint."""
    sys.stderr.write(render_all([Diagnostic(
        "W952", f"plan `{problem.name}` recomputes the activations of "
        f"{', '.join(recompute)} (`recompute` in {display_path(placement)}), and without "
        "--pipeline the placed model and its device_map keep every activation: the plan's "
        "memory figures do not hold for them",
        Span.start_of(display_path(resolved(placement))),
        ("add --pipeline: its script runs those stages under torch.utils.checkpoint",),
        severity=Severity.WARNING)]) + "\n")


def _exportable(alternative: Alternative) -> None:
    """E951 where `--nearest` would export a module-level plan that breaks the spec."""
    if not alternative.fits:
        raise SpecError(Diagnostic(
            "E951", f"--nearest: the nearest module-level plan ({alternative.granularity}) "
            f"breaks the spec ({alternative.why}), so it is not exported", None,
            ("export the plan itself (leave out --nearest): its ops run where it places them",
             "or import the model at module granularity (planner import torch --granularity "
             "module:N) and solve that spec, whose plans are device maps")))


def _write(output: Path | None, text: str, code: Path | None,
           code_text: Callable[[str], str]) -> None:
    """The JSON `text` to `output` (stdout when None) and, with `code`, `code_text(its file
    name)` there: both files or neither (`write_texts_atomic`), then stdout."""
    files = {} if code is None else {code: code_text(code.name)}
    if output is not None:
        files[output] = text
    write_texts_atomic(files)
    if output is None:
        sys.stdout.write(text)


def _relative_to(model: str, code: Path) -> str:
    """The model `FILE.py[:NAME]` with FILE relative to the script `code`'s folder, which the
    script reads it from (a module, `MODULE:NAME`, as it is)."""
    file = target_file(model)
    if file is None or not str(file).endswith(".py"):
        return model
    where, sep, name = model.rpartition(":")
    if not sep or not where.endswith(".py"):
        sep, name = "", ""
    return os.path.relpath(file.resolve(), code.resolve().parent) + sep + name


def _export_summary(placed: Placed, ops: set[str]) -> str:
    """The export's line: its copies (at cross-device edges; of tied weights, whose tensor is
    no op's) and whether it is a device_map."""
    weights = sum(1 for tensor, _ in placed.copies if tensor not in ops)
    tied = f" and {weights} of tied weights" if weights else ""
    return (f"{len(placed.copies) - weights} copies at cross-device edges{tied}; device_map: "
            f"{'yes' if placed.device_map is not None else 'no'} ({placed.device_map_note})\n")


def _traced_for(problem: Problem, module: object, example: Example, capture: str,
                granularity: str | None) -> Traced:
    """The model captured as `import torch` captured it for `problem`'s spec: with `auto`
    and no `--granularity`, the capture and granularity whose ops are the spec's (a spec
    made with `--capture fx` or `--granularity module:2` needs no options to export)."""
    ops = [o.name for o in problem.graph.ops]
    wanted = forward_ops(ops)
    traced = trace(module, example, capture, granularity or "op")
    if granularity is None:
        traced = regroup(traced, ops)
    if capture == "auto" and {*traced.names.values()} != wanted and traced.method == "export":
        try:  # fx's own refusal (keyword inputs: E943) is no answer: export's capture stands
            other = trace(module, example, "fx", granularity or "op")
        except (SpecError, UsageError):
            return traced
        other = regroup(other, ops) if granularity is None else other
        if {*other.names.values()} == wanted:
            return other
    return traced


def _export_pipeline(problem: Problem, traced: Traced, chosen: dict[str, str],
                     devices: dict[str, str], placement: Path, nearest: bool,
                     output: Path | None, code: Path | None,
                     source: tuple[str, list[str], str | None, str],
                     ranks: int | None = None,
                     replicas: Mapping[int, tuple[int, ...]] | None = None,
                     recompute: Sequence[str] = (), given: Mapping[str, str] | None = None,
                     ) -> None:
    """`export torch --pipeline`: the JSON to `output` (or stdout), the script to `code`;
    E946 when the plan's stages are not at module boundaries, unless `nearest`; on
    `ranks` processes where the split allows (E947 where not); its replicated stages (`replicas`:
    the plan file's, `plan.load_replicas`) on a 2-D mesh (E950 where
    they make none); the stages on the devices in `recompute` under torch.utils.checkpoint;
    W953 where `--device-map` (`given`) leaves devices the ranks run on to the default rule."""
    where = Span.start_of(display_path(resolved(placement)))
    tp = pipeline_export(problem, traced, chosen, devices, where, ranks, replicas, recompute)
    if not tp.exact and not nearest:
        raise pipeline_error(tp, where)
    text = json.dumps(pipeline_document(tp), indent=2, ensure_ascii=False) + "\n"
    model, shapes, example, spec = source
    model = model if code is None else _relative_to(model, code)
    _write(output, text, code, lambda name: pipeline_script(tp, traced, model, shapes, example,
                                                            spec, name))
    if not tp.exact:
        sys.stderr.write(f"plan `{tp.plan}`'s stages are not at module boundaries: "
                         f"{tp.reason}\n")
    _ranks_left_to_the_default(tp, given or {})
    sys.stderr.write(summary(tp) + "\n")


def _ranks_left_to_the_default(tp: TorchPipeline, given: Mapping[str, str]) -> None:
    """W953 (`_left_to_the_default`) for the devices the pipeline's ranks run on (replicas
    included), with a word on ranks of two kinds (one process group cannot join them)."""
    ranks = [n for row in tp.replicas for n in row] if tp.replicas else list(
        dict.fromkeys(s.device for s in tp.stages))
    kinds = sorted({tp.devices[n].partition(":")[0] for n in ranks})
    mixed = (f"; the ranks are then on {' and '.join(kinds)} devices, which one process "
             "group cannot join (the script stops unless run with --cpu)"
             if len(kinds) > 1 else "")
    _left_to_the_default(ranks, tp.devices, given, "the ranks run on", mixed)


def _left_to_the_default(used: Sequence[str], devices: Mapping[str, str],
                         given: Mapping[str, str], what: str, mixed: str = "") -> None:
    """W953: a `--device-map` (`given`) that names some of the devices `used` (`what` they
    are: "the ranks run on") leaves the others to the default rule, by kind (`gpu3` ->
    `cuda:3`, as `devices` has them): which ones, and where they went; `mixed` adds what
    that makes of the export."""
    left = [n for n in used if n not in given]
    if not given or not left:
        return
    on_cpu = {devices[n] for n in used if n in given} == {"cpu"}  # the rest there too
    full = ",".join([*(f"{k}={v}" for k, v in given.items()),
                     *(f"{n}={'cpu' if on_cpu else devices[n]}" for n in left)])
    sys.stderr.write(render_all([Diagnostic(
        "W953", f"--device-map names {', '.join(f'`{k}`' for k in given)} and leaves "
        f"{len(left)} device(s) {what} to the default rule (by kind): "
        + ", ".join(f"`{n}` -> {devices[n]}" for n in left) + mixed, None,
        (f"name every device {what}, e.g. --device-map {full}",),
        severity=Severity.WARNING)]) + "\n")


