"""The language's warnings on a `Problem` built in Python (`ProblemBuilder.build`): what a
spec of the same problem would be warned about when loaded, with the same codes, worded
in the builder's terms (`time_by_kind`, `data_parallel=2`) and located by `locate` (the
builder's call that made the item). W266, a size that is not whole bytes, is the builder's
own, said at the call that gave it; W265 is about a spec's comments, which a problem has
none of. Run on a problem that passed `check_problem`: its values are valid.
"""

from __future__ import annotations

from ..errors import Diagnostic, Severity, did_you_mean
from ..model import Problem
from ..spec.lower import interleave_blocked
from .checks import Locate


def problem_warnings(problem: Problem, locate: Locate) -> list[Diagnostic]:
    """W256, W257 and W258 of `problem`, as a spec's lowering finds them."""
    return [*_unknown_kinds(problem, locate), *_idle_pipelines(problem, locate),
            *_not_interleaved(problem, locate)]


def _warning(code: str, message: str, path: str, locate: Locate, *hints: str) -> Diagnostic:
    return Diagnostic(code, message, locate(path), tuple(h for h in hints if h),
                      severity=Severity.WARNING)


def _unknown_kinds(problem: Problem, locate: Locate) -> list[Diagnostic]:
    """W256 for a `time_by_kind` kind that no device has, once per kind, at the first op
    that names it (a spec's `time[KIND]`: a typo of a real kind usually leaves the op
    without a time there too, E253, unless it has a `time`)."""
    kinds = list(dict.fromkeys(d.kind for d in problem.cluster.devices if d.kind))
    seen: dict[str, list[int]] = {}
    for i, op in enumerate(problem.graph.ops):
        for kind in op.time_by_kind:
            if kind not in kinds:
                seen.setdefault(kind, []).append(i)
    out = []
    known = ", ".join(f"`{k}`" for k in kinds) if kinds else "none"
    for kind, ops in seen.items():
        n = len(ops) - 1
        more = f" (and {n} more op{'s' if n > 1 else ''})" if n else ""
        out.append(_warning(
            "W256", f"`time_by_kind[{kind!r}]` of op `{problem.graph.ops[ops[0]].name}`{more}"
            f": no device of cluster `{problem.cluster.name}` has kind `{kind}`",
            f"graph.ops[{ops[0]}].time_by_kind", locate, *did_you_mean(kind, kinds),
            f"device kinds here: {known}"))
    return out


def _idle_pipelines(problem: Problem, locate: Locate) -> list[Diagnostic]:
    """W257 when `data_parallel` runs more pipelines than there are micro-batches: some
    idle, holding the model and joining the all-reduce (E257 when the cluster has fewer
    devices than pipelines)."""
    pipe = problem.pipeline
    if pipe is None or pipe.data_parallel == "auto":
        return []
    n, mb = pipe.data_parallel, pipe.microbatches
    if not mb < n <= len(problem.cluster.devices):
        return []
    return [_warning("W257", f"data_parallel={n} runs {n} pipelines, and microbatches={mb} "
                     f"feeds {mb} of them: {n - mb} idle, holding the model and joining the "
                     "all-reduce", "pipeline.data_parallel", locate,
                     f"give microbatches={n} or more (a multiple of {n} keeps the pipelines "
                     f"even), or data_parallel={mb}")]


def _not_interleaved(problem: Problem, locate: Locate) -> list[Diagnostic]:
    """W258 when no split can interleave (`interleave_blocked`): every plan runs as the
    schedule's fallback (`1f1b`)."""
    pipe, graph = problem.pipeline, problem.graph
    why = None if pipe is None else interleave_blocked(graph, problem.cluster, pipe)
    if pipe is None or why is None:
        return []
    per, fallback = pipe.stages_per_device, pipe.schedule_spec.fallback
    most = (len(graph.ops) - len(graph.backward_of)) // 2
    fewer = f", or stages_per_device={most} or fewer" \
        if most >= 2 and len(problem.cluster.devices) >= 2 else ""
    return [_warning("W258", f"plan `{problem.name}` cannot interleave: stages_per_device="
                     f"{per} needs {2 * per} stages ({per} on each of at least two devices) "
                     f"and {why}; every plan of it runs as `{fallback}`",
                     "pipeline.stages_per_device", locate,
                     f"give schedule=\"{fallback}\"{fewer}")]
