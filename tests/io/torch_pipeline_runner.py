"""Run the step of several scripts `planner export torch --pipeline` wrote, in one set of
processes (importing torch once per process rather than once per script and rank).

    python tests/io/torch_pipeline_runner.py JOBS.json

JOBS.json is a list of `{"script": PATH, "ranks": N, "save": DIR, "rendezvous": FILE}`.
`torch.multiprocessing.spawn` starts as many processes as the largest job has ranks; each
process runs, job after job, the script's own `run(rank, ranks, "cpu", init_method, save)`
(gloo on the CPU, a process group per job, rendezvous in a file: no ports), when its rank
is one of the job's. Each rank's losses and gradients go to DIR/rankN.pt.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from typing import Any

import torch.multiprocessing as mp


def work(rank: int, jobs: list[dict[str, Any]]) -> None:
    """The jobs of one process."""
    for k, job in enumerate(jobs):
        if rank >= job["ranks"]:
            continue
        spec = importlib.util.spec_from_file_location(f"_pipeline_step_{k}", job["script"])
        assert spec is not None and spec.loader is not None
        script = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(script)
        script.run(rank, job["ranks"], "cpu", "file://" + job["rendezvous"], job["save"])


def main(path: str) -> None:
    """Run the jobs listed in the JSON file `path`."""
    with open(path, encoding="utf-8") as f:
        jobs = json.load(f)
    mp.spawn(work, args=(jobs,), nprocs=max(job["ranks"] for job in jobs))  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main(sys.argv[1])
