"""Six models people use, each through every step, on the CPU alone.

torchvision's resnet18, mobilenet_v3_small and VisionTransformer (vit_b_16's class) and
transformers' GPT-2, BERT and a Llama-style model (the ViT and the language models from
small configs; random weights: `real_models.py`), each at op granularity and at module
granularity: `import torch` (torch.export, keyword inputs for the language models) ->
`check` -> `solve` on two devices whose memory forces a split -> `export torch` -> the
placed model computes exactly what eager mode does (every device mapped to `cpu`) and feeds
no op from two devices (devices `cpu` and `meta`, where such an op fails). At module
granularity the exported `device_map` is complete and correct: `accelerate.dispatch_model`
with hooks, and for GPT-2 transformers' `from_pretrained(..., device_map=...)`, give eager
mode's outputs, and accelerate's way of running a map (each mapped module's inputs moved to
its device, other code where its inputs are) feeds no op from two devices. Without
torchvision or transformers the models that need them skip; CI installs both.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")

import real_models
from torch._subclasses.fake_tensor import FakeTensorMode
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.io.torch_export import apply_plan, place_parameters, placement_of
from planner.io.torch_import import Example, Traced, grouped, trace

MODELS_FILE = Path(__file__).with_name("real_models.py")
#: the module depth whose calls are the model's repeated blocks, and their class
DEPTH = {"resnet18": 2, "mobilenet_v3_small": 2, "vit": 3, "gpt2": 2, "bert": 2,
         "llama": 2}
BLOCK = {"resnet18": "BasicBlock", "mobilenet_v3_small": "InvertedResidual",
         "vit": "EncoderBlock", "gpt2": "GPT2Block", "bert": "BertLayer",
         "llama": "LlamaDecoderLayer"}
CPU = {"gpu0": "cpu", "gpu1": "cpu"}
FAKE = {"gpu0": "cpu", "gpu1": "meta"}
CLUSTER = """
cluster two {
  device gpu[0..1] { memory 1 TiB }
  link gpu0 <-> gpu1 { bandwidth 12 GB/s  latency 5 us }
}
"""
_EAGER: dict[str, Any] = {}


def _needs(name: str) -> None:
    package = "torchvision" if name in real_models.VISION else "transformers"
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed (CI installs it)")
    if name not in real_models.VISION and importlib.util.find_spec("accelerate") is None:
        pytest.skip("accelerate is not installed (CI installs it)")


def _cli(*words: Any) -> str:
    result = CliRunner().invoke(app, [str(w) for w in words])
    assert result.exit_code == 0, result.output
    return result.output


def _flat(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat(v)]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flat(v)]
    if hasattr(value, "to_tuple"):  # a transformers ModelOutput
        return _flat(value.to_tuple())
    return []


def _same(a: Any, b: Any) -> bool:
    left, right = _flat(a), _flat(b)
    return len(left) == len(right) > 0 and all(torch.equal(x, y) for x, y in
                                               zip(left, right, strict=True))


def _spec(tmp_path: Path, name: str, granularity: str) -> Path:
    """`import torch` on two devices, each given 60% of the spec's static footprint."""
    cluster = tmp_path / "two.plan"
    cluster.write_text(CLUSTER)
    spec = tmp_path / f"{name}.plan"
    _cli("import", "torch", f"{MODELS_FILE}:{name}", *real_models.INPUTS[name],
         "--granularity", granularity, "--cluster", cluster, "-o", spec)
    text = spec.read_text()
    match = re.search(r"Footprint: params \+ outputs ([\d.]+) (\w+)", text.replace("\n# ", " "))
    assert match is not None, text[:800]
    scale = {"B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30}[match.group(2)]
    cap = int(float(match.group(1)) * scale * 0.6)
    cluster.write_text(CLUSTER.replace("memory 1 TiB", f"memory {cap} B"))  # spec imports it
    return spec


def _hooks(model: Any, device_map: dict[str, Any]) -> None:
    """accelerate's semantics of a device map, on any devices (`meta` included): each
    mapped module on its device, its inputs moved there when called; a mapped tensor on
    its device; everything else where its inputs are."""
    def move(value: Any, device: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.to(device)
        if isinstance(value, (tuple, list)):
            return type(value)(move(v, device) for v in value)
        if isinstance(value, dict):
            return {k: move(v, device) for k, v in value.items()}
        return value

    def place(holder: Any, device: Any) -> None:  # tensor by tensor: fake mode allows it
        for module in holder.modules():
            for key, p in module._parameters.items():
                if p is not None:
                    module._parameters[key] = torch.nn.Parameter(p.detach().to(device),
                                                                 p.requires_grad)
            for key, b in module._buffers.items():
                if b is not None:
                    module._buffers[key] = b.to(device)

    modules = dict(model.named_modules())
    for key, value in device_map.items():
        device = torch.device(value if isinstance(value, str) else f"cuda:{value}")
        if key in modules:
            place(modules[key], device)
            modules[key].register_forward_pre_hook(
                lambda m, args, kwargs, d=device: (move(args, d), move(kwargs, d)),
                with_kwargs=True)
            continue
        owner, _, leaf = key.rpartition(".")
        holder = modules[owner]
        store = holder._parameters if leaf in holder._parameters else holder._buffers
        tensor = store[leaf]
        store[leaf] = torch.nn.Parameter(tensor.detach().to(device), tensor.requires_grad) \
            if isinstance(tensor, torch.nn.Parameter) else tensor.to(device)


def _grouped(traced: Traced, granularity: str) -> Traced:
    """`traced` with its nodes grouped by `granularity`: what `trace(..., granularity)` gives
    (the capture and its run do not depend on it), without capturing the model again."""
    found, names = grouped(traced.gm, traced.method, granularity)
    return dataclasses.replace(traced, units=found, granularity=granularity, names=names)


def _eager(name: str) -> tuple[Any, Any]:
    if name not in _EAGER:
        model = getattr(real_models, name)()
        args, kwargs = real_models.example(name)
        with torch.no_grad():
            _EAGER[name] = (model, model(*args, **kwargs))
    return _EAGER[name]


# long: one model through every step, at both granularities, in the order a user takes them
@pytest.mark.parametrize("name", [*real_models.VISION, *real_models.TEXT])
def test_a_model_people_use_goes_through_every_step(tmp_path: Path, name: str) -> None:
    _needs(name)
    model, expected = _eager(name)
    args, kwargs = real_models.example(name)
    captured = trace(model, Example(args, kwargs), "auto")
    maps: dict[str, Any] = {}
    for granularity in ("op", f"module:{DEPTH[name]}"):
        work = tmp_path / granularity.replace(":", "_")
        work.mkdir()
        spec = _spec(work, name, granularity)
        text = spec.read_text()
        assert "captured with torch.export" in " ".join(text.replace("#", " ").split())
        if granularity == "op" and name in (*real_models.TEXT, "vit"):
            attention = re.findall(r"# call_function aten\.(?:scaled_dot_product_attention|"
                                   r"bmm)\.[^\n]*\n(?:\s*#[^\n]*\n)*\s*op ([^\s{]+) \{([^}]*)",
                                   text)
            assert attention and all("flops" in body for _, body in attention), attention[:3]
        _cli("check", spec)
        (graph,) = planner.load(spec).graphs.values()
        assert all(e.bytes > 0 for e in graph.edges)  # every tensor's size is known
        types = {o.type for o in graph.ops}
        assert "" not in types and (BLOCK[name] in types) == (granularity != "op"), types
        solved = json.loads(_cli("solve", spec, "--out", work / "plan.json", "--json"))
        result = solved["result"]
        assert result["feasible"] and result["makespan_s"] >= result["lower_bound_s"] * (
            1 - 1e-9)
        placement = json.loads((work / "plan.json").read_text())["placement"]
        assert set(placement.values()) == {"gpu0", "gpu1"}  # the memory forces a split
        _cli("export", "torch", spec, f"{MODELS_FILE}:{name}", *real_models.INPUTS[name],
             "--placement", work / "plan.json", "--device-map", "gpu0=cpu,gpu1=cpu",
             "-o", work / "export.json")
        exported = json.loads((work / "export.json").read_text())
        traced = _grouped(captured, granularity)
        assert set(traced.names.values()) == set(placement)
        placed = apply_plan(traced, placement, CPU)
        given = traced.example  # the example, with `use_cache=False` for the language models
        with torch.no_grad():
            assert _same(placed.module(*given.args, **given.kwargs), expected)
        fake = apply_plan(traced, placement, FAKE, move=False)
        with torch.no_grad(), FakeTensorMode(allow_non_fake_inputs=True) as mode:
            place_parameters(fake)  # an op fed from `cpu` and `meta` would raise
            back = placement_of(fake, traced, tuple(mode.from_tensor(x) if isinstance(
                x, torch.Tensor) else x for x in traced.inputs))
        wrong = {op: (dev, placement[op]) for op, dev in back.items() if placement[op] != dev}
        assert back and not wrong, wrong
        assert len(exported["copies"]) == len(placed.copies) > 0
        if granularity != "op":
            assert exported["device_map"] is not None, exported["device_map_note"]
            held = "outside any mapped module (`class_token`" in exported["device_map_note"]
            assert held == (name == "vit")  # a tensor code reads, keyed by its module
            assert ("" in exported["device_map"]) == (name == "vit")  # the model holds it
            maps[granularity] = (exported["device_map"], fake.device_map)
        elif exported["device_map"] is None:  # the nearest module-level plan is offered
            nearest = exported["nearest_module_plan"]
            assert nearest["makespan_s"] > 0 and "nearest module-level plan" in \
                exported["device_map_note"]
    (device_map, fake_map), = maps.values()
    _check_device_map(name, model, expected, device_map, fake_map, tmp_path)


def _check_device_map(name: str, model: Any, expected: Any, device_map: dict[str, Any],
                      fake_map: dict[str, Any] | None, tmp_path: Path) -> None:
    from accelerate import dispatch_model

    args, kwargs = real_models.example(name)
    dispatched = dispatch_model(copy.deepcopy(model), device_map, force_hooks=True)
    with torch.no_grad():
        assert _same(dispatched(*args, **kwargs), expected)
    assert fake_map is not None and {*fake_map.values()} == {"cpu", "meta"}
    hooked = copy.deepcopy(model)
    with torch.no_grad(), FakeTensorMode(allow_non_fake_inputs=True) as mode:
        _hooks(hooked, fake_map)  # an op fed from `cpu` and `meta` would raise
        hooked(*(mode.from_tensor(x) for x in args),
               **{k: mode.from_tensor(v) for k, v in kwargs.items()})
    if name == "gpt2":
        model.save_pretrained(tmp_path / "saved")
        loaded = type(model).from_pretrained(tmp_path / "saved", device_map=device_map)
        with torch.no_grad():
            assert _same(loaded(*args, **kwargs), expected)
