"""Placement files (`--placement`): every wrong type is a diagnostic (E5xx), not a crash.

Before: `order` items and `start_s` values of the wrong type gave a TypeError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .helpers import invoke

SPEC = """
cluster c {
  device gpu[0..1] { memory 1 GiB }
  link gpu0 <-> gpu1 { bandwidth 1 GB/s }
}
graph g {
  op a { time 1 ms }
  op b { time 1 ms }
  a -> b
}
plan p { graph g  cluster c }
"""
PLACED = {"a": "gpu0", "b": "gpu1"}


@pytest.mark.parametrize("extra, code", [
    ({"order": {"gpu0": [1, "a"]}}, "E508"),          # an op that is a number
    ({"order": {"gpu0": [["a"]]}}, "E508"),           # a list in the list
    ({"order": {"gpu0": "a"}}, "E508"),               # not a list
    ({"order": ["a", "b"]}, "E508"),                  # not an object
    ({"order": {"gpu0": [None]}}, "E508"),
    ({"start_s": {"a": "0", "b": 0.001}}, "E509"),    # a string
    ({"start_s": {"a": [0], "b": 0.001}}, "E509"),
    ({"start_s": {"a": True, "b": 0.001}}, "E509"),   # a boolean is not seconds
    ({"start_s": {"a": -1, "b": 0.001}}, "E509"),
    ({"start_s": [0, 1]}, "E509"),
])
def test_wrong_types_are_located_diagnostics(extra: dict[str, Any], code: str,
                                             tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "p.json").write_text(json.dumps({"placement": PLACED, **extra}))
    status, out, _ = invoke(["simulate", "s.plan", "--placement", "p.json", "--json"],
                            tmp_path)
    doc = json.loads(out)
    assert status == 1, doc
    (d,) = doc["diagnostics"]
    assert (d["code"], d["file"], d["line"]) == (code, "p.json", 1)


def test_a_valid_order_and_start_are_still_read(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "p.json").write_text(json.dumps({
        "placement": PLACED, "order": {"gpu0": ["a"], "gpu1": ["b"]},
        "start_s": {"a": 0, "b": 0.0015}}))
    status, out, err = invoke(["simulate", "s.plan", "--placement", "p.json", "--json"],
                              tmp_path)
    assert status == 0, err
    # a, then b (a has no output to move)
    assert json.loads(out)["result"]["makespan_s"] == pytest.approx(0.002)


def test_a_deeply_nested_placement_file_is_invalid_json_not_an_internal_error(
        tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "p.json").write_text("[" * 100_000 + "]" * 100_000)
    status, out, _ = invoke(["simulate", "s.plan", "--placement", "p.json", "--json"],
                            tmp_path)
    (d,) = json.loads(out)["diagnostics"]
    assert (status, d["code"], d["file"]) == (1, "E500", "p.json")
