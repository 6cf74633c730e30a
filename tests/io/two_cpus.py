"""An imported model's spec on two CPUs, with the least memory a plan is found in: the
torch export tests' case (tests/io/test_torch_export.py) and bench/bench_torch.py's rows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import planner
from planner import Problem, Result
from planner.workload import Imported, PlanDef, Workload


class TwoCpus(NamedTuple):
    problem: Problem
    solution: Result
    #: each CPU's memory, as a share of `need_bytes` (the model's params and outputs)
    share: float
    need_bytes: float


def solve_on_two_cpus(w: Workload, name: str, shares: Sequence[float], algorithm: str,
                      **options: Any) -> TwoCpus:
    """`w` on two linked CPUs of `share` of its params and outputs each, solved by
    `algorithm`, for the first of `shares` (rising) where a plan is found; the last one's
    error where none is."""
    totals = w.totals()
    need = totals["params_bytes"] + totals["output_bytes"]
    for k, share in enumerate(shares):
        spec = Imported(w, name)
        spec.clusters.append([
            "cluster two {",
            f"  device cpu[0..1] {{ kind cpu  memory {math.ceil(need * share)} B }}",
            "  link cpu[0..1] <-> cpu[0..1] { bandwidth 10 GB/s  latency 2 us }", "}"])
        spec.plans.append(PlanDef("two", name, "two"))
        problem = planner.loads(spec.to_spec()).plans["two"]
        try:
            return TwoCpus(problem, planner.solve(problem, algorithm, **options), share, need)
        except planner.PlannerError:
            if k == len(shares) - 1:
                raise
    raise ValueError("no shares given")
