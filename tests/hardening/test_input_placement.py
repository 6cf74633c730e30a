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


#: placement files with mistakes on lines of their own; each diagnostic must point at the
#: value its message is about (the marked text), not at the file's start
LOCATED = [
    ('{\n  "placement": {\n    "a": "gpu0",\n    "b": "gpu7"\n  }\n}\n',
     [("E504", '"gpu7"')]),
    ('{\n  "placement": {\n    "zz": "gpu0",\n    "a": "gpu0",\n    "b": "gpu1"\n  }\n}\n',
     [("E503", '"zz"')]),  # the unknown name: its key (was its value, `"gpu0"`)
    ('{\n  "placement": {"a": "gpu0", "b": "gpu1"},\n  "order": {\n    "gpu0": ["a", "q"],\n'
     '    "gpu5": ["b"]\n  }\n}\n', [("E503", '"q"'), ("E504", '["b"]')]),
    ('{\n  "placement": {"a": "gpu0", "b": "gpu1"},\n  "start_s": {\n    "a": 0,\n'
     '    "b": "x"\n  }\n}\n', [("E509", '"x"')]),
    ('{\n  "placement": {"a": "gpu0", "b": "gpu1"},\n  "order": {\n    "gpu0": ["a", "b"],\n'
     '    "gpu1": ["a"]\n  }\n}\n', [("E508", '"b"],'), ("E508", '"a"]\n')]),
    ('{\n  "placement": {"a": "gpu0", "b": "gpu1"},\n  "order": {\n    "gpu0": ["a", "a"],\n'
     '    "gpu1": ["b"]\n  }\n}\n', [("E508", '"a"],')]),
    ('{\n  "placement": {"a": "gpu0", "b": "gpu1"},\n  "order": {\n    "gpu0": ["a"],\n'
     '    "gpu1": []\n  }\n}\n', [("E508", '[]')]),
    ('{\n  "placement": {"a": "gpu0", "b": "gpu1"},\n  "order": {\n    "gpu0": ["a"]\n'
     '  }\n}\n', [("E508", '{\n    "gpu0"')]),
    # the version that is wrong, not the format that is right (was at `"planner.plan"`)
    ('{\n  "format": "planner.plan",\n  "version": 2,\n  "placement": {"a": "gpu0", '
     '"b": "gpu1"}\n}\n', [("E502", '2,')]),
]


@pytest.mark.parametrize(("text", "expected"), LOCATED,
                         ids=["device", "op", "order", "start_s", "order_device", "order_twice",
                              "order_leaves_out", "order_leaves_out_a_device", "version"])
def test_each_mistake_points_at_its_entry(text: str, expected: list[tuple[str, str]],
                                          tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "p.json").write_text(text)
    status, out, _ = invoke(["simulate", "s.plan", "--placement", "p.json", "--json"],
                            tmp_path)
    assert status == 1
    found = [(d["code"], d["line"], d["column"]) for d in json.loads(out)["diagnostics"]]
    want = []
    for code, marked in expected:
        at = text.index(marked)
        want.append((code, text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)))
    assert found == want


@pytest.mark.parametrize(("order", "first", "hint"), [
    # before: two violations, "lists `b` on `gpu0` but it is placed on `gpu1`" and
    # "leaves out `b` (run last)"
    ('{"gpu0": ["a", "b"], "gpu1": []}', "p.json:2:26: error[E508]: `order` lists op `b` "
     "under device `gpu0`, but `placement` puts it on `gpu1`",
     "list it under `gpu1`, where it runs, or change its placement"),
    # before: one violation, "the order of `gpu1` leaves out `b` (run last)"
    ('{"gpu0": ["a"], "gpu1": []}', "p.json:2:35: error[E508]: `order` leaves out 1 op(s) "
     "that `placement` puts on `gpu1`: `b`", "list every op placed on `gpu1`, in the order "
     "it runs, or leave `order` out: the simulator then orders them"),
], ids=["misplaced", "left_out"])
def test_an_order_against_the_placement_is_one_error_not_violations(
        order: str, first: str, hint: str, tmp_path: Path) -> None:
    """Before: simulated, exit 3, `order` violations and no place in the file."""
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "p.json").write_text('{"placement": {"a": "gpu0", "b": "gpu1"},\n'
                                      f' "order": {order}}}\n')
    status, _, err = invoke(["simulate", "s.plan", "--placement", "p.json"], tmp_path)
    assert status == 1 and err.startswith(first + "\n"), err
    assert f"= hint: {hint}" in err
    assert "violation" not in err


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


def test_a_negative_start_is_not_called_not_a_number(tmp_path: Path) -> None:
    """Before: `must be finite seconds, at least 0, not a number -1`, and no hint."""
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "p.json").write_text(json.dumps({"placement": PLACED,
                                                 "start_s": {"a": -1, "b": 0.001}}))
    status, _, err = invoke(["simulate", "s.plan", "--placement", "p.json"], tmp_path)
    assert status == 1 and "must be finite seconds, at least 0, not `-1`\n" in err, err
    assert "hint: `start_s` is only the planner's intent" in err, err
