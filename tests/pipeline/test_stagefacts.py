"""`check` and `solve` agree on a pipeline plan's memory: its proofs follow the pipeline's
own memory rule (`planner.stagefacts`), not the one-pass models'.

A training graph whose two backward outputs of 9 GiB fit a 16 GiB device as a pipeline
(a backward output is a transient, one at a time) was E306 in `check` (the `static`
one-pass model adds them up) while `solve` planned it; an op of 17 GiB params was E301 in
`check` and E707 ("no contiguous split fits", with a hint about micro-batches) in `solve`.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pipe_support import random_spec

import planner
from planner import loads
from planner.algorithms import ALGORITHMS, run
from planner.errors import InfeasibleError
from planner.model import Pipeline
from planner.pipeline.split import Split, stage_bytes
from planner.pipeline.units import units
from planner.spec.checks import plan_diagnostics
from planner.stagefacts import pipeline_bytes, pipeline_units

_CLUSTER = """cluster c {
  device gpu[0..1] { memory 16 GiB }
  link gpu[*] <-> gpu[*] { bandwidth 50 GB/s }
}
"""
_PLAN = "plan p { graph g  cluster c  objective pipeline  microbatches 2 }\n"


def test_backward_outputs_that_fit_one_at_a_time_pass_check_and_solve() -> None:
    problem = loads(_CLUSTER + """graph g {
  op f1 { time 1 ms  output 1 MiB }
  op f2 { time 1 ms  output 1 MiB }
  op b2 { time 1 ms  output 9 GiB  backward_of f2 }
  op b2x { time 1 ms  output 9 GiB  backward_of f2 }
  op b1 { time 1 ms  output 1 MiB  backward_of f1 }
  f1 -> f2 -> b2 -> b1
  f2 -> b2x -> b1
}
""" + _PLAN).plan("p")
    assert plan_diagnostics([problem]) == []
    solution = run("pipedp", problem)
    assert solution.plan.placement


@pytest.mark.parametrize("algo", ["pipedp", "auto", "pipeilp"])
def test_a_unit_too_big_for_any_stage_is_e301_in_check_and_solve(algo: str) -> None:
    problem = loads(_CLUSTER + """graph g {
  op a { time 1 ms  output 1 MiB }
  op d { time 3 ms  params 17 GiB  output 1 MiB }
  a -> d
}
""" + _PLAN).plan("p")
    assert [d.code for d in plan_diagnostics([problem])] == ["E301"]
    with pytest.raises(InfeasibleError) as info:
        run(algo, problem)
    assert [d.code for d in info.value.diagnostics] == ["E301"]
    assert "op `d` needs at least 17.00 GiB" in info.value.diagnostics[0].message


_TOO_BIG = _CLUSTER + """graph g {
  op a { time 1 ms  output 1 MiB }
  op d { time 3 ms  params 17 GiB  output 1 MiB }
  op d.bwd { time 3 ms  output 1 MiB  backward_of d }
  op a.bwd { time 1 ms  output 1 MiB  backward_of a }
  a -> d -> d.bwd -> a.bwd
}
plan p { graph g  cluster c  objective pipeline  microbatches 2
  place a, a.bwd on gpu0  place d, d.bwd on gpu1 }
"""


@pytest.mark.parametrize("algo", [n for n, a in ALGORITHMS.items()
                                  if "pipeline" in a.objectives])
def test_where_check_proves_e301_solve_refuses_but_for_the_told_baselines(algo: str) -> None:
    # main: hybrid said E712, hinting at micro-batches and pins, where check proves E301
    problem = loads(_TOO_BIG).plan("p")
    assert [d.code for d in plan_diagnostics([problem])] == ["E301"]
    if algo in ("uniform", "expert"):  # place as told (docs/algorithms.md): judged, printed
        result = planner.solve(problem, algo)
        assert result.status == "infeasible" and not result.feasible
        assert "less than the params of its stages alone (17.00 GiB)" in " ".join(
            result.breaks)
        return
    with pytest.raises(InfeasibleError) as info:
        planner.solve(problem, algo)
    assert [d.code for d in info.value.diagnostics] == ["E301"]
    assert ("the pipeline unit of `d` and `d.bwd` (2 ops) needs at least 17.00 GiB"
            in info.value.diagnostics[0].message)


def test_the_pipeline_page_says_which_algorithms_print_a_plan_e301_rules_out() -> None:
    # main: "`solve` says the same", while `uniform` printed its split (exit 3)
    page = " ".join((Path(__file__).parents[2] / "docs" / "pipelines.md").read_text(
        encoding="utf-8").split())
    assert ("`solve` refuses with the same proof under every algorithm but the two "
            "baselines that place as they are told, `uniform` and `expert`") in page


@pytest.mark.parametrize("seed", range(40))
def test_a_units_pipeline_bytes_are_held_by_any_stage_holding_it(seed: int) -> None:
    """The bound E301 proves with is a lower bound of the pipeline's memory rule: every
    colocation group's `pipeline_bytes` is within what its device holds, in random
    training and inference graphs with ties, under each schedule, recomputing or not."""
    rng = random.Random(seed)
    schedule = ("gpipe", "1f1b", "interleaved")[seed % 3]
    settings = "; stages_per_device 2" if schedule == "interleaved" else ""
    p = random_spec(seed, rng.randint(4, 8), rng.randint(2, 3), training=seed % 2 == 0,
                    tie=True, schedule=schedule, settings=settings)
    u = units(p)
    n, m = u.count, len(p.cluster.devices)
    s = rng.randint(1, min(n, 2 * m))
    bounds = (0, *sorted(rng.sample(range(1, n), s - 1)), n)
    devices = tuple(rng.randrange(m) for _ in range(s))
    split = Split(bounds, devices)
    recompute = set(rng.sample(range(m), rng.randint(0, m)))
    held = stage_bytes(p, split, p.pipeline or Pipeline(), recompute)
    on = split.placement(p)
    for members, _ in pipeline_units(p):  # the units E301 judges, each on one stage
        assert pipeline_bytes(p, members) <= held[on[members[0]]] + 1e-6


@pytest.mark.parametrize(("cap", "proved"), [(1149, True), (1150, False)])
def test_e301_counts_the_backward_output_of_the_unit(cap: int, proved: bool) -> None:
    # f (1000 B params, 100 B output) and its backward b (50 B output): a stage holding
    # them holds 1150 B. E301 judged colocation groups, f alone (1100 B), so `check` said
    # ok at 1149 B and `solve` E707; a pipeline unit is f with its backward ops
    problem = loads(f"cluster c {{ device d0 {{ memory {cap} B }} }}\n"
                    "graph g { op f {time 1 ms; params 1000 B; output 100 B}\n"
                    "  op b {time 2 ms; output 50 B; backward_of f}  f -> b }\n"
                    "plan p { graph g; cluster c; objective pipeline; microbatches 2; "
                    "schedule 1f1b }\n").plan("p")
    found = [d.code for d in plan_diagnostics([problem])]
    if proved:
        assert found == ["E301"]
        with pytest.raises(InfeasibleError) as info:
            run("pipedp", problem)
        assert "the pipeline unit of `f` and `b` (2 ops) needs at least 1.12 KiB (1150 B)" \
            in info.value.diagnostics[0].message
    else:
        assert found == []
        assert max(planner.solve(problem, "pipedp").pipeline.memory_bytes) == 1150
