"""`planner diff` without --spec reads a plan file's `replicas`, `recompute` and `order` as
`simulate` does: null or absence is absent; a value of the wrong type is a located
diagnostic, not a plan without them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .helpers import invoke

BASE = {"format": "planner.plan", "version": 1, "plan": "p", "algorithm": "test",
        "placement": {"a": "gpu0", "b": "gpu1"}}


@pytest.mark.parametrize(("key", "value", "code"), [
    ("replicas", [], "E514"), ("replicas", False, "E514"), ("replicas", 0, "E514"),
    ("replicas", {"gpu1": "gpu0"}, "E514"), ("recompute", {}, "E515"),
    ("recompute", 0, "E515"), ("recompute", "gpu0", "E515"), ("order", False, "E508"),
    ("order", [], "E508")])
def test_a_wrong_type_is_located_not_absent(tmp_path: Path, key: str, value: Any,
                                            code: str) -> None:
    """Before: each read as absent (`0 device(s) whose load changed`, exit 0)."""
    (tmp_path / "old.json").write_text(json.dumps(BASE))
    text = json.dumps({**BASE, key: value})
    (tmp_path / "new.json").write_text(text)
    rc, _, err = invoke(["diff", "old.json", "new.json"], tmp_path)
    col = text.index(f'"{key}": ') + len(f'"{key}": ') + 1
    if isinstance(value, dict) and value:
        col += len('{"gpu1": ')
    assert rc != 0 and f"new.json:1:{col}: error[{code}]" in err, err
    assert "Traceback" not in err


def test_null_is_absent(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text(json.dumps(BASE))
    (tmp_path / "new.json").write_text(json.dumps(
        {**BASE, "replicas": None, "recompute": None, "order": None}))
    rc, out, err = invoke(["diff", "old.json", "new.json"], tmp_path)
    assert rc == 0 and "0 device(s) whose load changed" in out, err


SPEC = """
cluster c { device gpu[0..1] { memory 3 MB } link gpu0 <-> gpu1 { bandwidth 1 GB/s } }
graph g { op a { time 1 ms  output 1 MB }  op b { time 2 ms  output 1 MB }  a -> b }
plan p { graph g cluster c  contention none }
"""


@pytest.mark.parametrize("value", [False, 0, [], "a"])
def test_a_placement_of_the_wrong_type_is_located_at_it(tmp_path: Path, value: Any) -> None:
    """Before: E642 (diff) and E501 (simulate) at the file's first character."""
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "old.json").write_text(json.dumps(BASE))
    text = json.dumps({**BASE, "placement": value})
    (tmp_path / "new.json").write_text(text)
    col = text.index('"placement": ') + len('"placement": ') + 1
    for args, code in ((["diff", "old.json", "new.json"], "E642"),
                       (["simulate", "s.plan", "--placement", "new.json"], "E501")):
        rc, _, err = invoke(args, tmp_path)
        assert rc != 0 and f"new.json:1:{col}: error[{code}]" in err, err
