"""When the wall clock cuts a search, the text output says so (before: only `--json`)."""

from __future__ import annotations

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

