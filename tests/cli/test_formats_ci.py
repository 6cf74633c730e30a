"""`--format text|json|github|sarif` on `check` and `simulate`: the envelope's counts, GitHub
workflow commands (escaped as GitHub's toolkit does), and SARIF validated against the
official SARIF 2.1.0 schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.cli.guard import requested_format
from planner.errors import Diagnostic, Severity, Span
from planner.render.formats import github_annotation

from .helpers import GOOD, invoke, valid_sarif

#: line 4: `gpu9` at columns 39-42 is unknown (E207); `time[tpu]` names no device's kind (W256)
BAD = GOOD.replace("plan p { graph g cluster c }", "plan p { graph g cluster c place a on gpu9 }")
WARN = GOOD.replace("op b { time 2 ms }", "op b { time 2 ms time[tpu] 1 ms }")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with the spec one folder down (paths must be relative to the root)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "specs").mkdir()
    return tmp_path


def test_github_annotations_of_check(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    (repo / "specs" / "bad.plan").write_text(BAD)
    (repo / "specs" / "warn.plan").write_text(WARN)
    code, out, err = invoke(["check", "--format", "github", "."], repo / "specs")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == ("::error file=specs/bad.plan,line=4,col=39,endLine=4,endColumn=42,"
                        "title=E207::unknown device `gpu9` in cluster `c`%0A"
                        "hint: did you mean `gpu0`?")
    assert len(lines) == 2 and lines[1].startswith("::warning file=specs/warn.plan,line=3,")
    assert "title=W256::" in lines[1]
    # the summary stays in the log, the diagnostics are not rendered twice
    assert "checked 2 file(s)" in err and "error[E207]" not in err


def test_a_link_that_cannot_be_read_is_annotated_at_the_link(
        repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
        ) -> None:
    # a dangling link (E001) and one that leads out of the repository (E008), found in a
    # folder: before, GitHub's annotations named `specs/nowhere.plan` (the missing target)
    # and no file at all, SARIF made the second a notification, and `--json` had
    # `"file": null` for it
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    outside = tmp_path_factory.mktemp("outside") / "o.plan"
    outside.write_text(GOOD)
    (repo / "specs" / "dangling.plan").symlink_to("nowhere.plan")
    (repo / "specs" / "out.plan").symlink_to(outside)
    code, out, _ = invoke(["check", "--format", "github", "."], repo / "specs")
    assert code == 1
    assert [line.split("::")[1] for line in out.splitlines()] == [
        "error file=specs/dangling.plan,title=E001", "error file=specs/out.plan,title=E008"]
    code, out, _ = invoke(["check", "--json", "."], repo / "specs")
    assert [(d["code"], d["file"], d["line"]) for d in json.loads(out)["diagnostics"]] == [
        ("E001", "dangling.plan", None), ("E008", "out.plan", None)]
    code, out, _ = invoke(["check", "--format", "sarif", "."], repo / "specs")
    run = json.loads(out)["runs"][0]
    assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in run["results"]] == ["specs/dangling.plan", "specs/out.plan"]


def test_github_escaping_follows_the_toolkit() -> None:
    diag = Diagnostic("E207", "50% bad\r\nline", Span("dir/a,b:c.plan", 2, 5, 2, 9),
                      severity=Severity.WARNING)
    line = github_annotation(diag, root=Path("/nowhere"))
    assert line == ("::warning file=dir/a%2Cb%3Ac.plan,line=2,col=5,endLine=2,endColumn=8,"
                    "title=E207::50%25 bad%0D%0Aline")


def test_github_columns_only_on_one_line() -> None:
    # GitHub takes `col` and `endColumn` only when `line` and `endLine` are the same
    # ("omit this parameter if start_line and end_line have different values"); before,
    # a region from 3:10 to 5:4 was sent as col=10, endColumn=10
    many = Diagnostic("W640", "m", Span("a.plan", 3, 10, 5, 4), severity=Severity.WARNING)
    assert github_annotation(many, root=Path("/nowhere")) == (
        "::warning file=a.plan,line=3,endLine=5,title=W640::m")
    one = Diagnostic("E207", "m", Span("a.plan", 3, 10, 3, 14))
    assert github_annotation(one, root=Path("/nowhere")) == (
        "::error file=a.plan,line=3,col=10,endLine=3,endColumn=13,title=E207::m")


def test_github_annotation_keeps_the_notes(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # before: `op a is defined twice` without where the first one is; the text output
    # and SARIF's related locations say it
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    (repo / "specs" / "dup.plan").write_text(
        "graph g {\n  op a { time 1 ms }\n  op a { time 2 ms }\n}\n")
    code, out, _ = invoke(["check", "--format", "github", "dup.plan"], repo / "specs")
    assert (code, out) == (1, "::error file=specs/dup.plan,line=3,col=6,endLine=3,endColumn=6,"
                              "title=E202::op `a` is defined twice in graph `g`%0A"
                              "note: first definition at specs/dup.plan:2:6\n")


def test_sarif_of_check_is_valid_and_located(repo: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    (repo / "specs" / "bad.plan").write_text(BAD)
    (repo / "specs" / "warn.plan").write_text(WARN)
    code, out, _ = invoke(["check", "--format", "sarif", "specs"], repo)
    assert code == 1
    log = valid_sarif(out)
    run = log["runs"][0]
    assert log["version"] == "2.1.0" and run["tool"]["driver"]["name"] == "planner"
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert rules == ["E207", "W256"]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    err = by_rule["E207"]
    assert (err["level"], err["ruleIndex"]) == ("error", 0)
    where = err["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == "specs/bad.plan"
    assert where["region"] == {"startLine": 4, "startColumn": 39, "endLine": 4, "endColumn": 43}
    assert by_rule["W256"]["level"] == "warning"
    assert run["invocations"] == [{"executionSuccessful": True, "exitCode": 1}]


def test_sarif_says_its_columns_count_code_points(repo: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # before: no `columnKind`, which Microsoft's SARIF SDK reads as UTF-16 code units: the
    # region of `gpu9` after an emoji (a surrogate pair in UTF-16) was one column off there
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    (repo / "specs" / "bad.plan").write_text(BAD.replace("place a on gpu9",
                                                         'place "\U0001f600" on gpu9')
                                             .replace("op a {", 'op "\U0001f600" {')
                                             .replace("a -> b", '"\U0001f600" -> b'))
    code, out, _ = invoke(["check", "--format", "sarif", "specs"], repo)
    run = valid_sarif(out)["runs"][0]
    assert code == 1 and run["columnKind"] == "unicodeCodePoints"
    (result,) = run["results"]
    line = (repo / "specs" / "bad.plan").read_text().splitlines()[3]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert line[region["startColumn"] - 1:region["endColumn"] - 1] == "gpu9"


def test_sarif_uses_github_workspace_as_the_root(repo: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_WORKSPACE", str(repo / "specs"))
    (repo / "specs" / "bad.plan").write_text(BAD)
    _, out, _ = invoke(["check", "--format", "sarif", "specs/bad.plan"], repo)
    uri = json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert uri["artifactLocation"]["uri"] == "bad.plan"


@pytest.mark.parametrize("args", [["check", "--format", "sarif", "--no-such-option"],
                                  ["check", "--json", "--format", "sarif", "x.plan"]])
def test_usage_errors_are_sarif_notifications(tmp_path: Path, args: list[str]) -> None:
    code, out, _ = invoke(args, tmp_path)
    assert code == 2
    run = valid_sarif(out)["runs"][0]
    assert run["results"] == []
    invocation = run["invocations"][0]
    assert (invocation["executionSuccessful"], invocation["exitCode"]) == (False, 2)
    codes = [n["descriptor"]["id"] for n in invocation["toolExecutionNotifications"]]
    assert codes == (["E606"] if "--no-such-option" in args else ["E640"])


def test_early_error_is_an_envelope_with_counts(tmp_path: Path) -> None:
    code, out, _ = invoke(["check", "--format", "json", "."], tmp_path)
    doc = json.loads(out)
    assert code == 1 and doc["exit_code"] == 1 and doc["format_version"] == 1
    assert (doc["valid"], doc["errors"], doc["warnings"]) == (False, 1, 0)
    assert [d["code"] for d in doc["diagnostics"]] == ["E006"]
    assert invoke(["check", "--json", "."], tmp_path)[1] == out  # --json is --format json


def test_warnings_alone_leave_the_input_valid(tmp_path: Path) -> None:
    (tmp_path / "w.plan").write_text(WARN)
    code, out, _ = invoke(["check", "--output-format", "json", "w.plan"], tmp_path)
    doc = json.loads(out)
    assert code == 0 and (doc["valid"], doc["errors"], doc["warnings"]) == (True, 0, 1)
    d = doc["diagnostics"][0]
    assert (d["line"], d["end_line"]) == (3, 3) and d["end_column"] > d["column"]


INFEASIBLE = """
cluster c { device gpu[0..1] { memory 10 MB } link gpu0 <-> gpu1 { bandwidth 10 GB/s } }
graph g { op a { time 1 ms  output 8 MB }  op b { time 2 ms  output 8 MB }  a -> b }
plan p { graph g cluster c  place a, b on gpu0 }
"""


def test_simulate_violations_are_annotated_at_the_spec(repo: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    (repo / "specs" / "s.plan").write_text(INFEASIBLE)
    code, out, err = invoke(["simulate", "specs/s.plan", "--format", "github"], repo)
    assert code == 3
    assert out.startswith("::error file=specs/s.plan,line=1,col=1,")
    assert "title=E401::plan `p` is infeasible" in out and "%0Ahint: memory" in out
    assert "makespan" in err  # the plan itself goes to the log
    code, out, _ = invoke(["simulate", "specs/s.plan", "--format", "sarif"], repo)
    result = valid_sarif(out)["runs"][0]["results"][0]
    assert code == 3 and result["ruleId"] == "E401"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "specs/s.plan"


def test_requested_format_reads_every_spelling() -> None:
    assert requested_format(["check", "x", "--json"]) == "json"
    assert requested_format(["check", "--format=sarif"]) == "sarif"
    assert requested_format(["check", "--output-format", "github"]) == "github"
    assert requested_format(["check", "--format", "bogus"]) == "text"
