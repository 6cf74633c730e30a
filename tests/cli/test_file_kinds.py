"""An unreadable input is named as the kind of file the command wanted: a binary file or a
folder given as a plan file, a times file or a stages file was told "spec files are UTF-8
text" or "not a spec file"."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import planner
from planner.errors import Span, SpecError

from .helpers import PLACED, invoke, valid_sarif

BINARY = b"\x7fELF\x02\x01\x01\x00\xd0\xff\xfe"
PLAN = {"format": "planner.plan", "version": 1, "plan": "p", "placement": {"a": "gpu0",
                                                                           "b": "gpu0"}}
GRAPH = {"format": "planner-graph", "version": 1, "name": "g",
         "ops": [{"name": "a", "time_s": 0.001}]}


@pytest.mark.parametrize(("args", "kind"), [
    (["diff", "bad", "p.json"], "plan"),
    (["diff", "p.json", "bad"], "plan"),
    (["simulate", "s.plan", "--placement", "bad"], "plan"),
    (["import", "json", "g.json", "--times", "bad", "-o", "o.plan"], "times"),
    (["import", "json", "bad", "-o", "o.plan"], "graph JSON"),
    (["check", "bad"], "spec"),
])
def test_a_binary_file_is_hinted_as_the_kind_of_file_wanted(tmp_path: Path, args: list[str],
                                                            kind: str) -> None:
    (tmp_path / "s.plan").write_text(PLACED)
    (tmp_path / "p.json").write_text(json.dumps(PLAN))
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    (tmp_path / "bad").write_bytes(BINARY)
    code, _, err = invoke(args, tmp_path)
    assert code == 1
    assert "bad:1:9: error[E004]: bad is not valid UTF-8 (byte 0xd0)" in err, err
    assert f"= hint: {kind} files are UTF-8 text" in err
    (tmp_path / "bad").unlink()
    (tmp_path / "bad").mkdir()
    if kind not in ("spec", "times"):  # `check` reads a folder's specs; click refuses
        code, _, err = invoke(args, tmp_path)
        assert code == 1 and f"error[E002]: bad is a directory, not a {kind} file" in err, err
        assert f"= hint: give the {kind} file itself" in err



@pytest.mark.parametrize("args", [
    ["solve", "bad"], ["simulate", "bad"], ["export", "json", "bad"],
    ["diff", "bad", "p.json"], ["diff", "p.json", "p.json", "--spec", "bad"],
    ["simulate", "s.plan", "--placement", "bad"], ["import", "json", "bad", "-o", "o.plan"],
    ["import", "pipedream", "bad", "-o", "o.plan"], ["import", "onnx", "bad", "-o", "o.plan"],
])
def test_a_folder_is_located_at_its_path_alone(tmp_path: Path, args: list[str]) -> None:
    """A folder has no line 1. Before: `bad:1:1: error[E002]`, line 1 and column 1 in JSON,
    `line=1,col=1` in a GitHub annotation, a region in SARIF."""
    (tmp_path / "s.plan").write_text(PLACED)
    (tmp_path / "p.json").write_text(json.dumps(PLAN))
    (tmp_path / "bad").mkdir()
    code, _, err = invoke(args, tmp_path)
    assert code == 1 and err.startswith("bad: error[E002]: bad is a directory"), err
    if args[0] not in ("solve", "simulate", "diff"):
        return  # no --json
    code, out, _ = invoke([*args, "--json"], tmp_path)
    found = json.loads(out)["diagnostics"]
    assert code == 1 and [(d["code"], d["file"], d["line"], d["column"], d["end_line"],
                           d["end_column"]) for d in found] == [
        ("E002", "bad", None, None, None, None)], found
    if args[0] == "solve":
        return  # no --format
    code, out, _ = invoke([*args, "--format", "github"], tmp_path)
    assert code == 1 and out.startswith("::error file=bad,title=E002::bad is a directory"), out
    code, out, _ = invoke([*args, "--format", "sarif"], tmp_path)
    result = valid_sarif(out)["runs"][0]["results"][0]
    assert code == 1 and result["locations"][0]["physicalLocation"]["artifactLocation"][
        "uri"].endswith("bad") and "region" not in result["locations"][0][
        "physicalLocation"], result


@pytest.mark.parametrize("args", [
    ["solve", "bad"], ["simulate", "s.plan", "--placement", "bad"],
    ["diff", "p.json", "p.json", "--spec", "bad"],
])
@pytest.mark.parametrize(("trouble", "code", "message"), [
    ("fifo", "E003", "cannot read bad: not a regular file"),
    ("denied", "E003", "cannot read bad: Permission denied"),
    ("large", "E007", "bad is larger than the limit of 1,000 bytes"),
])
def test_a_file_that_cannot_be_read_is_located_at_its_path_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], trouble: str,
        code: str, message: str) -> None:
    """E003 and E007 concern the file as a whole, as E002 a folder. Before: `bad:1:1:`,
    line 1 and column 1 in JSON (a FIFO, a file not allowed, has no line 1 we read)."""
    (tmp_path / "s.plan").write_text(PLACED)
    (tmp_path / "p.json").write_text(json.dumps(PLAN))
    if trouble == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(tmp_path / "bad")
    else:
        text = PLACED if args[0] != "simulate" else json.dumps(PLAN)
        (tmp_path / "bad").write_text(text + " " * 1000)
    if trouble == "denied":  # chmod does not stop root: refuse as the OS would
        opened = Path.open

        def refuse(self: Path, *a: object, **k: object) -> object:
            if self.name == "bad":
                raise PermissionError(13, "Permission denied", str(self))
            return opened(self, *a, **k)  # type: ignore[call-overload]
        monkeypatch.setattr(Path, "open", refuse)
    limit = ["--limit", "file-bytes=1000"] if trouble == "large" else []
    status, _, err = invoke([*args, *limit], tmp_path)
    assert status == 1 and err.startswith(f"bad: error[{code}]: {message}"), err
    status, out, _ = invoke([*args, *limit, "--json"], tmp_path)
    found = json.loads(out)["diagnostics"]
    assert status == 1 and [(d["code"], d["file"], d["line"], d["column"]) for d in found] == [
        (code, "bad", None, None)], found


def test_an_invalid_path_is_located_at_the_path_alone() -> None:
    """A path with a NUL names no file, so it has no line 1 either (was line 1, column 1)."""
    with pytest.raises(SpecError) as err:
        planner.load("a\x00b.plan")
    (d,) = err.value.diagnostics
    assert (d.code, d.span) == ("E003", Span.of_path("a\x00b.plan")), d


@pytest.mark.parametrize("args", [
    ["check", "loop.plan"], ["check", "--format", "github", "loop.plan"],
    ["check", "--format", "sarif", "imports.plan"], ["fmt", "loop.plan"],
    ["fmt", "--check", "loop.plan", "ok.plan"], ["solve", "loop.plan"],
])
def test_a_symlink_loop_is_a_file_that_cannot_be_read(tmp_path: Path, args: list[str]) -> None:
    """`ln -s loop.plan loop.plan`, named or imported: E003 at the file, or at the import
    that names it. Before: E999, an internal error (exit 4), as `Path.resolve()` raises
    RuntimeError on a loop under Python 3.11 and 3.12."""
    (tmp_path / "loop.plan").symlink_to("loop.plan")
    (tmp_path / "imports.plan").write_text('import "loop.plan"\n')
    (tmp_path / "ok.plan").write_text("")
    code, out, err = invoke(args, tmp_path, guarded=True)
    assert code == 1, err
    assert "E999" not in out + err
    if "sarif" in args:
        assert valid_sarif(out)["runs"][0]["results"][0]["ruleId"] == "E003"
    else:
        assert "E003" in out + err and "cannot read loop.plan" in out + err


@pytest.mark.parametrize(("args", "kind"), [
    (["simulate", "s.plan", "--placement", "loop.json"], "plan"),
    (["diff", "loop.json", "p.json"], "plan"),
    (["export", "torch", "s.plan", "--placement", "loop.json", "m.py:model"], "plan"),
])
def test_a_plan_file_in_a_symlink_loop_cannot_be_read(tmp_path: Path, args: list[str],
                                                      kind: str) -> None:
    """A placement or plan file that is a symlink loop: E003, hinted as the kind of file
    wanted. Before: E999 (`Path.resolve()` raised RuntimeError in the path shown)."""
    (tmp_path / "s.plan").write_text(PLACED)
    (tmp_path / "p.json").write_text(json.dumps(PLAN))
    (tmp_path / "loop.json").symlink_to("loop.json")
    code, out, err = invoke(args, tmp_path, guarded=True)
    assert code == 1, err
    assert "E999" not in out + err
    assert "E003" in err and "cannot read loop.json" in err, err
    assert f"point it at the {kind} file" in err, err


@pytest.mark.parametrize("command", ["check", "fmt", "solve"])
def test_a_spec_name_too_long_to_exist_cannot_be_read(tmp_path: Path, command: str) -> None:
    """A name longer than the file system allows (ENAMETOOLONG): E003. Before: E999, as
    `Path.is_dir` raised it where a folder was looked for."""
    name = "a" * 300 + ".plan"
    code, out, err = invoke([command, name], tmp_path, guarded=True)
    assert code == 1, err
    assert "E999" not in out + err
    assert "E003" in out + err and "File name too long" in out + err, out + err


@pytest.mark.parametrize("args", [["check", "specs"], ["fmt", "--check", "specs"]])
def test_a_dangling_or_looping_spec_link_in_a_folder_fails_the_gate(
        tmp_path: Path, args: list[str]) -> None:
    """A `.plan` symlink in a folder that leads nowhere is read, and said: E001 naming the
    link and its target, E003 for the loop. Before: `check specs` and `fmt --check specs`
    skipped both and passed (exit 0), a CI gate passing a spec it never read."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "ok.plan").write_text(PLACED)
    (specs / "gone.plan").symlink_to("missing.plan")
    (specs / "loop.plan").symlink_to("loop.plan")
    code, out, err = invoke(args, tmp_path, guarded=True)
    assert code == 1, out + err
    said = out + err
    assert "E001" in said and "gone.plan is a symlink to `missing.plan`, which does not " \
        "exist" in said, said
    assert "E003" in said and "loop.plan" in said, said
