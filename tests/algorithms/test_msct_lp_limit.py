"""m-SCT past its LP's iteration limit: favourites from the critical path, still a plan."""

from __future__ import annotations

import subprocess
import sys

import pytest
from algo_support import check_plan, load_spec

import planner
from planner.algorithms import msct, run
from planner.algorithms.listsched import Instance, upward_rank

FORK = """
cluster c { device gpu[0..1] { memory 1 GB }  link gpu[*] <-> gpu[*] { bandwidth 1 GB/s } }
graph g {
  op a { time 1 ms  output 1 MB }
  op b { time 1 ms }
  op c { time 5 ms }
  op d { time 5 ms }
  a -> b
  a -> c -> d
}
plan p { graph g  cluster c }
"""


def test_the_critical_child_is_the_one_on_the_longest_path() -> None:
    problem = planner.loads(FORK).plan()
    inst = Instance.of(problem)
    fav = msct.critical_children(inst, upward_rank(inst))
    # a's children: b (1 ms to the end) and c (10 ms): c; c's only child d
    assert fav == [2, -1, 3, -1]


@pytest.mark.parametrize("fixture", ["forkjoin", "sct", "coloc"])
def test_an_lp_over_its_iteration_limit_still_gives_a_feasible_plan(
        monkeypatch: pytest.MonkeyPatch, fixture: str) -> None:
    def too_large(inst: Instance) -> None:
        raise msct._LpTooLarge  # what lp_relaxation raises past its iteration limit

    monkeypatch.setattr(msct, "lp_relaxation", too_large)
    problem = load_spec(fixture)
    sol = run("msct", problem)
    assert sol.info["favourites_by"].startswith("critical path")
    assert sol.info["lp_makespan_s"] is None
    check_plan(problem, sol.plan)


def test_the_iteration_limit_stops_a_hard_lp() -> None:
    # a random DAG with long edges: HiGHS needs more simplex iterations than rows
    import random

    rng = random.Random(0)
    ops = "\n".join(f"op o{i} {{ time {rng.randint(1, 99)} us  output {rng.randint(1, 64)} "
                    "MiB }" for i in range(600))
    edges = sorted({(rng.randint(max(0, b - 64), b - 1), b)
                    for b in (rng.randint(1, 599) for _ in range(1200))})
    chain = "\n".join(f"o{a} -> o{b}" for a, b in edges)
    problem = planner.loads(FORK.split("graph")[0] + f"graph g {{ {ops}\n{chain} }}\n"
                            "plan p { graph g  cluster c }").plan()
    inst = Instance.of(problem)
    with pytest.raises(msct._LpTooLarge):
        msct.lp_relaxation(inst)


def test_lp_runs_after_another_highs_model_ran_in_the_process(tmp_path) -> None:
    # HiGHS keeps one task scheduler per process: m-SCT's LP used to ask for 1 thread and
    # fail ("Not Set", E710) whenever another HiGHS model had run first with the default.
    # A fresh process, so that the other model really is the first to run.
    (tmp_path / "s.plan").write_text(FORK)
    script = """
import sys, highspy, planner
from planner.algorithms import run
from planner.simulate import simulate
other = highspy.Highs()
other.setOptionValue("output_flag", False)
x = other.addVariable(lb=0.0)
other.addConstr(x >= 1)
other.run()
problem = planner.load(sys.argv[1]).plan()
sol = run("msct", problem)
print(sol.info["favourites_by"], simulate(problem, sol.plan).feasible)
"""
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "s.plan")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["lp", "True"]



@pytest.mark.parametrize("fixture", ["forkjoin", "sct", "coloc", "topcuoglu", "two_tower"])
def test_the_lp_size_auto_expects_is_the_lp_m_sct_solves(fixture: str) -> None:
    from planner.algorithms import lpsize

    problem = load_spec(fixture)
    lp, _ = msct._lp_model(Instance.of(problem))
    assert lpsize.lp_rows(problem) == lp.num_row
    per_iteration = (lpsize.LP_SECONDS_PER_ITERATION
                     + lpsize.LP_SECONDS_PER_ROW_ITERATION * lp.num_row)
    worst = lpsize.LP_ITERATIONS_PER_ROW * lp.num_row * per_iteration
    assert lpsize.lp_seconds_at_most(problem) == pytest.approx(worst)


def test_no_lp_is_expected_where_m_sct_solves_none(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from planner.algorithms import lpsize

    problem = load_spec("forkjoin")
    one = dataclasses.replace(problem, cluster=dataclasses.replace(
        problem.cluster, devices=problem.cluster.devices[:1], links=()))
    assert lpsize.lp_seconds_at_most(one) == 0.0
    monkeypatch.setattr(lpsize, "LP_MAX_EDGES", len(problem.graph.edges) - 1)
    assert lpsize.lp_seconds_at_most(problem) == 0.0


def test_auto_expects_m_sct_to_take_its_lp_at_its_worst() -> None:
    """A random 10,000-op DAG whose edges span up to 64 ops (bench_parse's): m-SCT's LP
    runs to its iteration limit, about 6 s on this machine, where the size alone said 0.5 s;
    `auto --time-limit 1` then planned for 7.8 s and `--time-limit 10` for 13.9 s."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        from bench_parse import generate
    finally:
        sys.path.pop(0)
    from planner.algorithms import portfolio
    from planner.algorithms.lpsize import lp_seconds_at_most

    problem = planner.loads(generate(10_000)).plan()
    lp = lp_seconds_at_most(problem)
    assert lp > 4.0
    size = len(problem.graph.ops) + len(problem.graph.edges)
    assert portfolio.estimated_seconds(problem, "msct") == pytest.approx(
        portfolio.SECONDS_PER_ELEMENT["msct"] * size + lp)
    skipped = portfolio.within(problem, portfolio.CANDIDATES, 1.0)
    assert "msct" in skipped
    kept = [n for n in portfolio.CANDIDATES if n not in skipped]
    assert sum(portfolio.estimated_seconds(problem, n) for n in kept) <= 1.0
    assert "msct" in portfolio.within(problem, portfolio.CANDIDATES, 10.0)
