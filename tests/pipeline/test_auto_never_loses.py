"""`hybrid`, and `auto` where it keeps hybrid's plan, under `objective pipeline`: plans
torch's schedules run (at most M stages under `1f1b`, as pipedp's)."""

from __future__ import annotations

import pytest
from pipe_support import chain_text

from planner import loads
from planner.algorithms import Options
from planner.algorithms import run as run_algorithm
from planner.pipeline.runnable import refusal
from planner.pipeline.split import split_of


@pytest.mark.parametrize("data_parallel", ["1", "auto"])
def test_hybrid_plans_at_most_m_stages_under_1f1b(data_parallel: str) -> None:
    """Before: under `1f1b` with 2 micro-batches `--algo hybrid` split four layers over
    four devices (W626: torch's Schedule1F1B needs as many micro-batches as stages, and
    `export torch --pipeline` refuses it), where pipedp, pipeilp, search and the uniform
    split keep to M stages; `auto`, which keeps hybrid's plan where it runs faster, took
    it too."""
    text = chain_text(4, 4, microbatches=2, bandwidth="100 GB/s").replace(
        "schedule 1f1b", f"schedule 1f1b; data_parallel {data_parallel}")
    p = loads(text).plan("p")
    for algo in ("hybrid", "auto"):
        solved = run_algorithm(algo, p, Options(time_limit_s=5))
        assert split_of(p, solved.plan.placement).stages <= 2, algo
        assert refusal(p, solved.plan.placement) is None, algo
