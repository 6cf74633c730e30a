"""A spec named twice through hard links (one file, two names in a folder) is formatted,
written, reported and checked once, as one named twice through a symlink is
(`files.same_file`). Before: `fmt DIR` said "reformatted" for each name and rewrote the
file twice (in place, each time after a backup), and `check DIR` counted 2 files."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import pytest

from .helpers import invoke

#: `planner.cli.fmt` is also the name of the command's function, which the attribute is
fmt = importlib.import_module("planner.cli.fmt")

UGLY = "graph g {\n op a   { flops 1 GFLOP }\n}\n"


def _linked(tmp_path: Path) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "a.plan").write_text(UGLY)
    os.link(folder / "a.plan", folder / "b.plan")
    return folder


def test_fmt_writes_and_reports_a_hard_linked_spec_once(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _linked(tmp_path)
    written: list[Path] = []
    keep = fmt.write_text_keeping_links
    monkeypatch.setattr(fmt, "write_text_keeping_links",
                        lambda path, text: (written.append(path), keep(path, text))[1])
    code, out, err = invoke(["fmt", "specs"], tmp_path)
    assert code == 0 and out == "reformatted specs/a.plan\n", out + err
    assert written == [Path("specs/a.plan")]
    assert (folder / "b.plan").read_text() == (folder / "a.plan").read_text() != UGLY


def test_fmt_check_and_check_name_a_hard_linked_spec_once(tmp_path: Path) -> None:
    _linked(tmp_path)
    code, out, _ = invoke(["fmt", "--check", "specs", "--json"], tmp_path)
    assert code == 5 and json.loads(out)["result"]["changed"] == ["specs/a.plan"]
    code, out, _ = invoke(["check", "specs/b.plan", "specs", "--json"], tmp_path)
    assert code == 0 and json.loads(out)["result"]["files"] == ["specs/b.plan"]
