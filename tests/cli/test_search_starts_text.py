"""`auto`'s search from several starts: the text output says each start's moves and which
start won, on a `search` line under `algorithm`."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from planner.algorithms import auto

from .helpers import ROOT, invoke


@pytest.mark.slow
def test_the_search_line_names_each_start_and_the_winner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Inception-v2 on small4 at 36% of its memory (8 GiB * 0.36, whole bytes): with a 3 s
    # limit cpop's search stalls with moves left, which m-ETF's, then HEFT's plan get
    monkeypatch.setattr(auto, "cap", lambda limit: math.inf)  # the budget alone ends it
    (tmp_path / "clusters").mkdir()
    for name in ("small4", "pcie4"):
        shutil.copy(ROOT / "specs" / "clusters" / f"{name}.plan", tmp_path / "clusters")
    small4 = tmp_path / "clusters" / "small4.plan"
    small4.write_text(small4.read_text().replace("memory 8 GiB", "memory 3092376453 B"))
    shutil.copy(ROOT / "specs" / "inception.plan", tmp_path)
    code, out, err = invoke(["solve", str(tmp_path / "inception.plan"), "--plan",
                             "inception_v2_small4", "--algo", "auto", "--time-limit", "3"],
                            tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    at = next(k for k, line in enumerate(lines) if line.startswith("algorithm"))
    assert lines[at + 1].startswith("search ")
    text = " ".join(line.split(maxsplit=1)[-1] if k == 0 else line.strip()
                    for k, line in enumerate(lines[at + 1:at + 4]))
    assert "from 3 starts" in text
    assert "cpop 4379 moves, metf 6611, heft 4389 (its budget)" in text
    assert "the best from heft (113.644 ms)" in text
