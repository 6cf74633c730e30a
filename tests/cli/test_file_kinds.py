"""An unreadable input is named as the kind of file the command wanted: a binary file or a
folder given as a plan file, a times file or a stages file was told "spec files are UTF-8
text" or "not a spec file"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import PLACED, invoke

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
