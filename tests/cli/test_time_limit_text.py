"""When the wall clock cuts a search, or it stalls, the text output says so (before: only
`--json`)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from planner.algorithms import auto, search

from .helpers import ROOT, invoke


@pytest.mark.parametrize("algo", ["auto", "search"])
def test_a_search_the_clock_cut_says_so_in_the_text(algo: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # a clock that has run out by the time the search starts: what a much slower machine
    # than the budget assumes would meet
    monkeypatch.setattr(auto if algo == "auto" else search, "cap",
                        lambda limit: time.monotonic())
    code, out, err = invoke(["solve", str(ROOT / "specs" / "inception.plan"), "--plan",
                             "inception_v2_small4", "--algo", algo, "--time-limit", "5"],
                            tmp_path)
    assert code == 0, err
    reason = next(line for line in out.splitlines() if line.startswith("reason"))
    assert "the time limit ran out" in reason
    assert "may differ" in out  # the row wraps: the rest of the sentence follows



@pytest.mark.parametrize("stall", [5, 10**9])
def test_a_search_that_stalled_says_so_in_the_text(stall: int, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`auto`'s search stops once `stall` moves in a row found nothing better: the text
    says so in one line where it would say the clock cut it (before: only `--json`'s
    `search`); a search that did not stall has no such line."""
    monkeypatch.setattr(auto, "STALL_MIN", stall)
    monkeypatch.setattr(auto, "STALL_MAX", stall)
    monkeypatch.setattr(auto, "cap", lambda limit: math.inf)  # the budget alone ends it
    # one start: with later ones, the `search` line says how each ended (test_search_starts_text)
    monkeypatch.setattr(auto, "_later_starts", lambda ranked: [])
    spec = ROOT / "tests" / "algorithms" / "specs" / "two_tower.plan"
    args = ["solve", str(spec), "--algo", "auto", "--time-limit", "0.4"]  # no CP-SAT
    code, out, err = invoke(args, tmp_path)
    assert code == 0, err
    stopped = [line for line in out.splitlines() if line.startswith("search stopped")]
    if stall > 5:
        assert not stopped, out
        return
    assert len(stopped) == 1 and f"no better plan in the last {stall} moves" in stopped[0], out
    code, out, err = invoke([*args, "--json"], tmp_path)
    assert json.loads(out)["result"]["stopped"] == f"no better plan in the last {stall} moves"


@pytest.mark.parametrize("revisits", [50, 10**9])
def test_a_search_with_no_new_placement_left_says_so_in_the_text(
        revisits: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The annealing stops after `MAX_REVISITS` moves in a row to placements seen before,
    short of its budget: the text says so in one line, as a stall (before: nowhere, not in
    `--json` either); where it does not stop so, no such line."""
    monkeypatch.setattr(search, "MAX_REVISITS", revisits)
    monkeypatch.setattr(search, "cap", lambda limit: math.inf)  # the budget alone ends it
    spec = ROOT / "tests" / "algorithms" / "specs" / "two_tower.plan"
    args = ["solve", str(spec), "--algo", "search", "--time-limit", "0.2"]
    code, out, err = invoke(args, tmp_path)
    assert code == 0, err
    stopped = [line for line in out.splitlines() if line.startswith("search stopped")]
    assert not any(line.startswith("reason") for line in out.splitlines()), out
    if revisits > 50:
        assert not stopped, out
        return
    assert len(stopped) == 1 and search.REVISITED in stopped[0], out
    code, out, err = invoke([*args, "--json"], tmp_path)
    result = json.loads(out)["result"]
    assert result["stopped"] == (f"{search.REVISITED} its last 50 moves in a row came back "
                                 "to placements seen before")
    assert result["moves"] < result["budget_moves"]
