"""The plan a user gives `simulate` (and `diff`, `export`): a placement, plan or `--json`
report file, a stages file, or the spec's `place`/`pin` statements; the plan a file names
(`plan_named`), and E516 where a file was made for another plan (`made_for`,
`one_plan_of`). Split from `runs` (what a command does once it has its plan).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Diagnostic, JsonSpans, Span, SpecError, UsageError, quoted
from ..model import Problem
from ..plan import Plan, given_placement, in_envelope, load_plan, load_recompute, load_replicas
from ..roots import display_path, resolved
from ..strictjson import loads as strict_loads

if TYPE_CHECKING:
    from ..spec.load import Loaded


def _placement_from_spec(problem: Problem) -> Plan:
    return Plan(given_placement(problem, "or pass --placement FILE"), algorithm="expert")


#: a placement or stages file as `parsed_json` read it: its shown name, text and JSON value
Parsed = tuple[str, str, Any]


def given_plan(loaded: Loaded, problem: Problem, placement: Path | None, stages: Path | None,
               parsed: Parsed | None = None
               ) -> tuple[Plan, Mapping[int, tuple[int, ...]], tuple[str, ...]]:
    """The plan `simulate` runs, its replicated stages' groups and the devices that
    recompute: a stages file's layout (`io.stages`), a placement or plan file (a pipeline
    plan's `replicas` and `recompute` with it), or the spec's `place`/`pin` statements;
    `parsed`: that file, where `plan_named` read it (it is read once)."""
    if stages is None:
        return read_placed(problem, placement, loaded.spec.plans, parsed) if placement else (
            _placement_from_spec(problem), {}, ())
    if problem.pipeline is None:
        raise UsageError(Diagnostic(
            "E646", f"--stages gives a pipeline's stages, and plan `{problem.name}` has "
            "`objective makespan`", loaded.locations.plans.get(problem.name),
            (f"give plan `{problem.name}` `objective pipeline` (with its `microbatches`)",
             "or simulate one pass of a placement: --placement FILE")))
    from ..io.stages import parse_stages, read_stages  # lazy: start-up

    layout = (parse_stages(problem, parsed[1], parsed[0]) if parsed else
              read_stages(problem, stages, display_path(resolved(stages))))
    return layout.plan, layout.replicas, layout.recompute


def read_placed(problem: Problem, path: Path, plans: Collection[str] = (),
                parsed: Parsed | None = None
                ) -> tuple[Plan, dict[int, tuple[int, ...]], tuple[str, ...]]:
    """A placement file's plan, with a plan file's `replicas` (a hybrid pipeline's groups,
    by representative device) and `recompute` (the devices that recompute, by name); a
    `--json` document's report reads as its plan. A file made for another of the spec's
    `plans`, or for another graph, is E516 (`made_for`). `parsed`: the file, already read."""
    shown, text, data = parsed or parsed_json(path)
    from ..io.device_map import looks_like_device_map, placement_from_device_map  # start-up

    if looks_like_device_map(data):  # an accelerate device_map {module path: device}
        return (load_plan(problem, placement_from_device_map(problem, data, shown, text),
                          shown), {}, ())
    body, at = in_envelope(data)  # `solve --json`, `simulate --json`: the report
    made_for(problem, body, plans, JsonSpans(shown, text, at))
    body = exported(body, JsonSpans(shown, text, at))
    read = load_plan(problem, body, shown, text, at)
    groups = load_replicas(problem, body, read.placement, shown, text, at)
    return read, groups, load_recompute(problem, body, shown, text, at, groups,
                                        read.placement)


def exported(body: Any, where: JsonSpans) -> Any:
    """An `export torch --pipeline` document as the plan it exports: its `placement` (the
    split as exported, regrouped by `--ranks`, moved to the nearest split torch can cut)
    and `recompute`; E502 for one of replicated stages (a DeviceMesh), whose `placement`
    holds the first replica alone. Any other body as it is."""
    if not isinstance(body, Mapping) or body.get("format") != "planner-torch-pipeline":
        return body
    if "mesh" in body:  # `--ranks` refuses replicas (E950): these are the plan's own
        raise SpecError(Diagnostic(
            "E502", "an `export torch --pipeline` document of replicated stages (its `mesh`) "
            "is no plan file: its `placement` holds each stage's first replica alone",
            where("format"), ("give the plan file it was exported from: replicated "
                              "stages are exported as planned",)))
    return {key: body[key] for key in ("plan", "placement", "recompute") if key in body}


def parsed_json(path: Path, code: str = "E500", hint: str | None = None
                ) -> tuple[str, str, Any]:
    """A placement or plan file's shown name, text and JSON value; `code` (simulate's E500,
    diff's E642) for invalid JSON, at the error, with a hint (`hint`, else a placement
    file's)."""
    from ..spec.load import read_source  # lazy: start-up

    shown = display_path(resolved(path))
    text = read_source(path, shown, kind="plan")
    try:  # keys given twice, integers too long, nesting too deep: all JSONDecodeError
        return shown, text, strict_loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(Diagnostic(
            code, f"invalid JSON: {err.msg}", Span.at_json_error(shown, err),
            (hint or "fix the JSON at the caret (no trailing commas, comments or single "
             "quotes; each key once), or write the file again: planner solve SPEC --out FILE",))
        ) from None


def plan_named(loaded: Loaded, plan: str | None, placement: Path | None,
               stages: Path | None = None) -> tuple[str | None, Parsed | None]:
    """The plan `simulate` runs: `--plan`, else, for a spec of several plans, the one the
    placement (or `stages`) file names (its "plan", as `diff` reads it; `solve --json`'s
    report's too), else None (the spec's only plan, or E602); and the file, if read for
    that (`given_plan` reads it no more), invalid JSON there said as its reader says it.
    A `--plan` it contradicts is `made_for`'s E516."""
    path = placement or stages
    if plan is not None or path is None or len(loaded.spec.plans) < 2:
        return plan, None
    hint: str | None = None
    if placement is None:  # a stages file: its reader's hint, not a placement file's
        from ..io.stages import JSON_HINT  # lazy: start-up

        hint = JSON_HINT
    parsed = parsed_json(path, hint=hint)
    body, _ = in_envelope(parsed[2])
    named = body.get("plan") if isinstance(body, Mapping) else None
    return (named if isinstance(named, str) and named in loaded.spec.plans else None), parsed


def made_for(problem: Problem, body: Any, plans: Collection[str], where: JsonSpans) -> None:
    """E516 where a plan file's `plan` (a `--json` report's too) names another plan of the
    spec (`plans`), or another plan none of whose placed ops is an op of `problem`'s graph: a
    file made for another plan or graph, which would be read as this one's (with its
    replicas) or fail op by op. A plan renamed since, or a bare placement, reads on."""
    named = body.get("plan") if isinstance(body, Mapping) else None
    if not isinstance(named, str) or named == problem.name:
        return
    placed = body.get("placement")
    ops = problem.graph.op_index
    other_graph = isinstance(placed, Mapping) and bool(placed) and not any(
        op in ops for op in placed)
    if named not in plans and not other_graph:
        return
    why = (f"plan {quoted(named)} of the spec" if named in plans else
           f"plan {quoted(named)}, of another graph (no op it places is in graph "
           f"`{problem.graph.name}`)")
    raise SpecError(Diagnostic(
        "E516", f"the placement file was made for {why}, not for plan `{problem.name}`",
        where("plan"),
        ((f"pass --plan {named} to use it with its own plan",) if named in plans else ())
        + (f"{'or s' if named in plans else 'S'}olve plan `{problem.name}` for a file of "
           f"its own: planner solve SPEC --plan {problem.name} --out FILE",)
        + ((f"to run its placement under plan `{problem.name}` all the same (another "
            f"cluster's what-if), set its \"plan\" to \"{problem.name}\"",)
           if named in plans else ())))


def one_plan_of(old: tuple[str, str], new: tuple[str, str], plans: Collection[str],
                where: JsonSpans) -> None:
    """E516 where two files (name, the plan it names) to be judged on one plan name two
    plans of the spec: one simulation cannot judge both, and `made_for`'s `--plan` hint
    would refuse the other file in turn."""
    if old[1] != new[1] and old[1] in plans and new[1] in plans:
        raise SpecError(Diagnostic(
            "E516", f"{old[0]} and {new[0]} were made for two plans of the spec, "
                    f"`{old[1]}` and `{new[1]}`: one simulation cannot judge both",
            where("plan"),
            ("diff their `planner solve SPEC --plan NAME --json` outputs: each carries its "
             "own plan's figures",
             "or, to run both placements under one plan, set the \"plan\" of one file to "
             "the other's")))
