"""Module names the code torch generates cannot carry: a Python keyword (`class`) in any
capture's graph code, `self` in the stage code of torch.distributed.pipelining. Each is a
located diagnostic before anything is written, not an internal error or a script that
fails in its first stage."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app

pytest.importorskip("torch", reason="the torch extra is not installed")

MODELS = '''
import torch
from torch import nn


class Named(nn.Module):
    def __init__(self, names):
        super().__init__()
        torch.manual_seed(0)
        self.names = names
        for n in names:
            self.add_module(n, nn.Linear(8, 8))
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        for n in self.names:
            x = torch.tanh(getattr(self, n)(x))
        return self.head(x)


def keywords():
    return Named(["first", "class", "None"]).eval()


def with_self():
    return Named(["first", "self", "last"]).eval()


def fine():
    return Named(["first", "torch", "with space", "last"]).eval()
'''

CLUSTER = """cluster c {
  device gpu[0..1] { kind gpu  memory 1 GiB  flops 10 TFLOPS }
  link gpu0 <-> gpu1 { bandwidth 10 GB/s  latency 2 us }
}
"""


def _invoke(cwd: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "c.plan").write_text(CLUSTER)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("capture", ["export", "fx"])
def test_a_module_named_by_a_keyword_is_e942_naming_it(folder: Path, capture: str) -> None:
    """Before: torch.export's module() raised a SyntaxError (E999, exit 4); torch.fx's
    E942 hinted to capture with torch.export, which crashed."""
    code, out = _invoke(folder, "import", "torch", "models.py:keywords", "--input", "4x8",
                        "--cluster", "c.plan", "--capture", capture, "-o", "k.plan")
    assert code == 1 and "E999" not in out, out
    assert "error[E942]: Named cannot be captured: `class` has a Python keyword" in out
    assert "such as `class_`" in out and not (folder / "k.plan").exists()


def _pipeline_export(folder: Path, target: str) -> tuple[int, str]:
    """`target` imported for training, planned as a GPipe pipeline on the two GPUs, then
    exported with `--pipeline`: the export's exit code and output."""
    code, out = _invoke(folder, "import", "torch", f"models.py:{target}", "--input", "4x8",
                        "--cluster", "c.plan", "--training", "-o", f"{target}.plan")
    assert code == 0, out
    (folder / "p.plan").write_text(f'import "{target}.plan"\nplan p {{ graph Named  cluster c  '
                                   "objective pipeline  microbatches 2  schedule gpipe }\n")
    code, out = _invoke(folder, "solve", "p.plan", "--plan", "p", "--out", "plan.json")
    assert code == 0, out
    return _invoke(folder, "export", "torch", "p.plan", f"models.py:{target}", "--input",
                   "4x8", "--placement", "plan.json", "--pipeline", "-o", f"{target}.json")


def test_a_module_named_self_cannot_be_exported_as_a_pipeline(folder: Path) -> None:
    """Before: exported (exit 0), and the script failed in stage 0 with `'NoneType' object
    has no attribute 'torch'` (torch's stage code binds `self` to the part's output; here,
    one stage, `... 'last'`)."""
    code, out = _pipeline_export(folder, "with_self")
    assert code == 1 and "error[E947]: the model's `self` takes the name `self`" in out, out
    assert not (folder / "with_self.json").exists()
    # `torch` and `with space` are names the stage code writes otherwise: exported
    code, out = _pipeline_export(folder, "fine")
    assert code == 0 and (folder / "fine.json").exists(), out


def test_a_top_level_self_is_found_behind_a_nested_one() -> None:
    """Only a top-level `self` clashes (a nested `a.self` is fx's node `a_self`); the search
    for it used to stop at the first `self` anywhere, so `a.self` before `self` hid it."""
    import torch

    from planner.io.torch_capture import keyword_named

    model = torch.nn.Module()
    model.add_module("a", torch.nn.Module())
    model.a.add_module("self", torch.nn.Linear(2, 2))
    assert keyword_named(model, ("self",), first=True) is None
    model.add_module("self", torch.nn.Linear(2, 2))
    assert keyword_named(model, ("self",), first=True) == "self"
    assert keyword_named(model, ("self",)) == "a.self"
