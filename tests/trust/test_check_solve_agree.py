"""`check` and `solve` agree: one set of placement facts, one set of proofs (issue 10, item 3).

Random small specs, written as text and loaded as a user's would be:
- whenever an algorithm proves a problem infeasible, `check` reports the same proofs (and
  whenever `check` reports a proof, no algorithm returns a plan);
- whenever `check` reports none and some placement is valid (found by trying every
  placement in the simulator, an oracle independent of the algorithms), `auto` finds a plan.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import planner
from planner.algorithms import Options, run
from planner.errors import InfeasibleError
from planner.plan import Plan
from planner.simulate import simulate
from planner.spec.checks import memory_diagnostics
from planner.spec.load import load_text

HEURISTICS = ("msct", "metf", "mtopo", "heft", "cpop", "single", "roundrobin", "random")
PROOF_CODES = {"E301", "E302", "E303", "E304", "E305", "E306", "E307"}
PROPERTY = settings(deadline=None, max_examples=200,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@st.composite
def specs(draw: st.DrawFn) -> str:
    """A spec text: 1-3 devices (gpu or cpu kind), 1-6 ops, random memory, pins, groups."""
    m = draw(st.integers(1, 3))
    kinds = [draw(st.sampled_from(["gpu", "cpu"])) for _ in range(m)]
    lines = ["cluster c {"]
    for d in range(m):
        lines.append(f"  device d{d} {{ kind {kinds[d]}  memory {draw(st.integers(2, 24))} MB }}")
    for a in range(m):
        for b in range(a + 1, m):
            lines.append(f"  link d{a} <-> d{b} {{ bandwidth 1 GB/s  latency 1 us }}")
    lines.append("}")
    n = draw(st.integers(1, 6))
    lines.append("graph g {")
    for i in range(n):
        if "cpu" in kinds and draw(st.integers(0, 4)) == 0:
            time = "time[cpu] 2 ms"  # runs on cpu devices only
        else:
            time = f"time {draw(st.integers(0, 3))} ms"
        lines.append(f"  op o{i} {{ {time}  params {draw(st.integers(0, 4))} MB  "
                     f"output {draw(st.integers(0, 8))} MB  temp {draw(st.integers(0, 3))} MB }}")
    for j in range(1, n):
        for i in range(j):
            if draw(st.integers(0, 2)) == 0:
                lines.append(f"  o{i} -> o{j}")
    if n > 1 and draw(st.booleans()):
        a, b = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
        lines.append(f"  colocate o{a}, o{b}")
    lines.append("}")
    memory = draw(st.sampled_from(["static", "liveness"]))
    lines.append(f"plan p {{ graph g  cluster c  memory {memory}  contention none")
    for i in range(n):
        if draw(st.integers(0, 4)) == 0:
            lines.append(f"  pin o{i} to d{draw(st.integers(0, m - 1))}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _some_valid_placement(problem: planner.Problem) -> bool:
    n, m = len(problem.graph.ops), len(problem.cluster.devices)
    return any(simulate(problem, Plan(p)).feasible
               for p in itertools.product(range(m), repeat=n))


@pytest.mark.slow
@PROPERTY
@given(specs())
def test_check_and_every_algorithm_agree(text: str) -> None:
    try:
        loaded = load_text(text)
    except planner.SpecError:
        return  # lowering's own errors (e.g. colocated ops pinned apart): not this property
    problem = loaded.spec.plan()
    checked = {d.code for d in memory_diagnostics(problem)}
    event("check: " + (", ".join(sorted(checked)) or "no proof"))
    for name in (*HEURISTICS, "auto"):
        options = Options(time_limit_s=5.0)
        try:
            plan = run(name, problem, options).plan
        except InfeasibleError as err:
            codes = {d.code for d in err.diagnostics}
            proved = codes & PROOF_CODES
            assert proved <= checked, (name, codes, checked, text)
            if name == "auto" and not checked:
                assert not _some_valid_placement(problem), (
                    "auto found no plan although one exists", codes, text)
            continue
        assert not checked, (f"{name} returned a plan that check proves impossible", text)
        if name == "auto":
            event(f"auto: a plan ({problem.memory_model})")
        sim = simulate(problem, plan)
        assert sim.feasible, (name, [v.message for v in sim.violations], text)
