"""`planner explain CODE`: one entry of the registry of codes."""

from __future__ import annotations

from pathlib import Path

from planner.codes import CODES

from .helpers import invoke


def test_explain_prints_one_entry_and_rejects_unknown_codes(tmp_path: Path) -> None:
    code, out, _ = invoke(["explain", "w940"], tmp_path)
    assert code == 0
    assert out.splitlines() == [f"W940: {CODES['W940'].meaning}",
                                "layer: importers and generators (W9xx)",
                                "a warning: the command goes on"]
    code, out, _ = invoke(["explain", "E705"], tmp_path)
    assert code == 0 and out.splitlines()[-2:] == ["exit status 1",
                                                   "retired: now reported as E506"]
    code, out, err = invoke(["explain", "E2077"], tmp_path)
    assert (code, out) == (2, "") and "E609" in err and "did you mean `E207`?" in err
