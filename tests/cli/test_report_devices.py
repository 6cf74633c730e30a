"""A `solve --json` report read back as a plan (`diff`, `simulate --placement`): its
`devices` rows (`name`, `ops`) are its order, and a value that is not such rows, or that
contradicts the report's `placement`, is a located E517 (planner/reportrows.py), not a
value ignored. Before: `"devices": 0` was read as no order (diff then said the cluster's
devices were `removed`), a row moved to another device simulated with violations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .helpers import invoke

SPEC = """
cluster c { device gpu[0..2] { memory 64 MB } link gpu[0..2] <-> gpu[0..2] { bandwidth 10 GB/s } }
graph g { op a { time 1 ms  output 8 MB }  op b { time 2 ms  output 8 MB }  a -> b }
plan p { graph g cluster c  place a on gpu0  place b on gpu1 }
"""


def _report(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "s.plan").write_text(SPEC)
    rc, out, err = invoke(["simulate", "s.plan", "--json"], tmp_path)
    assert rc == 0, err
    (tmp_path / "old.json").write_text(out)
    return json.loads(out)  # type: ignore[no-any-return]


def _edited(doc: dict[str, Any], devices: Any) -> str:
    return json.dumps({**doc, "result": {**doc["result"], "devices": devices}})


def _row(name: str, ops: Any) -> dict[str, Any]:
    return {"name": name, "ops": ops, "busy_s": 0.0}


ROWS = [_row("gpu0", ["a"]), _row("gpu1", ["b"]), _row("gpu2", [])]

# (devices, where its diagnostic points: the `|` of a text found in the file (`<` for its
# last occurrence), words of its message)
CASES = [
    (0, '"devices": |0', "not a number `0`"),
    ("gpu0", '"devices": |"gpu0"', "not a string `gpu0`"),
    ([], '"devices": |[]', "no row for device `gpu0`"),
    ([1, *ROWS], '"devices": [|1', "holds a number `1`"),
    ([{"ops": []}, *ROWS], '"devices": [|{"ops"', "must have a device's `name`"),
    ([_row("gpu0", 3), *ROWS[1:]], '"ops": |3', "must be a list of op names"),
    ([*ROWS, _row("gpu0", [])], '<"name": |"gpu0"', "device `gpu0` is listed twice"),
    ([_row("gpu0", []), _row("gpu1", ["a", "b"]), ROWS[2]], '"gpu1", "ops": [|"a"',
     "op `a` is in the `ops` of device `gpu1` in `devices`, and `placement` puts it on `gpu0`"),
    ([_row("gpu0", ["a", "a"]), *ROWS[1:]], '["a", |"a"]', "op `a` is listed twice"),
    ([_row("gpu0", ["a", "x"]), *ROWS[1:]], '["a", |"x"]',
     "op `x` is in the `ops` of device `gpu0` in `devices`, and is not in `placement`"),
    (ROWS[:1], '"devices": |[', "no row for device `gpu1`, which `placement` puts 1 op(s)"),
    ([{"name": "gpu0"}, *ROWS[1:]], '"devices": [|{"name"',
     "the row of device `gpu0` in `devices` has no `ops`, and the row of `gpu1` has"),
]


def _at(text: str, needle: str) -> str:
    """`line:col` of the `|` in `needle`, found in `text` (its last occurrence after `<`)."""
    last, needle = needle.startswith("<"), needle.lstrip("<")
    found = needle.replace("|", "")
    pos = (text.rindex(found) if last else text.index(found)) + needle.index("|")
    return f"{text.count(chr(10), 0, pos) + 1}:{pos - text.rfind(chr(10), 0, pos)}"


@pytest.mark.parametrize(("devices", "needle", "words"), CASES)
def test_devices_that_contradict_the_report_are_located(tmp_path: Path, devices: Any,
                                                         needle: str, words: str) -> None:
    text = _edited(_report(tmp_path), devices)
    (tmp_path / "new.json").write_text(text)
    where = f"new.json:{_at(text, needle)}: error[E517]"
    for args in (["diff", "old.json", "new.json"], ["diff", "old.json", "new.json", "--spec",
                 "s.plan"], ["simulate", "s.plan", "--placement", "new.json"]):
        rc, out, err = invoke(args, tmp_path)
        assert rc == 1 and where in err and words in err, (args, err)
        assert "removed" not in out and "Traceback" not in err


def test_a_device_of_another_cluster_is_located_at_its_row(tmp_path: Path) -> None:
    """Simulated on the spec, a row naming a device it lacks is E504 at that name (before:
    at the report's `result`, "in order", a key the file does not have); `diff` of two
    reports compares clusters as they were (devices added or removed), as before."""
    text = _edited(_report(tmp_path), [*ROWS[:2], _row("gpu9", [])])
    (tmp_path / "new.json").write_text(text)
    rc, _, err = invoke(["simulate", "s.plan", "--placement", "new.json"], tmp_path)
    where = _at(text, '"name": |"gpu9"')
    assert rc == 1 and f"new.json:{where}: error[E504]: unknown device `gpu9` in devices" \
        in err, err
    rc, out, err = invoke(["diff", "old.json", "new.json"], tmp_path)
    assert rc == 0 and "gpu9: added to the cluster" in out, err


def test_reports_as_written_still_read(tmp_path: Path) -> None:
    """A report's own rows, figures edited (informational: simulate computes its own), a
    row with fewer ops than placed (a run that deadlocked lists what ran), rows of figures
    and no ops (no order), and no `devices` at all: read as before."""
    doc = _report(tmp_path)
    rows = [{**r, "memory_cap_bytes": 1, "busy_s": 9.0} for r in doc["result"]["devices"]]
    figures = [{"name": r["name"], "busy_s": 0.0} for r in ROWS]
    for devices in (rows, [_row("gpu0", []), *ROWS[1:]], figures, None):
        (tmp_path / "new.json").write_text(_edited(doc, devices))
        for args in (["diff", "old.json", "new.json"],
                     ["simulate", "s.plan", "--placement", "new.json"]):
            rc, _, err = invoke(args, tmp_path)
            assert rc in (0, 3) and "E517" not in err, (args, err)
