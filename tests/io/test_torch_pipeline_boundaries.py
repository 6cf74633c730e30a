"""`export torch --pipeline` where a model input is read late: torch gives the model's
inputs to the first stage alone (a later stage's would be arguments no stage sends, and its
schedules stop: "expected non-root _RecvInfo but got root arg"), so a split whose later
stage reads one is E946, with the nearest split after its readers, which runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from torch_support import load_script, planner_ok, run_jobs
from typer.testing import CliRunner

from planner.cli import app

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")

MODELS = Path(__file__).resolve().parent / "torch_pipeline_models.py"
INPUTS = ["--input", "8x16", "--input", "8x4"]


def _exported(root: Path) -> tuple[list[str], Path]:
    """`gated` imported for training, on 2 devices, stage 1 from `b`: the export's args."""
    planner_ok("import", "torch", f"{MODELS}:gated", "--capture", "fx", *INPUTS, "--training",
               "--name", "gated", "-o", root / "gated.plan")
    spec = root / "p.plan"
    spec.write_text('import "gated.plan"\n'
                    "cluster c {\n  device gpu[0..1] { kind gpu  memory 1 GiB  flops 10 TFLOPS }\n"
                    "  link gpu0 <-> gpu1 { bandwidth 100 GB/s }\n}\n"
                    "plan p { graph gated  cluster c  objective pipeline  microbatches 2  "
                    "schedule gpipe }\n")
    first = {"x", "gate", "a"}
    placement = {op: "gpu0" if op.removesuffix(".bwd") in first else "gpu1"
                 for op in ("x", "gate", "a", "b", "mul", "c", "a.bwd", "b.bwd", "mul.bwd",
                            "c.bwd")}
    (root / "plan.json").write_text(json.dumps({"placement": placement}))
    return (["export", "torch", str(spec), f"{MODELS}:gated", *INPUTS, "--placement",
             str(root / "plan.json"), "--pipeline", "--device-map", "gpu0=cpu,gpu1=cpu",
             "-o", str(root / "pipe.json"), "--code", str(root / "pipe.py")], root / "pipe.py")


@pytest.mark.slow
def test_a_later_stage_reading_a_model_input_is_E946_and_the_nearest_split_runs(
        tmp_path: Path) -> None:
    args, script = _exported(tmp_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "E946" in result.output, result.output
    assert "begins at `b`, at or before `mul`, which reads the model's input `gate`" in \
        " ".join(result.output.split())
    result = CliRunner().invoke(app, [*args, "--nearest"])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "pipe.json").read_text())
    assert doc["split_spec"] == {"c": "BEGINNING"} and doc["moved"] == ["b", "mul"]
    save = tmp_path / "save"
    save.mkdir()
    run_jobs(tmp_path, [{"script": str(script), "ranks": 2, "save": str(save),
                         "rendezvous": str(tmp_path / "rendezvous")}])
    results = [torch.load(save / f"rank{r}.pt") for r in range(2)]
    assert load_script(script).same(results, load_script(script).unpipelined())
