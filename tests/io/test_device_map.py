"""An accelerate `device_map` read as a placement (`planner.io.device_map`), directly and
through `planner simulate --placement`: torch is not needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.errors import SpecError
from planner.io.device_map import placement_from_device_map, torch_device_names
from planner.model import Cluster, Device, Problem
from planner.plan import load_plan

#: ops named as `planner import torch` names them: an input, module calls, a scope's glue
SPEC = """
cluster c {
  device gpu[0..1] { memory 1 GiB }
  device cpu0 { memory 4 GiB  kind cpu }
  link gpu0, gpu1, cpu0 <-> gpu0, gpu1, cpu0 { bandwidth 10 GB/s }
}
graph g {
  op x { time 0 s  output 1 MB }
  op conv1 { time 1 ms  output 1 MB  params 1 MB }
  op layer1.0 { time 2 ms  output 1 MB  params 2 MB }
  op layer1.0.add_ { time 0.1 ms  output 1 MB }
  op layer1.1 { time 2 ms  output 1 MB  params 2 MB }
  op flatten { time 0.1 ms  output 1 MB }
  op fc { time 1 ms  output 1 KB  params 1 MB }
  x -> conv1 -> layer1.0 -> layer1.0.add_ -> layer1.1 -> flatten -> fc
  conv1 -> layer1.0.add_
}
plan p { graph g cluster c }
"""

MAP = {"conv1": 0, "layer1": 1, "fc": "cpu"}
#: x goes where its consumer conv1 runs, flatten where its input layer1.1 comes from
EXPECTED = {"x": "gpu0", "conv1": "gpu0", "layer1.0": "gpu1", "layer1.0.add_": "gpu1",
            "layer1.1": "gpu1", "flatten": "gpu1", "fc": "cpu0"}


def _problem(text: str = SPEC) -> Problem:
    return planner.loads(text).plan()


def _placement(data: Any, text: str = SPEC) -> dict[str, str]:
    result = placement_from_device_map(_problem(text), data, "map.json")
    placement = result["placement"]
    assert isinstance(placement, dict)
    return placement


def _error(data: Any, text: str = SPEC) -> tuple[str, ...]:
    """The E949 diagnostics' messages and hints, one string each."""
    with pytest.raises(SpecError) as err:
        placement_from_device_map(_problem(text), data, "map.json")
    diags = err.value.diagnostics
    assert {d.code for d in diags} == {"E949"}
    assert all(d.span is not None and d.span.file == "map.json" for d in diags)
    return tuple(d.message + " | " + " | ".join(d.hints) for d in diags)


def _simulate(tmp_path: Path, data: Any, *extra: str) -> tuple[int, str, str]:
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "map.json").write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["simulate", str(tmp_path / "s.plan"), "--placement",
                                      str(tmp_path / "map.json"), *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception))
    return result.exit_code, result.stdout, result.stderr


def test_spec_devices_map_to_torch_devices_by_kind_and_digits() -> None:
    assert torch_device_names(_problem().cluster) == {"gpu0": "cuda:0", "gpu1": "cuda:1",
                                                      "cpu0": "cpu"}
    devices = (Device("acc", 1), Device("host", 1, kind="CPU-x"), Device("gpu7", 1),
               Device("tpu", 1, kind="tpu"), Device("cpu_big", 1, kind="a100"),
               Device("dev", 1))
    # no digits: the accelerators before it (acc; acc and gpu7; acc, gpu7, tpu): a `cpu`
    # kind makes a device `cpu` whatever its name, the name counts only without a kind
    assert torch_device_names(Cluster("k", devices, ())) == {
        "acc": "cuda:0", "host": "cpu", "gpu7": "cuda:7", "tpu": "cuda:2",
        "cpu_big": "cuda:3", "dev": "cuda:4"}


def test_a_device_map_becomes_the_placement_accelerate_would_run() -> None:
    placement = _placement(MAP)
    assert placement == EXPECTED
    assert list(placement) == list(EXPECTED)  # in graph order
    plan = load_plan(_problem(), {"placement": placement}, "map.json")
    assert len(plan.placement) == len(EXPECTED)
    # device strings name the same devices; "cuda" alone is cuda:0
    assert _placement({"conv1": "cuda", "layer1": "cuda:1", "fc": "cpu"}) == EXPECTED


def test_the_longest_key_wins_and_parts_of_a_module_op_place_it() -> None:
    # "" is the whole model; layer1.0 (and its scope's glue) beats layer1
    assert _placement({"": "cpu", "layer1": 1, "layer1.0": 0}) == {
        "x": "cpu0", "conv1": "cpu0", "layer1.0": "gpu0", "layer1.0.add_": "gpu0",
        "layer1.1": "gpu1", "flatten": "cpu0", "fc": "cpu0"}
    # a submodule or parameter of the module op layer1.0 places the op, over `layer1`
    assert _placement({"conv1": 0, "layer1": 1, "layer1.0.conv1": "cpu",
                       "layer1.0.bn1.weight": "cpu", "fc": "cpu"})["layer1.0"] == "cpu0"


CALLS = """
cluster c { device gpu[0..1] { memory 1 GiB } link gpu0 <-> gpu1 { bandwidth 1 GB/s } }
graph g {
  op ids { time 0 s  output 1 KB }
  op view_1 { time 0 s  output 1 KB }
  op emb { time 1 ms  output 1 KB }
  op "emb@1" { time 1 ms  output 1 KB }
  op mask { time 0 s  output 1 KB }
  op head { time 1 ms  output 1 KB }
  op add_3 { time 0 s  output 1 KB }
  op "head#2" { time 1 ms  output 1 KB }
  op lonely { time 1 ms }
  op pos { time 0 s  output 1 KB }
  ids -> view_1 -> emb -> "emb@1"
  mask -> view_1
  mask -> head
  emb -> add_3
  head -> add_3
  add_3 -> "head#2"
  pos -> head
  pos -> emb
}
plan p { graph g cluster c }
"""


def test_uncovered_ops_follow_inputs_then_consumers_then_the_first_mapped_op() -> None:
    placement = _placement({"head": 0, "emb": 1}, CALLS)
    assert placement == {
        # glue outside every mapped module (view_1) takes its consumer's device; ids gets
        # it from view_1 a round later, while mask, whose first consumer is view_1, takes
        # head's: the first consumer placed in an earlier round
        "ids": "gpu1", "view_1": "gpu1", "emb": "gpu1",
        "emb@1": "gpu1",  # a further call of emb: key emb applies
        "mask": "gpu0", "head": "gpu0",
        "add_3": "gpu1",  # its first input by edge order comes from emb
        "head#2": "gpu0",  # the suffix: key head applies
        "lonely": "gpu1",  # no path to a mapped op: the first mapped op (emb), not key 1
        "pos": "gpu0",  # its first consumer by edge order
    }
    # a part of emb places its further call too, over the whole model's key
    placement = _placement({"": 0, "emb.weight": 1}, CALLS)
    assert (placement["emb"], placement["emb@1"], placement["ids"]) == ("gpu1", "gpu1", "gpu0")


def test_simulate_reads_a_device_map_as_its_placement(tmp_path: Path) -> None:
    code, out, err = _simulate(tmp_path, MAP, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ok"] is True and doc["diagnostics"] == []
    assert doc["result"]["placement"] == EXPECTED
    # a plan file and a bare {"placement": ...} are still read as before
    code, out, err = _simulate(tmp_path, {"placement": EXPECTED}, "--json")
    assert code == 0, err
    assert json.loads(out)["result"]["placement"] == EXPECTED
    code, out, err = _simulate(tmp_path, {"conv1": True}, "--json")
    assert code == 1 and [d["code"] for d in json.loads(out)["diagnostics"]] == ["E501"]


@pytest.mark.parametrize(("data", "expected"), [
    ({**MAP, "fc": "disk"}, "`disk`, which is not a device | offloading to disk is not planned"),
    ({**MAP, "fc": "cuda:x"}, "`cuda:x`, which is not a device"),
    ({**MAP, "fc": 1.0}, "`1.0`, which is not a device"),
    ({**MAP, "fc": "gpu1"}, "no device of cluster `c` is torch device `gpu1` | `gpu1` is a "
                            "device of the spec, torch device `cuda:1`"),
    ({**MAP, "fc": -1}, "`-1`, which is not a device"),
    ({**MAP, "fc": 2}, "puts `fc` on `2`: no device of cluster `c` is torch device `cuda:2` | "
                       "cluster `c` has the devices `gpu0` (cuda:0), `gpu1` (cuda:1), "
                       "`cpu0` (cpu)"),
    ({**MAP, "fc": "mps"}, "no device of cluster `c` is torch device `mps`"),
    ({**MAP, "fc": [0, 1]}, "puts `fc` on a list of 2 item(s), which is not a device"),
    ({**MAP, "layr1": 1}, "key `layr1` applies to no op of graph `g` | did you mean `layer1`?"),
    ({**MAP, "f": 1}, "key `f` applies to no op"),  # a prefix only at a separator
    ({**MAP, "layer1.0.conv1": 0, "layer1.0.conv2": 1},
     "splits op `layer1.0` of graph `g` across devices: `layer1.0.conv1` is on `gpu0` and "
     "`layer1.0.conv2` on `gpu1`"),
])
def test_each_mistake_is_an_e949(data: dict[str, Any], expected: str) -> None:
    messages = _error(data)
    assert len(messages) == 1 and expected in messages[0], messages


def test_two_spec_devices_on_one_torch_device_are_ambiguous() -> None:
    spec = SPEC.replace("device cpu0 { memory 4 GiB  kind cpu }",
                        "device cpu0 { memory 4 GiB  kind cpu }  device cpu1 { memory 4 GiB }")
    spec = spec.replace("<-> gpu0, gpu1, cpu0", "<-> gpu0, gpu1, cpu0, cpu1").replace(
        "link gpu0, gpu1, cpu0", "link gpu0, gpu1, cpu0, cpu1")
    assert _placement({"": 0}, spec)["fc"] == "gpu0"  # cpu unused: no problem
    (message,) = _error(MAP, spec)
    assert "devices `cpu0`, `cpu1` of cluster `c` are all torch device `cpu`" in message


def test_simulate_reports_each_error_without_a_traceback(tmp_path: Path) -> None:
    data = {"conv1": 0, "layer1": "disk", "fc": 5, "nope": 1}
    code, out, err = _simulate(tmp_path, data)
    assert code == 1 and out == ""
    assert err.count("error[E949]") == 3 and "Traceback" not in err
    code, out, _ = _simulate(tmp_path, data, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["exit_code"] == 1
    assert [d["code"] for d in doc["diagnostics"]] == ["E949"] * 3


def test_a_key_with_control_characters_is_shown_escaped(tmp_path: Path) -> None:
    key = "fc\nerror[E000]: forged\r"
    code, _, err = _simulate(tmp_path, {**MAP, key: "cpu"})
    assert code == 1 and "Traceback" not in err
    assert "key `fc\\nerror[E000]: forged\\r` applies to no op" in err
    assert not any(line.startswith("error[E000]") for line in err.splitlines())
    assert "\r" not in err


def test_each_mistake_points_at_its_key() -> None:
    """With the file's text, a report about a key points at the key's value (a device that
    is none, a key that applies to no op, a module split across devices), not at line 1."""
    data = {"conv1": 0, "layer1.0.a": 1, "layer1.0.b": 0, "fc": "disk", "nope": 1,
            "flatten": 1, "layer1.1": 1}
    text = json.dumps(data, indent=2)
    with pytest.raises(SpecError) as err:
        placement_from_device_map(_problem(), data, "map.json", text)
    lines = text.splitlines()
    found = sorted((d.span.line, d.message.split(" ")[2]) for d in err.value.diagnostics
                   if d.span is not None)
    expected = sorted((next(n for n, line in enumerate(lines, 1) if f'"{key}"' in line),
                       shown) for key, shown in (("fc", "`fc`"), ("nope", "`nope`"),
                                                  ("layer1.0.b", "op")))
    assert found == expected, [d.message for d in err.value.diagnostics]


def test_two_nodes_devices_never_share_a_torch_device() -> None:
    """Before: `n0.gpu0` and `n1.gpu0` were both cuda:0: `export torch` put the whole
    model on one GPU that the plan had sized for half of it, without a word."""
    devices = tuple(Device(f"n{node}.gpu{k}", 1) for node in (0, 1) for k in (0, 1))
    assert torch_device_names(Cluster("k", (Device("cpu0", 1), *devices), ())) == {
        "cpu0": "cpu", "n0.gpu0": "cuda:0", "n0.gpu1": "cuda:1", "n1.gpu0": "cuda:2",
        "n1.gpu1": "cuda:3"}


def test_a_device_map_onto_a_defaults_device_is_refused() -> None:
    pytest.importorskip("torch", reason="torch_devices checks torch device strings")
    from planner.errors import UsageError
    from planner.io.torch_export import torch_devices

    cluster = _problem().cluster  # gpu0 -> cuda:0, gpu1 -> cuda:1 by default
    assert torch_devices(cluster, {"gpu0": "cuda:1", "gpu1": "cuda:0"})["gpu0"] == "cuda:1"
    with pytest.raises(UsageError) as err:
        torch_devices(cluster, {"gpu0": "cuda:1"})
    (d,) = err.value.diagnostics
    assert d.code == "E930" and "`gpu0` on cuda:1, where the default rule puts `gpu1`" in (
        d.message) and "gpu1=cuda:K" in d.hints[0]
