"""The exported `device_map` as accelerate itself runs it, for tensors a module holds directly.

A tensor that code outside every mapped module reads (ViT's `class_token` on the model
itself, `encoder.pos_embedding` on a module whose blocks the plan splits) is keyed by the
module holding it: accelerate's `check_device_map` warns of a key that names no module, and
`dispatch_model` places a module's own tensors only through the module's hook. Run by
accelerate on the devices `0` and `1` of a machine without them: its tensor moves are
recorded instead of made, so where each tensor would go and where each hook runs are read
back and compared with the plan.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest

from planner.io.torch_export import apply_plan
from planner.io.torch_import import Example, trace

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")
accelerate = pytest.importorskip("accelerate", reason="accelerate is not installed (CI "
                                 "installs it)")
hooks = pytest.importorskip("accelerate.hooks")


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(8, 8)
        self.l2 = torch.nn.Linear(8, 8)

    def forward(self, x: Any) -> Any:
        return self.l2(self.l1(x))


class Encoder(torch.nn.Module):
    """Holds `pos` itself, and two blocks the plan puts on two devices."""

    def __init__(self) -> None:
        super().__init__()
        self.pos = torch.nn.Parameter(torch.randn(8))
        self.b0 = Block()
        self.b1 = Block()

    def forward(self, x: Any) -> Any:
        return self.b1(self.b0(x + self.pos))


class Tiny(torch.nn.Module):
    """Holds `tok` itself, as ViT holds `class_token`."""

    def __init__(self) -> None:
        super().__init__()
        self.tok = torch.nn.Parameter(torch.randn(8))
        self.stem = torch.nn.Linear(8, 8)
        self.enc = Encoder()
        self.head = torch.nn.Linear(8, 8)

    def forward(self, x: Any) -> Any:
        return self.head(self.enc(self.stem(x) + self.tok))


#: the plan: the top level and the first block on device 1, the second block and head on 0
ON_1 = ("stem", "add", "enc.add_1", "enc.b0")
#: each tensor's device in that plan
PLANNED = {"tok": 1, "stem": 1, "enc.pos": 1, "enc.b0": 1, "enc.b1": 0, "head": 0}


_TRACED: list[Any] = []  # one capture for both tests


def _exported(devices: dict[str, str]) -> dict[str, Any]:
    if not _TRACED:
        torch.manual_seed(0)
        _TRACED.append(trace(Tiny().eval(), Example((torch.randn(2, 8),)), "fx", "module:2"))
    traced = _TRACED[0]
    placement = {op: "gpu1" if op in ON_1 or op.startswith("x") else "gpu0"
                 for op in traced.names.values()}
    placed = apply_plan(traced, placement, devices, move=False)
    assert placed.device_map is not None, placed.device_map_note
    return {"model": copy.deepcopy(traced.model), "map": placed.device_map,
            "note": placed.device_map_note}


def _dispatched(monkeypatch: pytest.MonkeyPatch, model: Any, device_map: dict[str, Any],
                **options: Any) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """accelerate's dispatch of `model`, its moves recorded: ({tensor: device},
    {hooked module: execution device}, the warnings)."""
    moved: dict[tuple[int, str], Any] = {}
    monkeypatch.setattr(hooks, "set_module_tensor_to_device",
                        lambda module, name, device, **_: moved.__setitem__(
                            (id(module), name), device))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        accelerate.dispatch_model(model, device_map, force_hooks=True, **options)
    path = {id(m): p for p, m in model.named_modules()}
    tensors = {f"{path[m]}.{name}".lstrip("."): dev for (m, name), dev in moved.items()}
    ran = {p: m._hf_hook.execution_device for p, m in model.named_modules()
           if hasattr(m, "_hf_hook")}
    return tensors, ran, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_tensors_a_module_holds_are_keyed_by_it_and_placed_where_the_plan_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    exported = _exported({"gpu0": "cuda:0", "gpu1": "cuda:1"})
    device_map, model = exported["map"], exported["model"]
    modules = dict(model.named_modules())
    assert all(key in modules for key in device_map), device_map  # no key names a tensor
    assert "pass main_device=1" in exported["note"]
    tensors, ran, warned = _dispatched(monkeypatch, model, device_map, main_device=1)
    assert not warned
    for name, _ in model.named_parameters():
        planned = next(d for k, d in PLANNED.items() if name == k or name.startswith(f"{k}."))
        assert tensors.get(name) == planned, (name, tensors.get(name), device_map)
        holder = name.rpartition(".")[0]
        assert ran[holder] == planned, (holder, ran[holder])  # its inputs go where it is


def test_the_exported_map_computes_what_eager_mode_does(
        recwarn: pytest.WarningsRecorder) -> None:
    exported = _exported({"gpu0": "cpu", "gpu1": "cpu"})
    model = exported["model"]
    x = torch.randn(2, 8)
    with torch.no_grad():
        expected = model(x)
        dispatched = accelerate.dispatch_model(copy.deepcopy(model), exported["map"],
                                               force_hooks=True)
        assert torch.equal(dispatched(x), expected)
    assert not [w for w in recwarn if "device_map" in str(w.message)]


class TwoOwn(torch.nn.Module):
    """Holds `a` and `b` itself, each read beside a layer of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(8))
        self.b = torch.nn.Parameter(torch.randn(8))
        self.l0 = torch.nn.Linear(8, 8)
        self.l1 = torch.nn.Linear(8, 8)

    def forward(self, x: Any) -> Any:
        return self.l1(self.l0(x) + self.a) + self.b


def test_a_modules_own_tensors_read_on_two_devices_have_no_map() -> None:
    """accelerate puts a module's own tensors on one device (its hook's)."""
    traced = trace(TwoOwn().eval(), Example((torch.randn(2, 8),)), "fx", "module:1")
    placement = {op: "gpu1" if op in ("l1", "add_1") else "gpu0"
                 for op in traced.names.values()}
    placed = apply_plan(traced, placement, {"gpu0": "cuda:0", "gpu1": "cuda:1"}, move=False)
    assert placed.device_map is None
    assert placed.device_map_note == ("`a` and `b`, tensors of the model itself, are read on "
                                      "two devices; accelerate puts a module's own tensors "
                                      "on one")
