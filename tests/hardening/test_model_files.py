"""A model file runs only what README says it runs (issue 40, findings 2 and 8).

A saved `torch.export` program (`.pt2`) is loaded without running code it holds: crafted
files whose example-inputs pickle, symbolic shape or guards would run `touch MARK` are
E939 (or load with the guards dropped) and the marker file is never created. A file that
is no program is one located E939: none of torch's log lines, no binary "line 1". A
`--cluster` file with a syntax error is reported before the model is loaded or captured.
"""

from __future__ import annotations

import io
import json
import math
import operator
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from planner.errors import SpecError
from planner.io.torch_program import _check_calls

from .helpers import invoke

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")

ROOT = Path(__file__).resolve().parents[2]


class _Boom:
    """Pickles as a call of `os.system`: what a replaced pickle in a .pt2 would hold."""

    def __init__(self, mark: str) -> None:
        self.mark = mark

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (f"touch {self.mark}",))


class _Scaled(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: Any) -> Any:
        return self.lin(x) * x.shape[0]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A program with a dynamic batch (so that it holds symbolic shapes), saved."""
    path = tmp_path_factory.mktemp("pt2") / "base.pt2"
    batch = torch.export.Dim("b", min=2, max=64)
    program = torch.export.export(_Scaled(), (torch.randn(8, 4),),
                                  dynamic_shapes=({0: batch},))
    torch.export.save(program, path)
    return path


def _rewrite(src: Path, dst: Path, change: Callable[[str, bytes], bytes]) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, change(info.filename, zin.read(info.filename)))
    return dst


def _edit_program(edit: Callable[[dict[str, Any]], None]) -> Callable[[str, bytes], bytes]:
    def change(name: str, data: bytes) -> bytes:
        if not name.endswith("models/model.json"):
            return data
        doc = json.loads(data)
        edit(doc)
        return json.dumps(doc).encode()
    return change


def _sample_inputs(mark: str) -> Callable[[str, bytes], bytes]:
    buffer = io.BytesIO()
    torch.save(((_Boom(mark),), {}), buffer)
    return lambda name, data: (buffer.getvalue() if name.endswith("sample_inputs/model.pt")
                               else data)


def _symbolic_shape(mark: str) -> Callable[[str, bytes], bytes]:
    def edit(doc: dict[str, Any]) -> None:
        for value in doc["graph_module"]["graph"]["sym_int_values"].values():
            value["as_expr"]["expr_str"] = f"__import__('os').system('touch {mark}')"
    return _edit_program(edit)


def _attribute_path(mark: str) -> Callable[[str, bytes], bytes]:
    """A parameter renamed so that `module()`'s source, `getattr(self.lin, "NAME")`, runs
    `touch` when the module does."""
    name = f'lin.w"+str(exec("import os;os"+chr(46)+"system(\'touch {mark}\')"))+"'

    def change(member: str, data: bytes) -> bytes:
        if not member.endswith(("models/model.json", "model_weights_config.json")):
            return data
        doc = json.loads(data)
        if member.endswith("model_weights_config.json"):
            doc["config"][name] = doc["config"].pop("lin.weight")
        for spec in doc.get("graph_module", {}).get("signature", {}).get("input_specs", []):
            if (spec.get("parameter") or {}).get("parameter_name") == "lin.weight":
                spec["parameter"]["parameter_name"] = name
        return json.dumps(doc).encode()
    return change


def _guards(mark: str) -> Callable[[str, bytes], bytes]:
    def edit(doc: dict[str, Any]) -> None:
        doc["guards_code"] = [f"__import__('os').system('touch {mark}') == 0"]
    return _edit_program(edit)


@pytest.mark.slow
@pytest.mark.parametrize(("way", "said"), [
    ("sample_inputs", "would import `posix.system`"),
    ("symbolic_shape", "torch would evaluate it as Python"),
    ("attribute_path", "torch would write it into the module's Python source")])
def test_a_pt2_that_would_run_code_is_e939_and_runs_nothing(saved: Path, tmp_path: Path,
                                                             way: str, said: str) -> None:
    """Before: the replaced example-inputs pickle ran `touch` (torch's fallback to
    `weights_only=False`), and so did a symbolic shape (`sympy.sympify` evaluates it); a
    parameter's name went into the placed module's source, to run with it."""
    make = {"sample_inputs": _sample_inputs, "symbolic_shape": _symbolic_shape,
            "attribute_path": _attribute_path}[way]
    _rewrite(saved, tmp_path / "m.pt2", make("MARKED"))
    code, out, err = invoke(["import", "torch", "m.pt2", "-o", "m.plan"], tmp_path)
    assert not (tmp_path / "MARKED").exists(), "the file's code ran"
    assert code == 1 and out == "", err
    assert "m.pt2:1:1: error[E939]" in err and "Traceback" not in err
    assert said in err, err
    assert not (tmp_path / "m.plan").exists()


@pytest.mark.slow
def test_a_pt2_loads_with_its_guards_dropped_and_runs_none(saved: Path,
                                                           tmp_path: Path) -> None:
    """Before: `ExportedProgram.module()` compiled and ran the file's `guards_code`."""
    _rewrite(saved, tmp_path / "m.pt2", _guards("MARKED"))
    code, _, err = invoke(["import", "torch", "m.pt2", "-o", "m.plan"], tmp_path)
    assert not (tmp_path / "MARKED").exists(), "the file's guards ran"
    assert code == 0, err
    assert "lin" in (tmp_path / "m.plan").read_text()


@pytest.mark.slow
def test_a_saved_program_with_symbolic_shapes_still_imports(saved: Path,
                                                            tmp_path: Path) -> None:
    code, _, err = invoke(["import", "torch", str(saved), "-o", "m.plan"], tmp_path)
    assert code == 0, err
    assert "E939" not in err


def test_a_graph_calling_no_operator_is_refused() -> None:
    """torch's verifier refuses such a call too; planner checks again before running it."""
    def program(target: Any) -> Any:
        node = SimpleNamespace(op="call_function", target=target, name="boom")
        module = SimpleNamespace(graph=SimpleNamespace(nodes=[node]))
        return SimpleNamespace(graph_module=SimpleNamespace(modules=lambda: [module]))

    with pytest.raises(SpecError, match=r"node `boom` calls `posix.system`, which is no torch"):
        _check_calls(program(os.system), "m.pt2", torch)
    with pytest.raises(SpecError, match="no torch operator"):
        _check_calls(program(operator.call), "m.pt2", torch)
    for fine in (torch.ops.aten.add.Tensor, operator.getitem, torch.sym_max, math.ceil):
        _check_calls(program(fine), "m.pt2", torch)


@pytest.mark.slow
def test_a_file_that_is_no_program_is_one_diagnostic_without_logs_or_bytes(
        saved: Path, tmp_path: Path) -> None:
    """Before: 16 to 87 lines of torch's log and a binary "line 1" under the E939."""
    (tmp_path / "noise.pt2").write_bytes(bytes(range(256)) * 12)
    (tmp_path / "cut.pt2").write_bytes(saved.read_bytes()[:2000])
    _rewrite(saved, tmp_path / "inputs.pt2", _sample_inputs("MARKED"))
    for name in ("noise.pt2", "cut.pt2", "inputs.pt2"):
        done = subprocess.run([sys.executable, "-m", "planner", "import", "torch", name,
                               "-o", "m.plan"], cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
        lines = done.stderr.splitlines()
        assert done.returncode == 1, done.stderr
        assert lines[0].startswith(f"{name}:1:1: error[E939]: "), done.stderr
        assert len(lines) == 2 and lines[1].startswith("  = hint: "), done.stderr
        assert "\ufffd" not in done.stderr and "PK" not in done.stderr
    assert not (tmp_path / "MARKED").exists()


def test_a_cluster_file_with_a_syntax_error_is_reported_before_the_model_loads(
        tmp_path: Path) -> None:
    """Before: the model was loaded and captured (14 to 24 s), then the cluster's error."""
    (tmp_path / "model.py").write_text(
        "import pathlib\npathlib.Path('LOADED').touch()\nimport torch\n"
        "model = torch.nn.Linear(4, 4)\n")
    (tmp_path / "c.plan").write_text("cluster c {\n  device gpu0 { memory 1 GiB\n}\n")
    code, _, err = invoke(["import", "torch", "model.py:model", "--input", "2x4",
                           "--cluster", "c.plan", "-o", "m.plan"], tmp_path)
    assert code == 1 and "c.plan:3:" in err and "missing `}`" in err, err
    assert not (tmp_path / "LOADED").exists(), "the model was loaded before the check"
    (tmp_path / "c.plan").write_text("graph g { op a { time 1 ms } }\n")
    code, _, err = invoke(["import", "torch", "model.py:model", "--input", "2x4",
                           "--cluster", "c.plan", "-o", "m.plan"], tmp_path)
    assert code == 2 and "E931" in err and not (tmp_path / "LOADED").exists(), err


def test_a_model_file_that_is_not_python_source_is_e939_at_its_path(tmp_path: Path) -> None:
    """Before: "No module named '/path/model'", as if TARGET named a module."""
    (tmp_path / "mlp.txt").write_text("import pathlib\npathlib.Path('LOADED').touch()\n")
    for target in ("mlp.txt", str(tmp_path / "mlp.txt") + ":model"):
        code, _, err = invoke(["import", "torch", target, "-o", "m.plan"], tmp_path)
        shown = target.removesuffix(":model")
        assert code == 1 and err.startswith(f"{shown}: error[E939]: "), err
        assert "must be Python source ending in `.py`" in err and "No module" not in err, err
        assert "rename it to `mlp.py`" in err, err
    assert not (tmp_path / "LOADED").exists()
    code, _, err = invoke(["import", "torch", "json.decoder:nothing", "-o", "m.plan"],
                          tmp_path)  # a module by name still imports
    assert code == 1 and "json.decoder defines no `nothing`" in err, err


def test_a_name_the_model_file_does_not_define_is_e939_naming_what_it_may_be(
        tmp_path: Path) -> None:
    """Before: "net.py defines no `mdl`" at 1:1 and no hint (a did-you-mean among every
    name, `torch` and `SIZE` too, at best). The file's models, model classes and functions
    of no arguments are listed; an imported class, or a function that needs arguments, not."""
    (tmp_path / "net.py").write_text(
        "import torch\nfrom torch.nn import Linear\n\n"
        "class Tiny(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n"
        "def build(width=4):\n    return Linear(width, 2)\n\n"
        "def helper(x):\n    return x\n\nnet = Tiny()\nSIZE = 4\n")
    code, _, err = invoke(["import", "torch", "net.py:mdl", "--input", "4", "-o", "m.plan"],
                          tmp_path)
    assert code == 1 and err.startswith("net.py:1:1: error[E939]: net.py defines no `mdl`"), err
    assert ("hint: it defines `Tiny` (an nn.Module class), `build` (a function of no "
            "arguments), `net` (an nn.Module): give one as `net.py:NAME`") in err, err
    code, _, err = invoke(["import", "torch", "net.py:Net", "--input", "4", "-o", "m.plan"],
                          tmp_path)
    assert "did you mean `net`?" in err, err  # among those alone
    (tmp_path / "none.py").write_text("SIZE = 4\n")
    code, _, err = invoke(["import", "torch", "none.py", "--input", "4", "-o", "m.plan"],
                          tmp_path)
    assert code == 1 and ("NAME must name an nn.Module of none.py, or a function there that "
                          "returns one") in " ".join(err.split()), err
