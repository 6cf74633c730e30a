"""`planner export torch` as users run it: what it refuses and what it writes.

A chain of residual blocks (each: Linear, ReLU, Linear, the residual add, LayerNorm) is
imported once onto two GPUs; each test adds pins or hand-writes a placement file and runs
the command through typer's runner.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from planner.cli import app

pytest.importorskip("torch", reason="PyTorch is not installed (pip install 'planner[torch]')")

MODEL = """\
import torch
from torch import nn


class Res(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.a, self.b, self.n = nn.Linear(d, d), nn.Linear(d, d), nn.LayerNorm(d)

    def forward(self, x):
        return self.n(x + self.b(torch.relu(self.a(x))))


class Chain(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Res() for _ in range(3)])
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def model():
    torch.manual_seed(0)
    return Chain().eval()
"""

CLUSTER = """\
cluster two {
  device gpu[0..1] { kind gpu  memory 1 MiB  flops 15.7 TFLOPS }
  link gpu0 <-> gpu1 { bandwidth 25 GB/s  latency 2 us }
}
"""


class Chain:
    """The imported model: its folder, spec and a runner."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "chain.py").write_text(MODEL)
        (root / "two.plan").write_text(CLUSTER)
        self.spec = root / "chain.plan"
        result = self.run("import", "torch", self.model, "--input", "8x32", "--cluster",
                          root / "two.plan", "-o", self.spec)
        assert result.exit_code == 0, result.output
        self.text = self.spec.read_text()
        self.ops: list[str] = [line.split()[1] for line in self.text.splitlines()
                               if line.startswith("  op ")]

    @property
    def model(self) -> str:
        return f"{self.root / 'chain.py'}:model"

    def run(self, *args: object) -> Result:
        return CliRunner().invoke(app, [str(a) for a in args])

    def with_pins(self, name: str, pins: dict[str, str]) -> Path:
        """The spec with `pins` added to its plan, as `name`.plan."""
        lines = "".join(f'  pin "{op}" to {dev}\n' for op, dev in pins.items())
        head, _, tail = self.text.rpartition("}")
        path = self.root / f"{name}.plan"
        path.write_text(head + lines + "}" + tail)
        return path

    def placement(self, name: str, on_gpu1: set[str], **extra: Any) -> Path:
        """A plan file placing `on_gpu1` on gpu1, every other op on gpu0."""
        path = self.root / f"{name}.json"
        doc = {"placement": {op: "gpu1" if op in on_gpu1 else "gpu0" for op in self.ops}}
        path.write_text(json.dumps({**extra, **doc}))
        return path

    def export(self, spec: Path, placement: Path, *args: object) -> Result:
        return self.run("export", "torch", spec, self.model, "--input", "8x32", "--placement",
                        placement, *args)


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Chain:
    return Chain(tmp_path_factory.mktemp("chain"))


#: a placement that is no device map: block 1's `b` and its add run apart from its `a`
SPLIT = {"blocks.1.b", "blocks.1.add_1"}


def test_the_nearest_module_plan_keeps_the_spec_pins(chain: Chain) -> None:
    """Before: block 1 went whole to one device (module:1), breaking the pin of `blocks.1.b`,
    and the document said `"fits": true`."""
    pins = {"blocks.1.a": "gpu0", "blocks.1.b": "gpu1"}
    spec = chain.with_pins("pinned", pins)
    out = chain.root / "pinned_out.json"
    result = chain.export(spec, chain.placement("pinned", SPLIT), "--nearest", "-o", out)
    assert result.exit_code == 0, result.output
    near = json.loads(out.read_text())["nearest_module_plan"]
    assert near["fits"] and near["exported"]
    assert {op: near["placement"][op] for op in pins} == pins
    plan_file = chain.root / "near.json"
    plan_file.write_text(json.dumps({"placement": near["placement"]}))
    result = chain.run("simulate", spec, "--placement", plan_file)
    assert result.exit_code == 0, result.output


def test_a_nearest_plan_that_breaks_a_pin_is_not_exported(chain: Chain) -> None:
    """Code reading a module's tensor goes with the module at every depth, so no module-level
    plan keeps these two pins. Before: `"fits": true`, exported with exit 0."""
    spec = chain.with_pins("torn", {"blocks.1.a": "gpu0", "blocks.1.relu_1": "gpu1"})
    placement = chain.placement("torn", SPLIT | {"blocks.1.relu_1"})
    result = chain.export(spec, placement)
    assert result.exit_code == 0, result.output
    near = json.loads(result.stdout)["nearest_module_plan"]
    assert not near["fits"] and "breaks the spec (pin: " in result.stderr
    result = chain.export(spec, placement, "--nearest")
    assert result.exit_code == 1 and "error[E951]" in result.output, result.output
    assert "breaks the spec (pin: op" in result.output


def _with_second_plan(chain: Chain) -> tuple[Path, str, str]:
    """The spec with a second plan, `other`: (the spec, its first plan's name, the graph's)."""
    first = next(line.split()[1] for line in chain.text.splitlines()
                 if line.startswith("plan "))
    graph = next(line.split()[1] for line in chain.text.splitlines()
                 if line.startswith("graph "))
    path = chain.root / "two_plans.plan"
    path.write_text(chain.text + f"\nplan other {{\n  graph {graph}\n  cluster two\n}}\n")
    return path, first, graph


def test_a_plan_file_of_another_plan_is_refused_at_its_plan_name(chain: Chain) -> None:
    """Before: the file was applied to the plan chosen, without a word (a hybrid plan's
    replicas became a DDP mesh for a plan without data_parallel)."""
    spec, first, _ = _with_second_plan(chain)
    placement = chain.placement("of_first", SPLIT, plan=first)
    for result in (chain.export(spec, placement, "--plan", "other"),
                   chain.run("simulate", spec, "--plan", "other", "--placement", placement)):
        assert result.exit_code == 1, result.output
        assert "error[E516]" in result.output and f"made for plan `{first}`" in result.output
        assert f"--plan {first}" in result.output
        assert f'"plan": "{first}"' in result.output  # the caret line: the file's value
        assert 'set its "plan" to "other"' in result.output  # a what-if, on purpose
    assert chain.export(spec, placement, "--plan", first).exit_code == 0
    what_if = chain.placement("what_if", SPLIT, plan="other")
    assert chain.run("simulate", spec, "--plan", "other", "--placement",
                     what_if).exit_code == 0


def test_a_spec_of_several_plans_exports_the_plan_its_file_names(chain: Chain) -> None:
    """`simulate` reads the plan a placement file names; `export torch` now does too.
    Before: E602 ("the spec defines several plans; name one") unless --plan repeated it."""
    spec, first, _ = _with_second_plan(chain)
    for name in (first, "other"):
        placement = chain.placement(f"named_{name}", SPLIT, plan=name)
        result = chain.export(spec, placement)
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) == json.loads(
            chain.export(spec, placement, "--plan", name).stdout)
    result = chain.export(spec, chain.placement("unnamed", SPLIT))  # no name: still E602
    assert result.exit_code == 2 and "error[E602]" in result.output, result.output


def test_a_plan_file_of_another_graph_is_one_error(chain: Chain) -> None:
    """Before: an E503 per op of the file (and of the graph, E505)."""
    path = chain.root / "alien.json"
    path.write_text(json.dumps({"plan": "Other_two", "placement": {
        f"op{i}": "gpu0" for i in range(12)}}))
    result = chain.export(chain.spec, path)
    assert result.exit_code == 1, result.output
    assert result.output.count("error[") == 1 and "error[E516]" in result.output
    assert "another graph" in result.output


def test_a_hybrid_plan_exported_without_pipeline_warns_of_its_replicas(chain: Chain) -> None:
    """Before: the replicas were dropped without a word."""
    placement = chain.placement("hybrid", set(), replicas={"gpu0": ["gpu0", "gpu1"]})
    result = chain.export(chain.spec, placement)
    assert result.exit_code == 0, result.output
    assert "warning[W950]" in result.stderr and "--pipeline" in result.stderr


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_failed_output_leaves_the_code_file_as_it_was(chain: Chain) -> None:
    """Before: E623 for -o, but --code's file already held the new code."""
    code = chain.root / "pair.py"
    code.write_text("OLD\n")
    placement = chain.placement("pair", SPLIT)
    result = chain.export(chain.spec, placement, "--code", code, "-o", "/proc/x.json")
    assert result.exit_code == 4 and "error[E623]" in result.output, result.output
    assert code.read_text() == "OLD\n"
    assert not [p for p in chain.root.iterdir() if p.name.startswith(".pair.py.")]
    out = chain.root / "pair_out.json"
    assert chain.export(chain.spec, placement, "--code", code, "-o", out).exit_code == 0
    assert code.read_text().startswith("def forward") and json.loads(out.read_text())


@pytest.mark.parametrize("option", ["-o", "--code"])
def test_a_folder_as_an_output_is_e604(chain: Chain, option: str) -> None:
    """Before: click's "File 'outdir' is a directory." (exit 2, no code)."""
    folder = chain.root / "outdir"
    folder.mkdir(exist_ok=True)
    result = chain.export(chain.spec, chain.placement("folder", SPLIT), option, folder)
    assert result.exit_code == 2 and "error[E604]" in result.output, result.output


def test_the_pipeline_script_finds_its_model_from_any_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `MODEL = 'docs/examples/torch_mlp.py:model'`, relative to the folder the export
    ran in: the script run from elsewhere failed with a FileNotFoundError traceback."""
    import subprocess
    import sys

    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the model named from here
    examples = Path("docs/examples")
    plan_file, script = tmp_path / "pipe_plan.json", tmp_path / "run" / "pipe.py"
    script.parent.mkdir()
    spec = tmp_path / "mlp_pipeline.plan"
    spec.write_text((examples / "mlp_pipeline.plan").read_text())
    runner = CliRunner()
    result = runner.invoke(app, ["import", "torch", "docs/examples/torch_mlp.py:model",
                                 "--input", "8x256", "--training", "--name", "mlp", "-o",
                                 str(tmp_path / "mlp_train.plan")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["solve", str(spec), "--out", str(plan_file)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, [
        "export", "torch", str(spec),
        "docs/examples/torch_mlp.py:model", "--input", "8x256", "--placement", str(plan_file),
        "--pipeline", "--code", str(script)])
    assert result.exit_code == 0, result.output
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = subprocess.run(
        [sys.executable, "-c", "import runpy, sys; sys.argv = ['pipe.py']; "
         f"g = runpy.run_path({str(script)!r}, run_name='pipe'); "
         "m, _ = g['load_model'](); print(type(m).__name__)"],
        cwd=elsewhere, capture_output=True, text=True, timeout=300)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "Sequential"


KEYWORDS = """\
import torch
from torch import nn


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(32, 32), nn.Linear(32, 32)

    def forward(self, x, mask=None):
        h = self.a(x)
        return self.b(h if mask is None else h * mask)


def model():
    torch.manual_seed(0)
    return Masked().eval()
"""


def test_keyword_inputs_the_spec_lacks_are_e945_not_an_fx_refusal(chain: Chain) -> None:
    """Before: E943 "torch.fx takes positional example inputs only" (exit 2), from the fx
    capture `auto` tried after export's, which hid export's own finding; and E945 read
    "it places leaves 2 of the model's ops unplaced"."""
    (chain.root / "masked.py").write_text(KEYWORDS)
    model, spec = f"{chain.root / 'masked.py'}:model", chain.root / "masked.plan"
    done = chain.run("import", "torch", model, "--input", "8x32", "--cluster",
                     chain.root / "two.plan", "-o", spec)
    assert done.exit_code == 0, done.output
    ops = [line.split()[1] for line in spec.read_text().splitlines()
           if line.startswith("  op ")]
    placement = chain.root / "masked.json"
    placement.write_text(json.dumps({"placement": dict.fromkeys(ops, "gpu0")}))
    done = chain.run("export", "torch", spec, model, "--example",
                     "dict(x=torch.randn(8, 32), mask=torch.ones(8, 32))", "--placement",
                     placement)
    assert done.exit_code == 1, done.output
    assert "E943" not in done.output
    assert ("error[E945]: the plan does not match the traced model: it leaves 2 of the "
            "model's ops unplaced (`mask`...)") in done.output


def test_a_model_changed_since_its_import_is_e945(chain: Chain) -> None:
    """Before: the ops' names matched, so a model whose blocks were twice as wide (twice
    the params the plan was sized for) was exported without a word, exit 0."""
    wider = MODEL.replace("nn.Linear(d, d), nn.Linear(d, d)", "nn.Linear(d, 2 * d), "
                          "nn.Linear(2 * d, d)")
    assert wider != MODEL
    (chain.root / "wider.py").write_text(wider)
    done = chain.run("export", "torch", chain.spec, f"{chain.root / 'wider.py'}:model",
                     "--input", "8x32", "--placement", chain.placement("all0", set()))
    assert done.exit_code == 1, done.output
    assert ("error[E945]: the plan's spec does not match the traced model: op `blocks.0.a` "
            "holds 8.25 KiB of params in the model, 4.12 KiB in the spec (5 more op(s) "
            "differ)") in done.output
    same = chain.export(chain.spec, chain.placement("all0", set()))
    assert same.exit_code == 0, same.output
