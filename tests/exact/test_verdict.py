"""`optimal` only when true: exact plans judged by the simulator (`exact/verdict.py`).

The figures are those derived by hand in `specs/contention6.plan`: under contention `none`
the pinned plan takes 7 ms; under `device` the two 2 ms transfers out of gpu0 share one
channel and it takes 8 ms.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner import load, loads
from planner.algorithms import Options, run
from planner.algorithms.exact.verdict import judge

SPEC = Path(__file__).parent / "specs" / "contention6.plan"
MS = 1e-3


def _problem(name: str, **changes: str):  # type: ignore[no-untyped-def]
    import dataclasses

    problem = load(SPEC).plan(name)
    return dataclasses.replace(problem, **changes) if changes else problem


def test_cpsat_under_device_contention_is_feasible_with_the_true_gap() -> None:
    sol = run("cpsat", _problem("six_device"), Options(time_limit_s=2.0))
    assert sol.info["solver_status"] == "optimal"  # of its contention-none model
    assert sol.info["objective_s"] == pytest.approx(7 * MS)
    assert sol.status == "feasible"
    assert sol.info["bound_s"] == pytest.approx(7 * MS)  # CP-SAT's bound: a relaxation
    assert sol.info["gap"] == pytest.approx((8 - 7) / 7)
    assert "contention device" in sol.info["why"]


def test_cpsat_without_contention_is_optimal() -> None:
    sol = run("cpsat", _problem("six_none"), Options(time_limit_s=2.0))
    assert sol.status == "optimal"
    assert sol.info["objective_s"] == pytest.approx(7 * MS)
    assert sol.info["gap"] == 0.0


def test_auto_and_cpsat_give_the_same_status_for_the_same_plan() -> None:
    problem = _problem("six_device")
    cp = run("cpsat", problem, Options(time_limit_s=2.0))
    auto = run("auto", problem, Options(time_limit_s=2.0))
    assert auto.plan.placement == cp.plan.placement
    assert (auto.status, auto.info["gap"]) == (cp.status, cp.info["gap"])
    assert auto.info["bound_s"] == pytest.approx(cp.info["bound_s"])


def test_a_bound_that_meets_the_makespan_proves_optimal_after_all() -> None:
    problem = _problem("six_device")
    plan = run("msct", problem).plan
    v = judge(problem, plan, solver_optimal=False, solver_bound_s=8 * MS)
    assert (v.status, v.makespan_s, v.gap) == ("optimal", pytest.approx(8 * MS), 0.0)
    assert "meets a valid lower bound" in v.why


def test_the_static_models_bound_is_not_used_under_liveness() -> None:
    # the static model restricts liveness: its optimum, hence its bound, may exceed the
    # liveness optimum, so only planner.bounds counts (6 ms: the chain a, c, e, f plus
    # a's 2 ms transfer)
    problem = _problem("six_none", memory_model="liveness")
    plan = run("msct", problem).plan
    v = judge(problem, plan, solver_optimal=True, objective_s=7 * MS, solver_bound_s=7 * MS)
    assert v.status == "feasible"
    assert v.bound_s == pytest.approx(6 * MS)
    assert v.gap == pytest.approx((7 - 6) / 6)


@pytest.mark.parametrize(("algo", "solver", "said"), [
    ("ilp", "highs", "highs stopped: its time limit was reached"),
    ("ilp", "cbc", "cbc stopped: its time limit was reached"),
    ("cpsat", "highs", "CP-SAT found a plan; "),
])
def test_a_plan_the_limit_left_unproved_says_what_stopped_the_solver(
        algo: str, solver: str, said: str, tmp_path: Path) -> None:
    """Before: a run its time limit ended printed `feasible` and a gap, and `why` said only
    "no proof of optimality", as for a plan whose solver was never going to prove it: the
    user could not tell that a longer --time-limit might close the gap."""
    from planner.algorithms.exact import backends

    from .instances import layered_problem

    if not backends.available(solver):
        pytest.skip(f"{solver} is not installed (solvers/install.sh)")
    sol = run(algo, layered_problem(7, 60, 4), Options(solver=solver, time_limit_s=1.0))
    assert sol.status == "feasible"
    assert sol.info["why"].startswith(f"no proof of optimality; {said}"), sol.info["why"]
    if algo == "cpsat":
        assert ("work limit (from --time-limit) ended the search" in sol.info["why"]) != (
            "safety cap" in sol.info["why"])


def test_the_terminal_shows_why_a_solver_plan_is_not_proved(tmp_path: Path) -> None:
    from tests.cli.helpers import invoke

    spec = tmp_path / "s.plan"
    spec.write_text(SPEC.read_text())
    code, out, _ = invoke(["solve", "s.plan", "--plan", "six_device", "--algo", "cpsat"],
                          tmp_path)
    assert code == 0 and "feasible" in out
    assert "why" in out and "contention none" in out, out


JOBS = """cluster duo { device gpu[0..1] { memory 1 GiB }
              link gpu0 <-> gpu1 { bandwidth 1 GB/s  latency 0 us } }
graph jobs {
  op a { time 3 ms }
  op b { time 3 ms }
  op c { time 2 ms }
  op d { time 2 ms }
  op e { time 2 ms }
}
plan p { graph jobs  cluster duo  contention none }
"""


@pytest.mark.parametrize("algo", ["cpsat", "ilp"])
def test_a_solver_stopped_at_gap_proves_objective_times_1_minus_gap(algo: str) -> None:
    """Five jobs on two devices: the optimum is 6 ms (3 + 3 | 2 + 2 + 2). At `--gap 0.15`
    the solvers stop at 7 ms; the bound objective / (1 + gap) was 6.087 ms, above the
    optimum, and "at most 15.0% above optimal" was false (16.7%). The solvers measure
    their gap against the incumbent, (O - B) / O, which proves O (1 - gap)."""
    from planner.plan import Plan
    from planner.simulate import simulate

    problem = loads(JOBS).plan()
    sol = run(algo, problem, Options(gap=0.15, time_limit_s=10))
    best = simulate(problem, Plan((0, 0, 1, 1, 1))).makespan_s
    assert best == pytest.approx(6 * MS)
    assert sol.info["bound_s"] <= best * (1 + 1e-12)
    made = simulate(problem, sol.plan).makespan_s
    assert sol.info["gap"] >= (made - best) / best - 1e-12
    assert sol.status == ("optimal" if made <= best * (1 + 1e-6) else "feasible")


ZERO = """cluster c { device d[0..1] { memory 1 GiB }
            link d0 <-> d1 { bandwidth 2 GB/s  latency 1 ms } }
graph g {
  op a { time 1.5 ms  output 1 MB }  op b { time 0.5 ms  output 2 MB }
  op c { time 2 ms    output 1 MB }  op z { time 0 ms    output 1 MB }  # z, y: zero-time
  op e { time 4 ms    output 1 MB }  op y { time 0 ms    output 2 MB }
  a -> b -> z -> y  b -> e  c -> e
}
plan p { graph g  cluster c  contention none }
"""


def test_a_zero_time_op_inside_anothers_interval_proves_nothing() -> None:
    """CP-SAT's NoOverlap lets a zero-time op sit inside another op's interval: it solved
    7.5 ms (optimal for its model), the plan re-timed from its order ran 9 ms, and that
    9 ms, taken as its objective, proved itself: the warm start's 8 ms was called optimal
    with a bound of 8 ms, where a 7.5 ms plan exists (the ILP finds it)."""
    from planner.plan import Plan
    from planner.simulate import simulate

    problem = loads(ZERO).plan()
    best = simulate(problem, Plan((0, 0, 1, 0, 0, 0))).makespan_s
    assert best == pytest.approx(7.5 * MS)
    for algo in ("cpsat", "ilp"):
        sol = run(algo, problem, Options(time_limit_s=10))
        made = simulate(problem, sol.plan).makespan_s
        assert sol.info["bound_s"] <= best * (1 + 1e-12), algo
        assert sol.status != "optimal" or made <= best * (1 + 1e-6), algo
        assert sol.info["objective_s"] == pytest.approx(7.5 * MS), algo  # the solver's
