"""`planner fmt`: `--check` and `--diff` (exit 5 when a file would change, 1 when one does
not parse), `fmt -` with `--stdin-filename`, and the CI formats."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from planner.spec.format import format_source

from .helpers import invoke, valid_sarif

UGLY = "graph g {op a {time 1 ms}\n  op b { time 2 ms } a -> b }\n"
CANONICAL = "graph g {\n  op a { time 1 ms }\n  op b { time 2 ms }\n  a -> b\n}\n"
BROKEN = "graph g {\n  op a { time 1 ms junk }\n}\n"  # line 2: `}` where a value should be


def test_the_fixture_is_what_the_formatter_makes() -> None:
    assert format_source(UGLY, "u.plan") == CANONICAL


def test_check_exits_5_and_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "u.plan").write_text(UGLY)
    (tmp_path / "ok.plan").write_text(CANONICAL)
    code, out, _ = invoke(["fmt", "--check", "."], tmp_path)
    assert (code, out) == (5, "would reformat u.plan\n")
    assert (tmp_path / "u.plan").read_text() == UGLY
    assert invoke(["fmt", "--check", "ok.plan"], tmp_path)[0] == 0


def test_invalid_input_is_1_even_when_another_file_would_change(tmp_path: Path) -> None:
    (tmp_path / "u.plan").write_text(UGLY)
    (tmp_path / "b.plan").write_text(BROKEN)
    code, _, err = invoke(["fmt", "--check", "u.plan", "b.plan"], tmp_path)
    assert code == 1 and "b.plan:2:" in err and "error[E101]" in err


def test_diff_is_a_unified_diff_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "u.plan").write_text(UGLY)
    code, out, err = invoke(["fmt", "--diff", "u.plan"], tmp_path)
    assert code == 5 and err == "would reformat u.plan\n"
    assert out == ("--- u.plan\n+++ u.plan\n@@ -1,2 +1,5 @@\n"
                   "-graph g {op a {time 1 ms}\n-  op b { time 2 ms } a -> b }\n"
                   "+graph g {\n+  op a { time 1 ms }\n+  op b { time 2 ms }\n+  a -> b\n+}\n")
    assert (tmp_path / "u.plan").read_text() == UGLY
    (tmp_path / "u.plan").write_text(CANONICAL)
    assert invoke(["fmt", "--diff", "u.plan"], tmp_path)[:2] == (0, "")


def test_stdin_is_formatted_to_stdout(tmp_path: Path) -> None:
    code, out, _ = invoke(["fmt", "-"], tmp_path, UGLY.encode())
    assert (code, out) == (0, CANONICAL)
    code, out, _ = invoke(["fmt", "--check", "-", "--stdin-filename", "specs/m.plan"],
                          tmp_path, UGLY.encode())
    assert (code, out) == (5, "would reformat specs/m.plan\n")


def test_stdin_diagnostics_carry_the_stdin_filename(tmp_path: Path) -> None:
    code, out, err = invoke(["fmt", "-", "--stdin-filename", "specs/m.plan"], tmp_path,
                            BROKEN.encode())
    assert code == 1 and out == ""
    assert err.startswith("specs/m.plan:2:") and "junk }" in err  # with its caret line
    code, _, err = invoke(["fmt", "-"], tmp_path, b"graph g { op a { time 1 ms } \xff }\n")
    assert code == 1 and "<stdin>:1:30: error[E641]" in err


@pytest.mark.parametrize("args", [["fmt", "-", "x.plan"], ["fmt", "--stdin-filename", "a", "x"],
                                  ["fmt", "-", "empty"], ["fmt", "--stdin-filename", "a", "empty"]])
def test_contradicting_inputs_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "empty").mkdir()  # a folder without specs: the contradiction comes first
    code, _, err = invoke(args, tmp_path)
    assert code == 2 and "error[E640]" in err


def test_check_in_the_ci_formats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    (tmp_path / "u.plan").write_text("# a comment stays\n" + UGLY)
    code, out, _ = invoke(["fmt", "--check", "--format", "github", "u.plan"], tmp_path)
    assert code == 5
    # lines 2 to 3: no columns, which GitHub takes only on one line (before: col=1,
    # endLine=3, endColumn=29)
    assert out == ("::warning file=u.plan,line=2,endLine=3,title=W640::"
                   "u.plan is not in the canonical layout%0Ahint: run `planner fmt u.plan`\n")
    code, out, _ = invoke(["fmt", "--diff", "--format", "json", "u.plan"], tmp_path)
    doc = json.loads(out)
    assert (code, doc["exit_code"], doc["valid"], doc["warnings"]) == (5, 5, True, 1)
    assert doc["result"]["changed"] == ["u.plan"] and doc["result"]["diff"].startswith("--- ")
    code, out, _ = invoke(["fmt", "--check", "--format", "sarif", "u.plan"], tmp_path)
    result = valid_sarif(out)["runs"][0]["results"][0]
    assert code == 5 and result["ruleId"] == "W640"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2


def _envelope(out: str, code: int) -> dict[str, object]:
    doc: dict[str, object] = json.loads(out)  # the whole of stdout: one document
    assert list(doc) == ["format_version", "command", "ok", "exit_code", "valid", "errors",
                         "warnings", "result", "diagnostics"]
    assert (doc["format_version"], doc["command"]) == (1, "fmt")
    assert (doc["exit_code"], doc["ok"]) == (code, code == 0)
    return doc


def test_json_is_the_envelope_on_every_outcome(tmp_path: Path) -> None:
    (tmp_path / "u.plan").write_text(UGLY)
    (tmp_path / "ok.plan").write_text(CANONICAL)
    # --check: exit 5, the file that would change in `result` and as W640, nothing written
    code, out, err = invoke(["fmt", "--check", "--json", "."], tmp_path)
    doc = _envelope(out, 5)
    assert doc["result"] == {"files": ["ok.plan", "u.plan"], "changed": ["u.plan"],
                             "written": False}
    assert [(d["code"], d["file"]) for d in doc["diagnostics"]] == [("W640", "u.plan")]
    assert (doc["valid"], doc["errors"], doc["warnings"]) == (True, 0, 1)
    assert err == "would reformat u.plan\n"  # the summary stays on stderr
    assert (tmp_path / "u.plan").read_text() == UGLY
    # a spec that does not parse: exit 1, its error in the document, not on stderr
    (tmp_path / "b.plan").write_text(BROKEN)
    code, out, err = invoke(["fmt", "--check", "--json", "b.plan"], tmp_path)
    doc = _envelope(out, 1)
    assert [(d["code"], d["line"]) for d in doc["diagnostics"]] == [("E101", 2)]
    assert "E101" not in err
    # a command-line mistake (E606) and a contradiction (E640): still the one document
    assert _envelope(invoke(["fmt", "--json", "--nope", "."], tmp_path)[1], 2)["diagnostics"]
    code, out, _ = invoke(["fmt", "--json", "--format", "github", "."], tmp_path)
    assert code == 2 and "E640" in out
    # a rewrite says what it wrote
    code, out, _ = invoke(["fmt", "--json", "u.plan"], tmp_path)
    assert _envelope(out, 0)["result"] == {"files": ["u.plan"], "changed": ["u.plan"],
                                           "written": True}
    assert (tmp_path / "u.plan").read_text() == CANONICAL


def test_json_of_stdin_carries_the_formatted_text(tmp_path: Path) -> None:
    code, out, _ = invoke(["fmt", "-", "--json"], tmp_path, UGLY.encode())
    result = _envelope(out, 0)["result"]
    assert result == {"files": ["<stdin>"], "changed": ["<stdin>"], "written": False,
                      "formatted": CANONICAL}


@pytest.mark.parametrize(("text", "line", "last"), [
    (CANONICAL.replace("\n", "\r\n"), 1, 5),   # Windows line ends, else canonical
    (CANONICAL[:-1], 5, 5),                    # no newline at the end
    ("\ufeff" + CANONICAL, 1, 1),              # a byte order mark
    (CANONICAL.replace("\n", "\r"), 1, 1),     # old Mac line ends
])
def test_a_change_of_line_ends_alone_fails_the_gate(tmp_path: Path, text: str, line: int,
                                                     last: int) -> None:
    # before: `fmt --check` and `--diff` crashed on these (E999, exit 4: "generator raised
    # StopIteration"), its lines being compared without their ends
    (tmp_path / "u.plan").write_bytes(text.encode())
    assert invoke(["fmt", "--check", "u.plan"], tmp_path, guarded=True)[:2] == (
        5, "would reformat u.plan\n")
    code, out, _ = invoke(["fmt", "--check", "--format", "github", "u.plan"], tmp_path)
    cols = "col=1," if line == last else ""  # GitHub takes columns only on one line
    assert code == 5 and out.startswith(f"::warning file=u.plan,line={line},{cols}"
                                        f"endLine={last},")
    code, out, _ = invoke(["fmt", "--diff", "u.plan"], tmp_path, guarded=True)
    assert code == 5 and out.startswith("--- u.plan\n+++ u.plan\n@@ -") and "E999" not in out
    assert (tmp_path / "u.plan").read_bytes() == text.encode()


def test_diff_splits_lines_as_patch_does(tmp_path: Path) -> None:
    # a line ends at `\n` only: before, every `\r`, form feed or U+2028 ended one too, and
    # each such line got a false "\ No newline at end of file"
    (tmp_path / "u.plan").write_bytes("graph g {op a {time 1 ms}  # a\u2028b\x0cc\r}\r".encode())
    code, out, _ = invoke(["fmt", "--diff", "u.plan"], tmp_path)
    assert code == 5 and out.count("No newline at end of file") == 1
    # (the test runner reads the `\r\n` that ends the line as `\n`)
    assert out.split("\n")[3:5] == ["-graph g {op a {time 1 ms}  # a\u2028b\x0cc\r}",
                                    "\\ No newline at end of file"]


@pytest.mark.parametrize("args", [["fmt"], ["fmt", "--check"], ["fmt", "--diff"],
                                  ["check"]])
def test_a_folder_without_specs_fails_the_gate(tmp_path: Path, args: list[str]) -> None:
    # before: `fmt --check spec/` (a mistyped `specs/` that exists, holding no .plan file)
    # passed the gate, exit 0 having looked at nothing; `check` said E006
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("graph {\n")
    code, out, err = invoke([*args, "docs"], tmp_path)
    assert (code, out) == (1, "")
    assert err.startswith("error[E006]: no .plan files found in `docs`\n")
    code, out, _ = invoke([*args, "--json", "docs"], tmp_path)
    doc = json.loads(out)
    assert (code, doc["exit_code"], [d["code"] for d in doc["diagnostics"]]) == (1, 1, ["E006"])
    # standard input names no file: not E006
    assert invoke(["fmt", "-"], tmp_path, CANONICAL.encode())[:2] == (0, CANONICAL)


def test_diff_of_a_name_with_a_space_applies(tmp_path: Path) -> None:
    # before: `--- my spec.plan`, which `patch -p0` read as the file `my` ("can't find
    # file to patch"); a tab ends the name, as `git diff` writes it
    (tmp_path / "my spec.plan").write_text(UGLY)
    code, out, _ = invoke(["fmt", "--diff", "my spec.plan"], tmp_path)
    assert code == 5 and out.startswith("--- my spec.plan\t\n+++ my spec.plan\t\n@@ ")
    if shutil.which("patch"):
        (tmp_path / "fmt.diff").write_text(out)
        subprocess.run(["patch", "-p0", "-i", "fmt.diff"], cwd=tmp_path, check=True,
                       capture_output=True, timeout=60)
        assert (tmp_path / "my spec.plan").read_text() == CANONICAL


def test_a_file_that_cannot_be_written_stops_no_other(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # before: the first failure (here b.plan, E623) ended the command: a.plan was rewritten
    # without a word ("reformatted" never printed, JSON `result` null) and c.plan untried
    from planner.cli import fmt as fmt_module
    from planner.errors import Diagnostic, OutputError

    real = fmt_module.write_text_keeping_links

    def refuse_b(path: Path, text: str) -> None:
        if Path(path).name == "b.plan":
            raise OutputError(Diagnostic("E623", f"cannot write `{path}`: disk full"))
        real(path, text)

    monkeypatch.setattr(fmt_module, "write_text_keeping_links", refuse_b)
    for name in ("a.plan", "b.plan", "c.plan"):
        (tmp_path / name).write_text(UGLY)
    code, out, err = invoke(["fmt", "a.plan", "b.plan", "c.plan"], tmp_path)
    assert (code, out) == (4, "reformatted a.plan\nreformatted c.plan\n")
    assert "error[E623]: cannot write `b.plan`" in err
    assert [(tmp_path / n).read_text() for n in ("a.plan", "b.plan", "c.plan")] == [
        CANONICAL, UGLY, CANONICAL]
    (tmp_path / "a.plan").write_text(UGLY)
    code, out, _ = invoke(["fmt", "--json", "a.plan", "b.plan"], tmp_path)
    doc = _envelope(out, 4)
    assert doc["result"] == {"files": ["a.plan", "b.plan"], "changed": ["a.plan"],
                             "written": True}
    assert [d["code"] for d in doc["diagnostics"]] == ["E623"]


def test_the_hint_for_standard_input_is_a_command_that_formats_it(tmp_path: Path) -> None:
    # was "run `planner fmt <stdin>`", a command that cannot work
    code, out, _ = invoke(["fmt", "--check", "--format", "json", "-"], tmp_path,
                          stdin=UGLY.encode())
    (diag,) = json.loads(out)["diagnostics"]
    assert (code, diag["code"]) == (5, "W640")
    assert diag["hints"] == [
        "run `planner fmt -` on the same input: it writes the canonical layout to stdout"]
    code, out, _ = invoke(["fmt", "--check", "--format", "json", "--stdin-filename",
                           "my u.plan", "-"], tmp_path, stdin=UGLY.encode())
    (diag,) = json.loads(out)["diagnostics"]
    assert diag["hints"] == [
        "run `planner fmt --stdin-filename 'my u.plan' -` on the same input (it writes the "
        "canonical layout to stdout), or `planner fmt 'my u.plan'` on the file"]
    (tmp_path / "my u.plan").write_text(UGLY)  # a file's hint: quoted for the shell
    code, out, _ = invoke(["fmt", "--check", "--format", "json", "my u.plan"], tmp_path)
    assert json.loads(out)["diagnostics"][0]["hints"] == ["run `planner fmt 'my u.plan'`"]
    code, out, _ = invoke(["fmt", "--format", "json", "-"], tmp_path, stdin=UGLY.encode())
    assert (code, json.loads(out)["result"]["formatted"]) == (0, CANONICAL)  # it works


def test_github_annotations_of_standard_input_name_no_file_unless_given(
        tmp_path: Path) -> None:
    # was `::warning file=<stdin>,line=1,...`: a file of the repository that is not there
    code, out, _ = invoke(["fmt", "--check", "--format", "github", "-"], tmp_path,
                          stdin=UGLY.encode())
    assert code == 5
    assert out.startswith("::warning title=W640::<stdin>:1:1: <stdin> is not in the "
                          "canonical layout%0Ahint: run `planner fmt -`")
    code, out, _ = invoke(["fmt", "--format", "github", "-"], tmp_path,
                          stdin=BROKEN.encode())
    assert code == 1 and out.startswith("::error title=E")
    assert "::<stdin>:2:" in out and "file=" not in out
    code, out, _ = invoke(["fmt", "--check", "--format", "github", "--stdin-filename",
                           "u.plan", "-"], tmp_path, stdin=UGLY.encode())
    assert out.startswith("::warning file=u.plan,line=1,")


@pytest.mark.parametrize(("args", "code"), [
    (["check", "--json", "--format", "text", "u.plan"], "E640"),
    (["check", "--json", "--format=text", "u.plan"], "E640"),
    (["diff", "--json", "--format", "text", "a.json", "b.json"], "E640"),
    (["solve", "--json", "--format", "text", "u.plan"], "E606"),  # solve has no --format
])
def test_json_wins_over_any_format_so_stdout_is_one_document(tmp_path: Path, args: list[str],
                                                             code: str) -> None:
    """`--format text` beside `--json` put the contradiction (or solve's unknown option) on
    stderr as text, and nothing on stdout. (A machine `--format` beside `--json` answers in
    its own format: `test_formats_ci.py`.)"""
    (tmp_path / "u.plan").write_text(UGLY)
    exit_code, out, err = invoke(args, tmp_path)
    doc = json.loads(out)  # the whole of stdout: one document
    assert (exit_code, doc["exit_code"], doc["command"]) == (2, 2, args[0])
    assert [d["code"] for d in doc["diagnostics"]] == [code]
    assert code not in err
