"""Memory in proportion to the input (issue 29, finding 4): plans that share a graph and a
cluster share its cost table, and `check` drops each plan's tables once it is checked.
Before: a 5,000-op chain with 2,000 plans differing by one pin (375 KB) took `check` to
3.3 GB and 23 s; 5,000 plans (535 KB), 8.2 GB and 61 s. The test checks 250 plans: enough
to tell (~1 MB of tables a plan kept, 38 MiB all told when dropped), half the CPU of 500."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from planner.cost import costs
from planner.spec.checks import plan_diagnostics
from planner.spec.load import load_path, load_text


def _chain(ops: int, plans: int) -> str:
    lines = ["cluster c {", "  device gpu0 { memory 1 GiB }", "  device gpu1 { memory 1 GiB }",
             "  link gpu0 <-> gpu1 { bandwidth 10 GB/s }", "}", "graph g {"]
    lines += [f"  op o{i} {{ time 1 ms  output 100 KB }}" for i in range(ops)]
    lines += [f"  o{i} -> o{i + 1}" for i in range(ops - 1)]
    lines.append("}")
    lines += [f"plan p{k} {{ graph g  cluster c  pin o{k} to gpu0 }}" for k in range(plans)]
    return "\n".join(lines) + "\n"


def test_plans_of_one_graph_and_cluster_share_one_cost_table() -> None:
    spec = load_text(_chain(20, 3) + "cluster d {\n  device x { memory 1 GiB  speed 2 }\n}\n"
                     "plan q { graph g  cluster d }\n").spec
    p0, p1, q = spec.plans["p0"], spec.plans["p1"], spec.plans["q"]
    assert costs(p0) is costs(p1)
    assert costs(q) is not costs(p0) and costs(q).compute[0] == (0.0005,)


def test_check_drops_each_plans_tables_once_checked(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(_chain(50, 10).replace("100 KB", "100 MB"))
    loaded = load_path(tmp_path / "s.plan")
    found = plan_diagnostics(loaded.spec.plans.values(), loaded.locations)
    assert len(found) == 10 and {d.code for d in found} == {"E303"}  # 5 GB on 2 GiB
    for problem in loaded.spec.plans.values():
        assert not [k for k in vars(problem) if k.startswith("_")], vars(problem).keys()


@pytest.mark.slow
def test_check_of_many_plans_of_a_large_graph_stays_small(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(_chain(5000, 250))
    measure = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
               "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    proc = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "planner",
                           "check", "s.plan"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, check=False)
    code, peak_kib = map(int, proc.stdout.split()[-2:])
    assert code == 0, proc.stderr
    # 500 plans before: 846 MiB (1.7 MB of tables a plan, all kept); now 36 MiB. 250 plans
    # with the tables shared but not dropped (`forget` a no-op): 279 MiB; now 38 MiB
    assert peak_kib / 1024 < 150, f"check peaked at {peak_kib / 1024:.0f} MiB"
