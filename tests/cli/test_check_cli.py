"""`planner check`: exit codes, diagnostics on stderr, JSON output, hostile inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import GOOD, invoke


def test_clean_spec_exits_zero(tmp_path: Path) -> None:
    (tmp_path / "ok.plan").write_text(GOOD)
    code, out, err = invoke(["check", "ok.plan"], tmp_path)
    assert code == 0, err
    assert out == ""
    assert "ok" in err


def test_folder_is_checked_recursively_and_json_lists_diagnostics(tmp_path: Path) -> None:
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    (sub / "ok.plan").write_text(GOOD)
    (sub / "bad.plan").write_text(GOOD.replace("memory 1 GiB", "memory 1"))
    code, out, _ = invoke(["check", "--json", "."], tmp_path)
    assert code == 1
    doc = json.loads(out)
    assert (doc["command"], doc["ok"], doc["exit_code"]) == ("check", False, 1)
    assert doc["result"] == {"files": ["a/b/bad.plan", "a/b/ok.plan"], "errors": 1,
                             "warnings": 0}
    diags = doc["diagnostics"]
    assert [d["code"] for d in diags] == ["E220"]
    d = diags[0]
    assert d["file"].endswith("bad.plan") and (d["line"], d["column"]) == (2, 39)
    assert d["hints"] == ["expected a size such as `16 GiB`"]


def test_op_too_big_for_largest_device_prints_both_figures(tmp_path: Path) -> None:
    (tmp_path / "big.plan").write_text(GOOD.replace("output 1 MiB", "output 2 GiB"))
    code, _, err = invoke(["check", "big.plan"], tmp_path)
    assert code == 1
    assert "error[E301]: op `a` needs at least 2.00 GiB (2147483648 B)" in err
    assert "`gpu0`, holds 1.00 GiB (1073741824 B)" in err
    assert "big.plan:3:14" in err  # the op's declaration


@pytest.mark.parametrize(
    "name, content, code_expected",
    [
        ("empty.plan", b"", None),
        ("junk.plan", bytes(range(256)) * 40, "E004"),
        ("nul.plan", b"graph g {\x00}", "E106"),
        ("nest.plan", b"graph g {" + b"{" * 10_000_000, "E101"),
        ("deep.plan", b"graph g { op a { time 1 ms } " + b"a -> " * 50_000 + b"a }", "E230"),
    ],
)
def test_hostile_input_gives_a_located_diagnostic_never_a_traceback(
    tmp_path: Path, name: str, content: bytes, code_expected: str | None
) -> None:
    (tmp_path / name).write_bytes(content)
    code, out, err = invoke(["check", "--json", name], tmp_path)
    assert "Traceback" not in err
    doc = json.loads(out)
    assert doc["exit_code"] == code
    diags = doc["diagnostics"]
    if code_expected is None:
        assert code == 0 and diags == []
        return
    assert code == 1
    assert diags[0]["code"] == code_expected
    assert diags[0]["line"] >= 1 and diags[0]["column"] >= 1


def test_missing_file_and_directory_as_spec(tmp_path: Path) -> None:
    code, _, err = invoke(["check", "nope.plan"], tmp_path)
    # a file the command line names: no place in it (there is none) and no word of imports
    assert code == 1 and err.startswith("error[E001]: no such file: nope.plan\n"), err
    assert "hint: check the path" in err and "import" not in err
    for argv in (["import", "json", "nope.json", "-o", "x.plan"],
                 ["import", "pipedream", "nope.txt", "-o", "x.plan"]):
        code, _, err = invoke(argv, tmp_path)
        assert code == 1 and err.startswith("error[E001]: no such file: nope."), err
        assert f"current folder, {tmp_path}" in err and "imports are relative" not in err
    (tmp_path / "d.plan").mkdir()
    code, _, err = invoke(["simulate", "d.plan"], tmp_path)
    assert code == 1 and "error[E002]" in err and "is a directory" in err


def test_missing_import_points_at_the_import(tmp_path: Path) -> None:
    (tmp_path / "main.plan").write_text('import "clusters/none.plan"\n')
    code, _, err = invoke(["check", "main.plan"], tmp_path)
    assert code == 1
    assert "main.plan:1:8: error[E001]: no such file" in err


def test_module_entry_point_runs_without_path_lookup(tmp_path: Path) -> None:
    (tmp_path / "bad.plan").write_text("graph g { op a { tiem 1 ms } }")
    proc = subprocess.run([sys.executable, "-m", "planner", "check", "bad.plan"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 1
    assert "bad.plan:1:18: error[E210]: unknown attribute `tiem` in op `a`" in proc.stderr
    assert "did you mean `time`?" in proc.stderr
    assert "Traceback" not in proc.stderr


#: three unknown devices: three errors of one load
THREE_BAD = GOOD.replace("plan p { graph g cluster c }",
                         "plan p { graph g cluster c  place a on gpu7  place b on gpu8 }\n"
                         "plan q { graph g cluster c  place a on gpu9 }")
#: a graph no device can hold, in five plans: six errors of the memory checks, past a load
TOO_BIG = GOOD.replace("op a { time 1 ms output 1 MiB }", "op a { time 1 ms params 8 GiB }") + (
    "".join(f"plan p{i} {{ graph g cluster c }}\n" for i in range(4)))


def _codes_and_counts(tmp_path: Path, *args: str) -> tuple[list[str], int, str]:
    code, out, _ = invoke(["check", "--json", *args], tmp_path)
    doc = json.loads(out)
    assert code == 1 == doc["exit_code"]
    return [d["code"] for d in doc["diagnostics"]], doc["errors"], doc["diagnostics"][-1][
        "message"]


def test_the_diagnostics_limit_is_the_commands_over_every_file(tmp_path: Path) -> None:
    # before: the limit held per file, and not for the memory checks: `--limit
    # diagnostics=2` over two files of three errors showed 2 + 2, each file's E000 in the
    # middle ("fix the ones above"), and over five infeasible plans showed all six
    (tmp_path / "a.plan").write_text(THREE_BAD)
    (tmp_path / "b.plan").write_text(THREE_BAD)
    (tmp_path / "c.plan").write_text(TOO_BIG)
    assert _codes_and_counts(tmp_path, "--limit", "diagnostics=2", "a.plan", "b.plan") == (
        ["E207", "E207", "E000"], 6, "4 more diagnostic(s) not shown")
    assert _codes_and_counts(tmp_path, "--limit", "diagnostics=2", "c.plan") == (
        ["E301", "E303", "E000"], 6, "4 more diagnostic(s) not shown")
    code, _, err = invoke(["check", "--limit", "diagnostics=2", "."], tmp_path)
    assert code == 1 and err.count("error[") == 3 and err.count("error[E000]") == 1
    assert "error[E000]: 10 more diagnostic(s) not shown" in err
    assert err.endswith("checked 3 file(s) (a.plan, b.plan, c.plan): 12 error(s)\n")
    # under the limit, all of them, each once
    assert _codes_and_counts(tmp_path, "a.plan", "c.plan")[:2] == (["E207"] * 3 + ["E301"]
                                                                  + ["E303"] * 5, 9)


def test_a_shared_import_past_the_limit_is_counted_once(tmp_path: Path) -> None:
    (tmp_path / "c.plan").write_text(THREE_BAD)
    for name in ("a.plan", "b.plan"):
        (tmp_path / name).write_text('import "c.plan"\n')
    assert _codes_and_counts(tmp_path, "--limit", "diagnostics=2", "a.plan", "b.plan") == (
        ["E207", "E207", "E000"], 3, "1 more diagnostic(s) not shown")


def test_a_byte_that_is_not_utf8_is_located_in_characters(tmp_path: Path) -> None:
    # before: its column counted bytes (`# café ` is 7 characters, 8 bytes: 2:9, not 2:8),
    # where every other diagnostic, and an editor, counts characters
    data = "graph g {\n# café ".encode() + b"\xff }\n"
    (tmp_path / "u.plan").write_bytes(data)
    code, out, _ = invoke(["check", "--json", "u.plan"], tmp_path)
    (d,) = json.loads(out)["diagnostics"]
    assert (code, d["code"], d["line"], d["column"], d["end_column"]) == (1, "E004", 2, 8, 9)
    code, _, err = invoke(["fmt", "-", "--stdin-filename", "u.plan"], tmp_path, data)
    assert code == 1 and err.startswith("u.plan:2:8: error[E641]: ")


def test_a_file_named_twice_is_checked_and_formatted_once(tmp_path: Path) -> None:
    """`t.plan`, `./t.plan` and the folder holding it are one file: one entry, one W640."""
    (tmp_path / "t.plan").write_text(GOOD.replace("memory 1 GiB", "memory 1"))
    code, out, _ = invoke(["check", "--json", "t.plan", "./t.plan", "."], tmp_path)
    doc = json.loads(out)
    assert code == 1 and doc["result"]["files"] == ["t.plan"] and doc["result"]["errors"] == 1
    assert [d["code"] for d in doc["diagnostics"]] == ["E220"]
    (tmp_path / "t.plan").write_text("graph g {  op a { time 1 ms } }\n")
    code, out, _ = invoke(["fmt", "--check", "--json", "./t.plan", "t.plan"], tmp_path)
    doc = json.loads(out)
    assert code == 5 and [d["code"] for d in doc["diagnostics"]] == ["W640"]


def test_a_caret_after_an_escaped_character_stands_under_its_token(tmp_path: Path) -> None:
    """The terminal shows a raw U+200B as `\\u200b` (six columns): the caret of an error
    further along the line counts them. Before, it stood five columns left of `2 GiB`
    (a wide `"层1"`: `broken/wide_name_before_the_caret`)."""
    (tmp_path / "z.plan").write_text('graph g {\n  op "a\u200bb" { time 2 GiB }\n}\n')
    code, _, err = invoke(["check", "z.plan"], tmp_path)
    shown = ' 2 |   op "a\\u200bb" { time 2 GiB }\n'
    caret = "   | ".ljust(shown.index("2 GiB")) + "^^^^^\n"
    assert code == 1 and shown + caret in err, err
