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


def test_explain_w640_names_the_exit_status_fmt_check_gives(tmp_path: Path) -> None:
    """W640 is a warning (the command reads on), yet the gate it makes exits non-zero: the
    entry says with which status, and it is the one `fmt --check` returns."""
    spec = tmp_path / "u.plan"
    spec.write_text("graph g {  op a { time 1 ms } }\n")
    status, _, _ = invoke(["fmt", "--check", str(spec)], tmp_path)
    _, out, _ = invoke(["explain", "W640"], tmp_path)
    assert status != 0 and f"then exit {status}" in " ".join(out.split())


def test_an_unknown_code_gets_the_nearest_code_or_the_shape_of_one(tmp_path: Path) -> None:
    """Before: `W646` was told `did you mean W266?` (two digits off; W645 is one), and `xyz`
    got E609 with no hint at all."""
    code, _, err = invoke(["explain", "W646"], tmp_path)
    assert code == 2 and "did you mean `W645`?" in err, err
    for typo in ("xyz", "E²"):
        code, _, err = invoke(["explain", typo], tmp_path)
        assert code == 2 and "error[E609]" in err and "hint: a code is E (error) or W " \
            "(warning) and three digits" in err, err
