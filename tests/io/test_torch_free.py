"""Only planner's torch modules may import torch: everything else works without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import PlannerError
from planner.io.torch_import import import_torch

ROOT = Path(__file__).resolve().parents[2]
TORCH_MODULES = {"planner.io.torch_import", "planner.io.torch_export",
                 "planner.io.torch_pipeline", "planner.io.torch_capture",
                 "planner.io.torch_device_map", "planner.io.torch_flops",
                 "planner.io.torch_load", "planner.io.torch_program",
                 "planner.io.torch_units", "planner.io.torch_values",
                 "planner.io.torch_pipeline_script", "planner.io.torch_ranks",
                 "planner.io.torch_split_points", "planner.io.torch_measure",
                 "planner.io.torch_logs", "planner.io.torch_loss", "planner.io.torch_mesh"}

CHECK = """
import importlib, pkgutil, sys
import planner
skip = set(sys.argv[1:])
names = sorted(m.name for m in pkgutil.walk_packages(planner.__path__, "planner.")
               if m.name not in skip and not m.name.endswith("__main__"))
for name in names:
    importlib.import_module(name)
print(len(names))
print("torch" in sys.modules)
"""


@pytest.mark.slow
def test_no_other_planner_module_imports_torch() -> None:
    result = subprocess.run([sys.executable, "-c", CHECK, *sorted(TORCH_MODULES)],
                            capture_output=True, text=True, cwd=ROOT, timeout=300,
                            check=False)
    assert result.returncode == 0, result.stderr
    count, loaded = result.stdout.split()
    assert int(count) > 40  # every module was imported, not none
    assert loaded == "False", "a planner module outside the torch ones imports torch"


def test_the_torch_modules_are_the_ones_named_here() -> None:
    found = {f"planner.io.{p.stem}" for p in (ROOT / "planner" / "io").glob("torch*.py")}
    assert found == TORCH_MODULES


def test_without_torch_the_commands_say_which_extra(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    with pytest.raises(PlannerError) as err:
        import_torch("model.py:mlp", ["8x16"])
    assert err.value.diagnostics[0].code == "E938"
    result = CliRunner().invoke(app, ["import", "torch", "model.py:mlp", "--input",
                                      "8x16", "-o", str(tmp_path / "m.plan")])
    assert result.exit_code == 2 and "E938" in result.output and "planner[torch]" in \
        result.output
    # the CPU build first: a plain `pip install 'planner[torch]'` fetches a CUDA build
    cpu = "pip install torch --index-url https://download.pytorch.org/whl/cpu && pip install"
    assert cpu in " ".join(result.output.split())
