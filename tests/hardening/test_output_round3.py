"""Names that come from input files cannot forge output (issue 29, findings 3 and 5):
`planner diff` escapes op, device and plan names from plan files (newlines included, so no
name starts a GitHub workflow command of its own), and `compare --out x.csv` writes a text
cell that a spreadsheet would run as a formula after a `'` (OWASP's "CSV injection"),
which `--resume` reads back as the name it was."""

from __future__ import annotations

import json
from pathlib import Path

from planner.compare import read_rows

from .helpers import invoke

EVIL_OP = "a\n::warning::forged by an op name"
EVIL_DEVICE = "gpu\x1b[31m1\n::error::forged by a device"
SPEC = """cluster c {
  device gpu0 { memory 1 GiB }
  device gpu1 { memory 1 GiB }
  link gpu0 <-> gpu1 { bandwidth 10 GB/s }
}
graph g {
  op x { time 1 ms }
  op y { time 1 ms }
  x -> y
}
plan "=cmd|' /C calc'!A0" { graph g  cluster c }
"""


def _forged(text: str) -> list[str]:
    """Lines a GitHub runner would read as a workflow command we did not write."""
    return [line for line in text.splitlines() if line.lstrip().startswith("::")
            and "forged" in line.split("::", 2)[1]]


def test_diff_escapes_names_from_plan_files(tmp_path: Path) -> None:
    old = {"placement": {EVIL_OP: "gpu0", "b": EVIL_DEVICE}}
    new = {"placement": {EVIL_OP: EVIL_DEVICE, "b": "gpu0"}, "plan": "p\n::warning::forged"}
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    for fmt in ("text", "github"):
        code, out, err = invoke(["diff", "old.json", "new.json", "--format", fmt], tmp_path)
        assert code == 0, out + err
        assert not _forged(out) and not _forged(err), out + err
        assert "\x1b" not in out + err
        assert "a\\n::warning::forged by an op name" in out + err  # shown, escaped


def test_compare_csv_cells_cannot_run_as_formulas(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    args = ["compare", "s.plan", "--algos", "msct,single", "--out", "rows.csv"]
    code, out, err = invoke(args, tmp_path)
    assert code == 0, out + err
    lines = (tmp_path / "rows.csv").read_text().splitlines()[1:]
    cells = [cell for line in lines for cell in line.split(",")]
    assert lines and not any(cell.startswith(("=", "+", "-", "@")) for cell in cells)
    assert all(line.startswith("s.plan,'=cmd|' /C calc'!A0,") for line in lines), lines
    assert {r["plan"] for r in read_rows(tmp_path / "rows.csv")} == {"=cmd|' /C calc'!A0"}
    code, out, err = invoke([*args[:-2], "--resume", "rows.csv"], tmp_path)
    assert code == 0 and "2 from the resume file" in err, out + err


def test_fmt_and_check_neither_follow_nor_show_a_symlink_out_of_the_root(
        tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "elsewhere"
    (repo / ".git").mkdir(parents=True)
    outside.mkdir()
    secret = outside / "secret.plan"
    text = "graph   leaked_TOKEN_ghp_123 {\n  op a { time 1 ms }\n}\n"  # a spec, not canonical
    secret.write_text(text)
    (repo / "link.plan").symlink_to(secret)
    (repo / "ok.plan").write_text("graph g {\n  op a { time 1 ms }\n}\n")
    for args in (["fmt", "."], ["fmt", "--diff", "."], ["fmt", "link.plan"],
                 ["check", "link.plan"]):
        code, out, err = invoke(args, repo)
        assert code == 1 and "E008" in out + err, (args, out + err)
        assert "leaked_TOKEN" not in out + err, (args, out + err)
    assert secret.read_text() == text  # not rewritten
    code, out, err = invoke(["fmt", "--root", str(tmp_path), "link.plan"], repo)
    assert code == 0 and secret.read_text() != text  # a wider root lets fmt in
