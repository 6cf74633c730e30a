"""`planner diff` of two `--json` reports whose clusters differ by a device that runs no op.
Before: its row read `0 B  -`, and it was not among the devices that changed."""

from __future__ import annotations

import json
from pathlib import Path

from .helpers import invoke

SPEC = """
cluster c { device gpu[0..2] { memory 3 MB } link gpu[*] <-> gpu[*] { bandwidth 1 GB/s } }
graph g { op a { time 1 ms  output 1 MB }  op b { time 2 ms  output 1 MB }  a -> b }
plan p { graph g cluster c  contention none }
"""


def _reports(tmp: Path) -> None:
    """three.json on gpu0..2, two.json on gpu0..1: both place a and b on gpu0."""
    for name, spec in (("three", SPEC), ("two", SPEC.replace("gpu[0..2]", "gpu[0..1]"))):
        (tmp / f"{name}.plan").write_text(spec)
        code, out, err = invoke(["solve", f"{name}.plan", "--algo", "single", "--json"], tmp)
        assert code == 0, err
        (tmp / f"{name}.json").write_text(out)


def test_a_removed_and_an_added_device_are_listed(tmp_path: Path) -> None:
    _reports(tmp_path)
    code, out, _ = invoke(["diff", "three.json", "two.json"], tmp_path)
    assert code == 0
    assert "  peak memory gpu2  0 B       -         removed\n" in out, out
    assert "1 device(s) whose load changed:\n  gpu2: removed from the cluster (had 0 ops)\n" \
        in out
    code, out, _ = invoke(["diff", "two.json", "three.json"], tmp_path)
    assert "  peak memory gpu2  -         0 B       added\n" in out, out
    assert "  gpu2: added to the cluster (0 ops)\n" in out
    code, out, _ = invoke(["diff", "three.json", "two.json", "--format", "json"], tmp_path)
    doc = json.loads(out)["result"]
    assert (doc["devices_removed"], doc["devices_added"], doc["devices_changed"]) == (
        ["gpu2"], [], ["gpu2"])


def test_a_placement_names_only_its_devices(tmp_path: Path) -> None:
    """A plan file lists the devices its ops use: one it leaves out is not removed."""
    _reports(tmp_path)
    placement = {"format": "planner.plan", "version": 1, "plan": "p",
                 "placement": {"a": "gpu0", "b": "gpu0"}}
    (tmp_path / "bare.json").write_text(json.dumps(placement))
    code, out, _ = invoke(["diff", "three.json", "bare.json", "--format", "json"], tmp_path)
    doc = json.loads(out)["result"]
    assert code == 0 and (doc["devices_removed"], doc["devices_changed"]) == ([], [])
