"""`planner diff`: two plans that place every op alike but run a device's ops in another
order. Before: "0 op(s) moved", no word of the order, and E645's hint sent the reviewer to
"the ops that moved" (there were none)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .helpers import invoke

# a (1 ms) feeds b on gpu1; c (2 ms) needs nothing: c before a on gpu0 delays b by 2 ms
SPEC = """
cluster c { device gpu[0..1] { memory 3 MB } link gpu0 <-> gpu1 { bandwidth 1 GB/s } }
graph g {
  op a { time 1 ms  output 1 KB }  op c { time 2 ms  output 1 KB }
  op b { time 1 ms  output 1 KB }  op d { time 1 us  output 1 KB }
  a -> b
}
plan p { graph g cluster c  contention none }
"""
PLACED = {"a": "gpu0", "c": "gpu0", "d": "gpu0", "b": "gpu1"}


def _plan(tmp: Path, name: str, order: dict[str, list[str]],
          placement: dict[str, str] | None = None) -> None:
    data: dict[str, Any] = {"format": "planner.plan", "version": 1, "plan": "p",
                            "algorithm": "test", "placement": placement or PLACED}
    if order:
        data["order"] = order
    (tmp / name).write_text(json.dumps(data))


@pytest.fixture
def plans(tmp_path: Path) -> Path:
    (tmp_path / "s.plan").write_text(SPEC)
    _plan(tmp_path, "old.json", {"gpu0": ["a", "c", "d"], "gpu1": ["b"]})
    _plan(tmp_path, "new.json", {"gpu0": ["c", "a", "d"], "gpu1": ["b"]})
    return tmp_path


def test_a_reordered_device_is_listed_and_the_gate_says_so(plans: Path) -> None:
    args = ["diff", "old.json", "new.json", "--spec", "s.plan", "--fail-if-slower", "0"]
    code, out, err = invoke(args, plans)
    assert code == 5, err
    assert "0 of 4 op(s) moved\n1 device(s) whose order changed:\n" \
           "  gpu0: 2 of 3 ops changed position\n" in out
    assert "error[E645]: the new plan is 33.32% slower" in err
    assert "hint: look at the devices whose order changed: `planner diff OLD NEW` prints " \
           "them" in err
    assert "the ops that moved" not in err
    code, out, _ = invoke([*args, "--format", "json"], plans)
    doc = json.loads(out)["result"]
    assert doc["moved"] == [] and doc["reordered"] == [
        {"device": "gpu0", "ops_changed_position": 2, "ops_kept": 3}]


def test_ops_that_moved_reorder_no_device(plans: Path) -> None:
    """c leaves gpu0 for gpu1: a and d keep their order, the hint names the moved op."""
    _plan(plans, "moved.json", {"gpu0": ["a", "d"], "gpu1": ["c", "b"]},
          {**PLACED, "c": "gpu1"})
    code, out, err = invoke(["diff", "new.json", "moved.json", "--spec", "s.plan",
                             "--fail-if-slower", "0"], plans)
    doc = json.loads(invoke(["diff", "new.json", "moved.json", "--format", "json"],
                            plans)[1])["result"]
    assert doc["reordered"] == [] and "order changed" not in out
    # faster (c no longer delays a): no gate to fail
    assert code == 0 and doc["moved"] == [{"op": "c", "from": "gpu0", "to": "gpu1"}], err
    code, _, err = invoke(["diff", "moved.json", "new.json", "--spec", "s.plan",
                           "--fail-if-slower", "0"], plans)
    assert code == 5 and "hint: look at the ops that moved: `planner diff" in err, err


def test_solve_json_reports_compare_the_order_their_devices_ran(plans: Path) -> None:
    """A `--json` report's order is each device's `ops`, as `simulate --placement` reads it."""
    for name in ("old", "new"):
        code, out, err = invoke(["simulate", "s.plan", "--placement", f"{name}.json",
                                 "--json"], plans)
        assert code == 0, err
        (plans / f"{name}.sim.json").write_text(out)
    code, out, _ = invoke(["diff", "old.sim.json", "new.sim.json"], plans)
    assert code == 0 and "  gpu0: 2 of 3 ops changed position\n" in out, out


def test_a_plan_without_an_order_is_not_called_reordered(plans: Path) -> None:
    """A bare placement lets the simulator choose (here a before c): its order is not
    known, and the hint says so rather than point at a list that is empty."""
    _plan(plans, "bare.json", {})
    args = ["diff", "bare.json", "new.json", "--spec", "s.plan", "--fail-if-slower", "0"]
    code, out, err = invoke(args, plans)
    assert code == 5 and "order changed" not in out, out
    assert ("hint: no op moved; bare.json gives no order, so the simulator chose one: "
            "`planner simulate SPEC --placement FILE --json` lists the ops each device ran, "
            "in order") in err, err
    code, out, _ = invoke([*args, "--format", "json"], plans)
    assert json.loads(out)["result"]["reordered"] == []
