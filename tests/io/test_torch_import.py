"""`planner import torch`: names, shapes, params, FLOPs, measured times, errors."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")

from torch_models import MODELS, lstm, lstm_inputs

import planner
from planner.cli import app
from planner.io.times import read_times
from planner.io.torch_import import (
    load_target,
    measure,
    run_annotated,
    to_workload,
    trace,
)
from planner.workload.roofline import PROFILES

MODELS_FILE = Path(__file__).parent / "torch_models.py"


def _cli(tmp_path: Path, *args: str) -> tuple[int, str, Path]:
    out = tmp_path / "m.plan"
    result = CliRunner().invoke(app, ["import", "torch", *args, "-o", str(out)])
    return result.exit_code, result.output, out


def _graph(path: Path) -> planner.Graph:
    (graph,) = planner.load(path).graphs.values()
    return graph


def test_ops_are_named_after_modules_and_scopes() -> None:
    make, inputs = MODELS["cnn"]
    traced = trace(make(), inputs(), "fx")
    names = list(traced.names.values())
    assert names[:4] == ["x", "stem.0", "stem.1", "stem.2"]
    assert {"block1.conv1", "block1.add", "block2.add_1", "head"} <= set(names)
    w = to_workload(traced, "cnn", PROFILES["v100"])
    comments = {o.name: o.comment for o in w.ops}
    assert comments["block1.bn1"] == "call_module block1.bn1: BatchNorm2d"
    assert comments["block1.add"] == "call_function operator.add in Residual block1"


def test_shapes_params_and_flops_come_from_the_model() -> None:
    make, inputs = MODELS["cnn"]
    model = make()
    w = to_workload(trace(model, inputs(), "fx"), "cnn", PROFILES["v100"])
    ops = {o.name: o for o in w.ops}
    assert ops["stem.0"].output_bytes == 2 * 8 * 16 * 16 * 4
    assert ops["head"].flops == 2 * 2 * 8 * 10  # batch x in x out multiply-adds
    assert ops["stem.0"].flops == 2 * (2 * 8 * 16 * 16) * 3 * 9
    every = [*model.parameters(), *model.buffers()]
    assert sum(o.params_bytes for o in w.ops) == sum(t.numel() * t.element_size()
                                                      for t in every)
    bn = model.block1.bn1
    assert ops["block1.bn1"].params_bytes == sum(t.numel() * t.element_size()
                                                 for t in (*bn.parameters(), *bn.buffers()))


def test_shared_modules_and_tuples_are_colocated_and_charged_once() -> None:
    traced = trace(lstm(), lstm_inputs(), "fx")
    w = to_workload(traced, "lstm", PROFILES["v100"])
    ops = {o.name: o for o in w.ops}
    assert [n for n in ops if n.startswith("cell")] == ["cell", "cell@1", "cell@2", "cell@3"]
    assert ops["cell"].params_bytes > 0 and ops["cell@3"].params_bytes == 0
    group = next(g for g in w.colocations if "cell" in g)
    assert {"cell@1", "cell@2", "cell@3"} <= set(group)
    assert any(n.startswith("getitem") for n in group)  # (h, c) is taken apart by its side


def test_attributes_read_by_get_attr_are_params_of_their_user() -> None:
    make, inputs = MODELS["transformer"]
    model = make()
    w = to_workload(trace(model, inputs(), "fx"), "t", PROFILES["v100"])
    assert {o.name: o for o in w.ops}["add"].params_bytes == model.pos.numel() * 4


def test_measured_times_on_cpu() -> None:
    make, inputs = MODELS["mlp"]
    traced = trace(make(), inputs(), "fx")
    times = measure(traced, "cpu", warmup=1, repeat=3, threads=1)
    assert set(times) == set(traced.names) - {"input_1"}
    assert all(t > 0 for t in times.values())
    w = to_workload(traced, "mlp", PROFILES["v100"], times, "cpu")
    assert all("cpu" in o.time_by_kind for o in w.ops if o.name != "input_1")


def test_the_command_writes_a_spec_that_loads(tmp_path: Path) -> None:
    code, output, out = _cli(tmp_path, f"{MODELS_FILE}:mlp", "--input", "8x16", "--measure",
                             "cpu", "--repeat", "3", "--threads", "1", "--training")
    assert code == 0, output
    text = out.read_text()
    assert "--measure cpu" in text.splitlines()[1] and "median of 3 runs" in text
    graph = _graph(out)
    assert len(graph.ops) == 6 + 5  # forward ops and a backward op per non-input op
    assert all(op.time_by_kind.get("cpu", 0) > 0 for op in graph.ops if op.name != "input_1")
    assert len(graph.colocations) == 5


def test_the_header_gives_flops_and_parameters_in_a_readable_unit(tmp_path: Path) -> None:
    code, output, out = _cli(tmp_path, f"{MODELS_FILE}:mlp", "--input", "8x16")
    assert code == 0, output
    # 8 x (16x32 + 32x32 + 32x4) multiply-adds; 16x32+32 + 32x32+32 + 32x4+4 parameters
    assert "forward 26.62 KFLOP (torch.utils.flop_counter), 1,732 parameters." in \
        out.read_text().replace("\n# ", " ")


def test_a_module_target_is_found_in_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As `planner` (the script, whose sys.path lacks the working directory) runs it."""
    (tmp_path / "h15_local_model.py").write_text(
        "import torch\nmodel = torch.nn.Linear(4, 2)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")
                                      and Path(p).resolve() != tmp_path.resolve()])
    try:
        module, namespace = load_target("h15_local_model:model")
    finally:
        sys.modules.pop("h15_local_model", None)
    assert isinstance(module, torch.nn.Linear) and namespace["model"] is module
    with pytest.raises(planner.PlannerError) as err:  # still an error when it is nowhere
        load_target("h15_no_such_model:model")
    assert err.value.diagnostics[0].code == "E939"


def test_the_roofline_spec_is_the_same_byte_for_byte(tmp_path: Path) -> None:
    runs = []
    out = tmp_path / "m.plan"
    for _ in range(2):
        result = CliRunner().invoke(app, ["import", "torch", f"{MODELS_FILE}:transformer",
                                          "--example", "transformer_inputs()", "-o", str(out)])
        assert result.exit_code == 0, result.output
        runs.append(out.read_bytes())
    assert runs[0] == runs[1]


def test_a_profiler_trace_feeds_times(tmp_path: Path) -> None:
    make, inputs = MODELS["mlp"]
    traced = trace(make(), inputs(), "fx")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            run_annotated(traced, *traced.inputs)
    trace_file = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace_file))
    times = read_times(trace_file)
    assert set(traced.names.values()) <= set(times)
    code, output, out = _cli(tmp_path, f"{MODELS_FILE}:mlp", "--input", "8x16", "--times",
                             str(trace_file))
    assert code == 0, output
    assert _graph(out).ops[1].time_s == pytest.approx(times["0"], rel=1e-3)


def test_an_op_of_several_nodes_is_one_profiler_range(tmp_path: Path) -> None:
    make, inputs = MODELS["cnn"]
    traced = trace(make(), inputs(), "export", "module:1")
    several = [u.name for u in traced.units if len(u.nodes) > 1]
    assert several  # `block1` and `block2`: whole residual blocks
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        run_annotated(traced, *traced.inputs)
    trace_file = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace_file))
    events = [e for e in json.loads(trace_file.read_text())["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") == "user_annotation"]
    counts = {name: sum(e["name"] == name for e in events) for name in traced.unit_of()}
    assert all(count == 1 for count in counts.values()), counts


BROKEN = '''
import torch

class Branchy(torch.nn.Module):
    def forward(self, x):
        return x if x.sum() > 0 else -x

def branchy():
    return Branchy()

def square():
    return torch.nn.Linear(4, 4)

def fails():
    raise RuntimeError("no weights")

not_a_model = 3
'''


@pytest.mark.parametrize(("target", "inputs", "code", "exit_code"), [
    ("broken.py:branchy", ["--input", "2x4"], "E942", 1),
    ("broken.py:square", ["--input", "2x5"], "E944", 1),
    ("broken.py:fails", ["--input", "2x4"], "E939", 1),
    ("broken.py:not_a_model", ["--input", "2x4"], "E939", 1),
    ("broken.py:sqare", ["--input", "2x4"], "E939", 1),
    ("missing.py:square", ["--input", "2x4"], "E001", 1),
    ("no_such_package_here:model", ["--input", "2x4"], "E939", 1),
    ("broken.py:square", ["--input", "2xfour"], "E943", 2),
    ("broken.py:square", ["--input", "2x4:floaty"], "E943", 2),
    ("broken.py:square", [], "E943", 2),
    ("broken.py:square", ["--example", "torch.randn(2,"], "E943", 2),
    # before: E999 (exit 4, "a bug in planner"), torch's overflow or allocation failure
    ("broken.py:square", ["--input", "99999999999999999999x4"], "E943", 2),
    ("broken.py:square", ["--input", "2x4:qint8"], "E943", 2),
    ("broken.py:square", ["--input", "2x4", "--measure", "cuda:7"], "E930", 2),
    ("broken.py:square", ["--input", "2x4", "--measure", "nowhere"], "E930", 2),
    # inputs that forward(input) cannot take (before: a second was dropped by the fallback
    # to torch.fx without a word, exit 0; none, with --example (), E944 `StopIteration:`)
    ("broken.py:square", ["--input", "2x4", "--input", "2x4"], "E943", 2),
    ("broken.py:square", ["--example", "()"], "E943", 2),
])
def test_mistakes_are_diagnostics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str,
                                  inputs: list[str], code: str, exit_code: int) -> None:
    (tmp_path / "broken.py").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["import", "torch", target, *inputs, "-o", "m.plan"])
    assert (result.exit_code, code in result.output) == (exit_code, True), result.output
    assert "Traceback" not in result.output and not (tmp_path / "m.plan").exists()
    # nor torch's partial graph, which torch.export prints to stderr when it fails (before:
    # twice, `def forward(self, arg0_1: ...`, above E942)
    assert "def forward" not in result.output


NEEDS = """import torch


def _requirements():
    try:
        import h41_no_such_dependency  # noqa: F401
    except ImportError as err:
        raise RuntimeError("the model's requirements are missing") from err


weights = _requirements()
"""


@pytest.mark.parametrize(("target", "where", "words", "hint"), [
    # a factory: the line that raised, and who called it
    ("broken.py:fails", "broken.py:15:5: ", "`fails()` raised RuntimeError: no weights",
     "when planner called `fails()`"),
    # loading the file: the line, and the cause a library's re-raise hides
    ("needs.py:model", "needs.py:8:9: ", "cannot import needs.py: RuntimeError: the model's "
     "requirements are missing (caused by ModuleNotFoundError: No module named "
     "'h41_no_such_dependency')", "`python needs.py` shows the whole traceback"),
])
def test_a_model_that_raises_is_placed_at_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, where: str, words: str,
        hint: str) -> None:
    (tmp_path / "broken.py").write_text(BROKEN)
    (tmp_path / "needs.py").write_text(NEEDS)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["import", "torch", target, "--input", "2x4", "-o",
                                      "m.plan"], terminal_width=400)
    assert result.exit_code == 1 and result.output.startswith(where + "error[E939]: "
                                                              + words), result.output
    assert "raise RuntimeError(" in result.output.splitlines()[1]  # the line quoted
    assert hint in result.output and "TARGET is" not in result.output, result.output


@pytest.mark.parametrize(("capture", "code", "hint"), [
    ("auto", "E944", "check the --input shapes"),
    ("export", "E942", "capture with the other method (--capture fx)"),
])
def test_inputs_of_the_wrong_shape_print_no_torch_traceback(
        tmp_path: Path, capture: str, code: str, hint: str) -> None:
    """torch.export logs a fake-tensor kernel's traceback before it raises; torch's loggers
    write to the stderr they found at import, so the command runs in a process of its own."""
    (tmp_path / "broken.py").write_text(BROKEN)
    run = subprocess.run([sys.executable, "-m", "planner", "import", "torch", "broken.py:square",
                          "--input", "2x5", "--capture", capture, "-o", "m.plan"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 1 and code in run.stderr and hint in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and "fake_tensor" not in run.stderr, run.stderr


def test_json_interchange_keeps_the_torch_names(tmp_path: Path) -> None:
    code, output, out = _cli(tmp_path, f"{MODELS_FILE}:lstm", "--example", "lstm_inputs()",
                             "--granularity", "module")
    assert code == 0, output
    result = CliRunner().invoke(app, ["export", "json", str(out)])
    names = [op["name"] for op in json.loads(result.output)["ops"]]
    assert "cell@3" in names and names == [op.name for op in _graph(out).ops]


CAPTURED = '''
import torch

class Distance(torch.nn.Module):
    def forward(self, x):
        return torch.cdist(x, x)

class Keywords(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, a, b=None):
        return self.lin(a) + b

def distance():
    return Distance()

def keywords():
    torch.manual_seed(0)
    return Keywords()
'''
KEYWORDS = "dict(a=torch.randn(2, 4), b=torch.randn(2, 4))"


def test_keyword_inputs_a_saved_program_and_op_types(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "captured.py").write_text(CAPTURED)
    monkeypatch.chdir(tmp_path)
    code, output, out = _cli(tmp_path, "captured.py:keywords", "--example", KEYWORDS)
    assert code == 0, output
    graph = _graph(out)
    assert [(o.name, o.type) for o in graph.ops] == [
        ("a", "input"), ("b", "input"), ("lin", "Linear"), ("add", "add")]
    assert "captured with torch.export" in " ".join(out.read_text().replace("#", "").split())
    import importlib.util
    spec = importlib.util.spec_from_file_location("captured_models", tmp_path / "captured.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    program = torch.export.export(module.keywords(), (torch.randn(2, 4),),
                                  {"b": torch.randn(2, 4)})
    torch.export.save(program, tmp_path / "saved.pt2")
    code, output, out = _cli(tmp_path, "saved.pt2")  # the inputs saved with the program
    assert code == 0, output
    assert [o.name for o in _graph(out).ops] == [o.name for o in graph.ops]
    code, output, _ = _cli(tmp_path, "captured.py:keywords", "--example", KEYWORDS,
                           "--capture", "fx")
    assert code == 2 and "E943" in output and "keyword" in output


def test_an_op_without_a_formula_is_named(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "captured.py").write_text(CAPTURED)
    monkeypatch.chdir(tmp_path)
    code, output, _ = _cli(tmp_path, "captured.py:distance", "--input", "3x5")
    assert code == 0 and "W948" in output and "aten._cdist_forward in `cdist`" in output, output
    code, output, _ = _cli(tmp_path, "captured.py:keywords", "--example", KEYWORDS)
    assert code == 0 and "W948" not in output  # a Linear and an add: nothing missed


RECURRENT = '''
import torch

class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)

    def forward(self, x):
        return self.rnn(x)[0]

def tagger():
    torch.manual_seed(0)
    return Tagger().eval()
'''


def test_an_lstm_counts_its_matrix_products(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """nn.LSTM runs as `mkldnn_rnn_layer` on the CPU, which torch's counter has no formula
    for: each step of each sequence multiplies the gates' weights by its input and the
    hidden state (before: no FLOPs and W948, its time bytes only)."""
    (tmp_path / "recurrent.py").write_text(RECURRENT)
    monkeypatch.chdir(tmp_path)
    code, output, out = _cli(tmp_path, "recurrent.py:tagger", "--input", "3x5x8")
    assert code == 0 and "W948" not in output, output
    (op,) = [o for o in _graph(out).ops if o.type == "lstm"]
    weights = sum(p.numel() for name, p in torch.nn.LSTM(
        8, 16, num_layers=2, bidirectional=True).named_parameters() if name.startswith("weight"))
    assert op.flops == pytest.approx(2 * 3 * 5 * weights, rel=1e-3)  # the spec keeps 4 digits


KEEPS = '''
import torch

class Keeps(torch.nn.Module):
    """An LSTM, and a tensor attribute the user's forward() assigns (not a buffer)."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(8, 16, batch_first=True)
        self.last = torch.zeros(())

    def forward(self, x):
        self.last = x.sum()
        return self.rnn(x)[0] + self.last

def keeps():
    torch.manual_seed(0)
    return Keeps()
'''


def test_an_lstm_imports_without_torchs_warning_about_its_weights(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.export warns that `self.rnn._flat_weights[k]` "were assigned during export"
    for every nn.LSTM: torch's own attributes, nothing a user can register. Before: that
    UserWarning in the output of every import; now gone, while the attributes a user's own
    forward() assigns are still named."""
    (tmp_path / "recurrent.py").write_text(RECURRENT + KEEPS)
    monkeypatch.chdir(tmp_path)
    for model, named in (("tagger", []), ("keeps", ["self.last"])):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code, output, _ = _cli(tmp_path, f"recurrent.py:{model}", "--input", "3x5x8",
                                   "--capture", "export")
        assert code == 0, output
        texts = [str(w.message) for w in caught]
        assert not any("_flat_weights" in t for t in texts), texts
        assigned = [t for t in texts if "were assigned during export" in t]
        assert [t.split("The tensor attributes ")[1].split(" were")[0]
                for t in assigned] == named, texts


UNCAPTURABLE = '''
import torch

try:  # registered once per process: the command loads this file anew each time
    double = torch.ops.plannertest.double
except (AttributeError, RuntimeError):
    @torch.library.custom_op("plannertest::double", mutates_args=())
    def double(x: torch.Tensor) -> torch.Tensor:
        return x * 2

class Custom(torch.nn.Module):
    def forward(self, x):
        return double(x) + 1

class Box:
    def __init__(self, t):
        self.t = t

class Boxed(torch.nn.Module):
    def forward(self, x):
        return Box(x * 2)

def custom():
    return Custom()

def boxed():
    return Boxed()
'''


def test_an_op_export_cannot_run_falls_back_to_fx_or_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bad.py").write_text(UNCAPTURABLE)
    monkeypatch.chdir(tmp_path)
    code, output, _ = _cli(tmp_path, "bad.py:custom", "--input", "2x3", "--capture", "export")
    assert code == 1 and "E942" in output and "fake-tensor (meta) kernel" in output, output
    assert "register_fake" in output
    code, output, out = _cli(tmp_path, "bad.py:custom", "--input", "2x3")  # auto: fx
    assert code == 0, output
    header = " ".join(out.read_text().replace("#", " ").split())
    assert "captured with torch.fx (torch.export failed: " in header
    assert "W948" in output and "plannertest.double in `double" in output
    code, output, _ = _cli(tmp_path, "bad.py:boxed", "--input", "2x3")
    assert code == 1 and "E942" in output and "cannot flatten" in output, output
    assert "register_pytree_node" in output


def test_a_failed_capture_names_its_cause(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken.py").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    code, output, _ = _cli(tmp_path, "broken.py:branchy", "--input", "2x4")
    assert code == 1 and "E942" in output, output
    assert "torch.export cannot capture Branchy" in output
    assert "data-dependent control flow" in output and "torch.cond" in output
    assert "control flow that depends on tensor values cannot be traced" not in output


@pytest.mark.parametrize(("option", "value"), [
    ("--granularity", "module:0"), ("--granularity", "layer"), ("--granularity", "module:x"),
    ("--capture", "sideways")])
def test_bad_capture_options_are_E943(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      option: str, value: str) -> None:
    (tmp_path / "broken.py").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    code, output, out = _cli(tmp_path, "broken.py:square", "--input", "2x4", option, value)
    assert code == 2 and "E943" in output and not out.exists(), output
