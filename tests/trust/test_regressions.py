"""Regression tests for issue 10 (trustworthy plans): each from a number found on main."""

from __future__ import annotations

from pathlib import Path

import pytest

import planner
from planner.algorithms import run
from planner.errors import InfeasibleError
from planner.plan import Plan
from planner.simulate import simulate
from planner.spec.checks import memory_diagnostics
from planner.spec.load import load_path

README = Path(__file__).resolve().parents[2] / "README.md"
GiB = 2**30
MIB = 2**20

#: every algorithm that places by itself (the exact ones are tested in tests/exact)
PLACERS = ("msct", "metf", "mtopo", "heft", "cpop", "single", "roundrobin", "random")


def _readme_tiny(tmp_path: Path) -> planner.Problem:
    """The README's own `tiny.plan` and its `clusters/dgx1.plan`, taken from the README."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line in README.read_text().splitlines(keepends=True):
        if line.startswith("```"):
            if current is not None:
                blocks.append("".join(current))
            current = [] if current is None else None
        elif current is not None:
            current.append(line)
    cluster = next(b for b in blocks if b.startswith("# clusters/dgx1.plan"))
    tiny = next(b for b in blocks if b.startswith('import "clusters/dgx1.plan"'))
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "dgx1.plan").write_text(cluster)
    (tmp_path / "tiny.plan").write_text(tiny)
    return planner.load(tmp_path / "tiny.plan").plan()


# ---- item 1: m-SCT and m-ETF on devices of different speeds -------------------------------

#: by hand: `input` is pinned to cpu0 (speed 0.05): 0.05 ms / 0.05 = 1 ms. Its 6 MiB cross
#: the 96 Gbps (12 GB/s), 10 us link: 0.01 + 6 * 2**20 / 12e9 * 1e3 ms. conv1 (2.4 GFLOP at
#: 15.7 TFLOPS), conv2 (0.9 ms) and the head (0.3 ms, colocated with conv2) follow on one
#: GPU, conv1's 2 MiB to the head being local.
TINY_BEST_S = (1.0 + 0.01 + 6 * MIB / 12e9 * 1e3 + 2.4e9 / 15.7e12 * 1e3 + 0.9 + 0.3) / 1e3


@pytest.mark.parametrize("algorithm", ["msct", "metf"])
def test_etf_rules_do_not_collapse_onto_a_slow_device(tmp_path: Path, algorithm: str) -> None:
    problem = _readme_tiny(tmp_path)
    plan = run(algorithm, problem).plan
    sim = simulate(problem, plan)
    assert sim.feasible
    devices = problem.cluster.devices
    # on main both put every op on cpu0: 33.0 ms (input 1 ms, then conv1..head at 1/20 speed)
    assert {devices[d].name for d in plan.placement[1:]} != {"cpu0"}
    assert sim.makespan_s == pytest.approx(TINY_BEST_S, rel=1e-9)
    assert sim.makespan_s == pytest.approx(simulate(problem, run("heft", problem).plan).makespan_s)


# ---- item 2: the plan's memory model is used by check and by every algorithm ---------------

CHAIN = """
cluster one { device gpu0 { memory 3 GiB } }
graph chain {
  op a { time 1 ms  output 1 GiB }
  op b { time 1 ms  output 1 GiB }
  op c { time 1 ms  output 1 GiB }
  op d { time 1 ms  output 1 GiB }
  op e { time 1 ms  output 1 GiB }
  a -> b -> c -> d -> e
}
plan p { graph chain  cluster one  memory MODEL }
"""


def test_liveness_chain_passes_check_and_every_algorithm_finds_the_plan() -> None:
    problem = planner.loads(CHAIN.replace("MODEL", "liveness")).plan()
    assert memory_diagnostics(problem) == []  # on main: E303 "needs at least 5.00 GiB"
    for algorithm in PLACERS:
        sim = simulate(problem, run(algorithm, problem).plan)
        assert sim.feasible, algorithm
        # op k runs holding its input (k-1's output) and its own output: 2 GiB at the peak
        assert sim.memory_peak_bytes == (2 * GiB,), algorithm
        assert sim.makespan_s == pytest.approx(5e-3)


def test_static_chain_is_proved_infeasible_by_check_and_solve_alike() -> None:
    problem = planner.loads(CHAIN.replace("MODEL", "static")).plan()
    (proof,) = memory_diagnostics(problem)
    assert proof.code == "E303"
    assert "needs at least 5.00 GiB (5368709120 B)" in proof.message
    for algorithm in PLACERS:
        with pytest.raises(InfeasibleError) as err:
            run(algorithm, problem)
        assert [d.code for d in err.value.diagnostics] == ["E303"], algorithm


def test_liveness_proofs_count_what_a_sink_never_frees() -> None:
    # five unconnected ops: five sinks of 1.5 GiB, none ever freed: 7.5 GiB > 3 GiB at the end
    text = CHAIN.replace("MODEL", "liveness").replace(
        "a -> b -> c -> d -> e", "").replace("output 1 GiB", "output 1.5 GiB")
    problem = planner.loads(text).plan()
    (proof,) = memory_diagnostics(problem)
    assert proof.code == "E303"
    assert "needs at least 7.50 GiB" in proof.message
    sim = simulate(problem, Plan((0,) * 5))  # the only placement: the simulator agrees
    assert sim.memory_peak_bytes == (int(7.5 * GiB),)
    with pytest.raises(InfeasibleError) as err:
        run("metf", problem)
    assert [d.code for d in err.value.diagnostics] == ["E303"]


# ---- item 3: check passes nothing that solve proves infeasible -----------------------------

PINNED = """
cluster c {
  device gpu0 { memory 10 MB }
  device gpu1 { memory 10 MB }
  link gpu0 <-> gpu1 { bandwidth 10 GB/s }
}
graph g {
  op a { time 1 ms  output 6 MB }
  op b { time 1 ms  output 6 MB }
  a -> b
}
plan p { graph g  cluster c  pin a, b to gpu0 }
"""


def test_ops_pinned_together_over_the_cap_are_caught_by_check(tmp_path: Path) -> None:
    (tmp_path / "pins.plan").write_text(PINNED)
    loaded = load_path(tmp_path / "pins.plan")
    problem = loaded.spec.plan()
    (diag,) = memory_diagnostics(problem, loaded.locations)
    # on main `check` said ok while `solve --algo metf` said E703 (11.44 MiB > 9.54 MiB)
    assert diag.code == "E302"
    assert "need at least 11.44 MiB (12000000 B) together but it holds 9.54 MiB" in diag.message
    assert diag.span is not None and diag.span.line == 12  # at the pin
    for algorithm in PLACERS:
        with pytest.raises(InfeasibleError) as err:
            run(algorithm, problem)
        assert [d.code for d in err.value.diagnostics] == ["E302"], algorithm


def test_exact_solvers_claim_no_proof_under_liveness() -> None:
    # a -> b -> c, 1.5 GiB outputs, one 3 GiB device: static memory counts 4.5 GiB, but
    # under liveness a's output is freed once b ends, so the chain runs within 3 GiB (the
    # simulator says so) and no proof of the checks fires; the exact models count static
    # memory, stricter than liveness: their infeasibility is no proof, so they keep the
    # warm start's plan instead of claiming none exists (E813)
    problem = planner.loads("""
    cluster one { device gpu0 { memory 3 GiB } }
    graph g { op a { time 1 ms output 1.5 GiB } op b { time 1 ms output 1.5 GiB }
              op c { time 1 ms output 1.5 GiB } a -> b -> c }
    plan p { graph g cluster one memory liveness }
    """).plan()
    assert memory_diagnostics(problem) == []
    assert simulate(problem, Plan((0, 0, 0))).feasible  # a plan exists
    for algorithm in ("cpsat", "ilp"):
        solution = run(algorithm, problem, planner.algorithms.Options(time_limit_s=2.0))
        assert solution.status == "fallback" and "static memory" in solution.info["reason"]
        assert simulate(problem, solution.plan).feasible
