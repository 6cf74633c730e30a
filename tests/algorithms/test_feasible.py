"""Every algorithm on every fixture spec (and the repo's specs) under every contention mode:
the simulator finds the plan feasible and no faster than the lower bound."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pytest
from algo_support import ALL, HEURISTICS, SPECS, check_plan, load_spec

import planner
from planner.algorithms import Options, run
from planner.errors import InfeasibleError, SpecError
from planner.model import CONTENTIONS, Problem

FIXTURES = sorted(p.stem for p in SPECS.glob("*.plan"))
#: fixtures whose plan places every op (`place`/`pin`), so `expert` applies
EXPERT_READY = {"chain", "pins"}
REPO_SPECS = Path(__file__).resolve().parents[2] / "specs"
MAX_REPO_OPS = 600  # larger repo specs run under their own contention mode only (speed)


@pytest.mark.parametrize("contention", CONTENTIONS)
@pytest.mark.parametrize("fixture", FIXTURES)
@pytest.mark.parametrize("algorithm", ALL)
def test_plan_is_feasible_and_above_the_bound(algorithm: str, fixture: str,
                                               contention: str) -> None:
    problem = dataclasses.replace(load_spec(fixture), contention=contention)
    if algorithm == "expert" and fixture not in EXPERT_READY:
        with pytest.raises(SpecError) as err:
            run(algorithm, problem)
        assert err.value.diagnostics[0].code == "E506"
        return
    if algorithm == "single" and fixture == "tight":  # 286 MiB of ops, 128 MiB devices
        with pytest.raises(InfeasibleError) as err:
            run(algorithm, problem)
        assert err.value.diagnostics[0].code == "E706"
        return
    solution = run(algorithm, problem)
    assert solution.plan.algorithm == algorithm
    result = check_plan(problem, solution.plan)
    for i, d in problem.pins.items():
        assert solution.plan.placement[i] == d
    for group in problem.graph.colocations:
        assert len({solution.plan.placement[i] for i in group}) == 1
    if contention == "none" and solution.plan.start_s is not None:
        # re-timed start times are exactly what the simulator does without contention
        assert result.start_s == pytest.approx(solution.plan.start_s, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("algorithm", HEURISTICS)
def test_liveness_plans_are_feasible(algorithm: str) -> None:
    # static accounting bounds the liveness peak, so memory checks stay valid
    for fixture in ("tight", "diamond", "coloc"):
        if algorithm == "single" and fixture == "tight":
            continue
        problem = dataclasses.replace(load_spec(fixture), memory_model="liveness")
        check_plan(problem, run(algorithm, problem).plan)


@pytest.mark.parametrize("algorithm", ALL)
def test_same_input_same_plan(algorithm: str) -> None:
    fixture = "pins" if algorithm == "expert" else "forkjoin"
    a = run(algorithm, load_spec(fixture), Options(seed=7)).plan
    b = run(algorithm, load_spec(fixture), Options(seed=7)).plan
    assert a == b


def test_random_depends_on_the_seed_only() -> None:
    problem = load_spec("forkjoin")
    plans = {run("random", problem, Options(seed=s)).plan.placement for s in range(6)}
    assert len(plans) > 1
    assert run("random", problem, Options(seed=3)).plan == run(
        "random", problem, Options(seed=3)).plan


def test_expert_keeps_the_given_placement() -> None:
    problem = load_spec("pins")
    plan = run("expert", problem).plan
    names = {op.name: plan.placement[i] for i, op in enumerate(problem.graph.ops)}
    dev = problem.cluster.device_index
    assert names == {"input": dev["cpu0"], "stem": dev["gpu0"], "a": dev["gpu0"],
                     "b": dev["gpu1"], "merge": dev["gpu1"], "head": dev["gpu1"]}


def test_expert_names_the_unplaced_ops() -> None:
    with pytest.raises(SpecError) as err:
        run("expert", load_spec("coloc"))
    diag = err.value.diagnostics[0]
    assert diag.code == "E506"  # as `simulate` says of the same spec
    assert "unplaced: `w1`" in diag.message
    assert any("place w1 on DEVICE" in h for h in diag.hints)


def test_single_uses_the_fastest_device_and_keeps_pins() -> None:
    problem = load_spec("hetero")
    solution = run("single", problem)
    dev = problem.cluster.device_index
    load = problem.graph.op_index["load"]
    assert solution.plan.placement[load] == dev["cpu0"]  # pinned
    assert {d for i, d in enumerate(solution.plan.placement) if i != load} == {dev["fast0"]}


#: two independent chains of 2 MB outputs, 1 ms each on the 5 MB GPU, 10 ms on the CPU
LIVE_CHAINS = """
cluster c {
  device gpu0 { kind gpu memory 5 MB }
  device cpu0 { kind cpu memory 100 MB }
  link gpu0 <-> cpu0 { bandwidth 1 GB/s latency 0.1 ms }
}
graph g {
""" + "".join(f"  op {x}{k} {{ time[gpu] 1 ms time[cpu] 10 ms output {2 if x != 'd' else 1} MB }}\n"
              for k in (1, 2) for x in "abcd") + """  a1 -> b1 -> c1 -> d1
  a2 -> b2 -> c2 -> d2
}
plan p { graph g cluster c memory liveness contention none }
"""


def test_single_under_liveness_tries_a_chain_after_chain_order() -> None:
    """Dynamic dispatch runs the chains' ops in turn, every chain's tensors alive at once (6
    MB on the 5 MB GPU): before, `single` put all on the CPU, 80 ms; one chain after the
    other holds 5 MB, 8 ms (a helper's case: `auto` and `search` planned 15.1 ms)."""
    problem = planner.loads(LIVE_CHAINS).plan("p")
    solution = run("single", problem)
    assert set(solution.plan.placement) == {problem.cluster.device_index["gpu0"]}
    result = check_plan(problem, solution.plan)
    assert result.makespan_s == pytest.approx(0.008)
    assert max(result.memory_peak_bytes) == 5_000_000


@functools.cache
def _repo_problem(path: str, plan: str) -> Problem:
    """A repo spec's plan, parsed once for every algorithm (the problem is immutable)."""
    return planner.load(REPO_SPECS / path).plan(plan)


def _repo_plans() -> list[tuple[str, str]]:
    out = []
    for path in sorted(REPO_SPECS.rglob("*.plan")):
        try:
            spec = planner.load(path)
        except planner.PlannerError:
            continue  # a cluster-only or broken file is the spec tests' business
        for name in spec.plans:
            out.append((str(path.relative_to(REPO_SPECS)), name))
    return out


#: (spec, plan, algorithm) of the repo specs that must be infeasible: the diagnostic's code
#: and the start of its message (`single` cannot fit the whole model on one device of these
#: clusters; the other algorithms and plans must all be feasible)
NO_ONE_DEVICE = ("E706", "no single device holds all")
REPO_INFEASIBLE = {
    ("gnmt.plan", "gnmt8_small4", "single"): NO_ONE_DEVICE,
    ("inception.plan", "inception_v2_small4", "single"): NO_ONE_DEVICE,
    ("resnet.plan", "resnet50_small4", "single"): NO_ONE_DEVICE,
    ("transformer.plan", "transformer_big_dgx1", "single"): NO_ONE_DEVICE,
    ("transformer.plan", "transformer_big_two-nodes", "single"): NO_ONE_DEVICE,
}


def test_the_expected_infeasible_repo_cases_exist() -> None:
    # a renamed spec or plan must not silently turn an expected failure into no case at all
    plans = set(_repo_plans())
    assert {(path, plan) for path, plan, _ in REPO_INFEASIBLE} <= plans
    assert {algo for _, _, algo in REPO_INFEASIBLE} <= set(HEURISTICS)


@pytest.mark.parametrize(("path", "plan"), _repo_plans() or [pytest.param(
    "", "", marks=pytest.mark.skip(reason="no specs in the repo's specs/ yet"))])
@pytest.mark.parametrize("algorithm", HEURISTICS)
def test_repo_specs(path: str, plan: str, algorithm: str) -> None:
    problem = _repo_problem(path, plan)
    small = len(problem.graph.ops) <= MAX_REPO_OPS
    expected = REPO_INFEASIBLE.get((path, plan, algorithm))
    for contention in CONTENTIONS if small else (problem.contention,):
        p = dataclasses.replace(problem, contention=contention)
        if expected is None:
            check_plan(p, run(algorithm, p).plan)  # feasible, simulated, above the bound
            continue
        with pytest.raises(InfeasibleError) as err:
            run(algorithm, p)
        code, message = expected
        diag = err.value.diagnostics[0]
        assert (diag.code, diag.message[:len(message)]) == (code, message), contention
        assert f"all {len(problem.graph.ops)} ops" in diag.message
