"""Run the step of several scripts `planner export torch --pipeline` wrote, in one set of
processes (importing torch once per process rather than once per script and rank).

    python tests/io/torch_pipeline_runner.py JOBS.json

JOBS.json is a list of `{"script": PATH, "ranks": N, "save": DIR, "rendezvous": FILE}`.
`torch.multiprocessing.spawn` starts as many processes as the largest job has ranks; each
process runs, job after job, the script's own `run(rank, ranks, "cpu", init_method, save)`
(gloo on the CPU, a process group per job, rendezvous in a file: no ports), when its rank
is one of the job's. Each rank's losses and gradients go to DIR/rankN.pt. A job with
`"count": true` also writes DIR/callsN.json: per stage of the rank, how many times its
module's forward ran in the step (once per micro-batch, twice where the stage recomputes:
torch.utils.checkpoint runs it again in the backward pass).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import torch.multiprocessing as mp


@contextmanager
def counting(calls: dict[int, int]) -> Iterator[None]:
    """Count, per stage index, the calls of each stage module's forward as the stage is
    built (before the script's own wrapping, which then calls the counted forward)."""
    from torch.distributed.pipelining._IR import Pipe

    build = Pipe.build_stage

    def build_stage(self: Any, stage_index: int, *args: Any, **kwargs: Any) -> Any:
        stage = build(self, stage_index, *args, **kwargs)
        forward = stage.submod.forward
        calls[stage_index] = 0

        def counted(*a: Any, **k: Any) -> Any:
            calls[stage_index] += 1
            return forward(*a, **k)

        stage.submod.forward = counted
        return stage

    Pipe.build_stage = build_stage  # type: ignore[method-assign]
    try:
        yield
    finally:
        Pipe.build_stage = build  # type: ignore[method-assign]


def work(rank: int, jobs: list[dict[str, Any]]) -> None:
    """The jobs of one process."""
    for k, job in enumerate(jobs):
        if rank >= job["ranks"]:
            continue
        spec = importlib.util.spec_from_file_location(f"_pipeline_step_{k}", job["script"])
        assert spec is not None and spec.loader is not None
        script = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(script)
        calls: dict[int, int] = {}
        with counting(calls) if job.get("count") else nullcontext():
            script.run(rank, job["ranks"], "cpu", "file://" + job["rendezvous"], job["save"])
        if job.get("count"):
            (Path(job["save"]) / f"calls{rank}.json").write_text(json.dumps(calls))


def main(path: str) -> None:
    """Run the jobs listed in the JSON file `path`."""
    with open(path, encoding="utf-8") as f:
        jobs = json.load(f)
    mp.spawn(work, args=(jobs,), nprocs=max(job["ranks"] for job in jobs))  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main(sys.argv[1])
