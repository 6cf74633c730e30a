"""The 2-D DeviceMesh (pipeline x data) of a hybrid plan's export (`torch_pipeline`): per
pipeline rank, its stage's group of replicas, and E950 for replicas that make no mesh."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import Diagnostic, Span, SpecError
from ..model import Problem

if TYPE_CHECKING:
    from .torch_pipeline import TorchPipeline


def refuse_ranks(plan: str, ranks: int | None, groups: Mapping[int, tuple[int, ...]],
                 where: Span | None) -> None:
    """E950 for `--ranks` of a plan whose stages are replicated (`groups`), before the
    ranks are looked at: E947 said "--ranks 1 or 2 runs this split" of a 2 x 2 mesh, and
    `--ranks 2` was then E950 "export it without --ranks" (helper)."""
    if ranks is not None and groups:
        raise _e950(where, f"--ranks {ranks} regroups the stages of a pipeline, and plan "
                    f"`{plan}` replicates its stages", "export it without --ranks: it runs on "
                    "a rank per replica of each stage")


def mesh(problem: Problem, tp: TorchPipeline, planned: Sequence[int],
         groups: Mapping[int, tuple[int, ...]], where: Span | None
         ) -> tuple[tuple[str, ...], ...]:
    """Per pipeline rank of `tp`, its device's group of replicas (names, its own device
    first; `groups` holds those of 2+ devices): the rows of a 2-D DeviceMesh (pipeline x
    data), which needs every stage replicated equally. E950 for groups of devices that run
    no stage, a device both a replica and a stage's, stages replicated unequally and
    micro-batches that do not split evenly over the replicas (and `--ranks`:
    `refuse_ranks`)."""
    cluster = problem.cluster.devices
    index = problem.cluster.device_index
    name = f"plan `{tp.plan}`"
    stray = [cluster[d].name for d in groups if d not in planned]
    if stray:
        raise _e950(where, f"{name} gives replicas to `{stray[0]}`, which runs none of its "
                    "stages", "key `replicas` by the device of each replicated stage")
    chain = [next(s.device for s in tp.stages if s.rank == r) for r in range(tp.pipeline_ranks)]
    rows = tuple(tuple(cluster[e].name for e in groups.get(index[d], (index[d],)))
                 for d in chain)
    _check_rows(tp, rows, where)
    return rows


def _check_rows(tp: TorchPipeline, rows: Sequence[tuple[str, ...]], where: Span | None) -> None:
    """E950 unless `rows` (per pipeline rank, its group of devices) make a 2-D mesh: no
    device in two rows, every row as long, the micro-batches a multiple of that length."""
    name = f"plan `{tp.plan}`"
    doubled = next((n for n in (n for row in rows for n in row)
                    if sum(n in row for row in rows) > 1), None)
    if doubled is not None:
        raise _e950(where, f"{name} puts `{doubled}` in the replicas of a stage and runs "
                    "another stage on it", "give each device one stage or one replica")
    sizes = [len(row) for row in rows]
    if len(set(sizes)) > 1:
        shown = ", ".join(
            f"stage {', '.join(str(t.index) for t in tp.stages if t.rank == r)} ({row[0]}) "
            f"on {len(row)} device{'s' if len(row) > 1 else ''}" for r, row in enumerate(rows))
        raise _e950(where, f"{name} replicates its stages unequally ({shown}); the script "
                    "runs a 2-D DeviceMesh (pipeline x data), every stage on as many replicas",
                    "plan with `data_parallel N` (every stage replicated N times) to export "
                    "it to torch")
    if tp.microbatches % sizes[0]:
        raise _e950(where, f"{name}'s {tp.microbatches} micro-batch(es) do not split evenly "
                    f"over its {sizes[0]} replicas of each stage (each replica pipeline runs "
                    "its share of them)", f"set `microbatches` to a multiple of {sizes[0]}")


def _e950(where: Span | None, message: str, hint: str) -> SpecError:
    """E950: replicas that make no 2-D mesh."""
    return SpecError(Diagnostic("E950", message, where, (hint,)))
