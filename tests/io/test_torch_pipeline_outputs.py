"""A pipelined training step of a model with several outputs runs.

Before: the script's `make_batch` gave no target for a model of several outputs (its loss
is the mean square of the outputs, or `--loss`'s), and torch's schedules split a target
whenever they have a loss: `schedule.step(..., target=None)` failed on the last rank in
`_maybe_compute_loss` (`'NoneType' object is not subscriptable`), with `--loss` too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torch_support import planner_ok, run_commands

pytest.importorskip("torch", reason="PyTorch is not installed (pip install 'planner[torch]')")

MODELS = Path(__file__).with_name("torch_pipeline_models.py")
INPUTS = ("--input", "4x16", "--input", "4x8")


@pytest.mark.slow
def test_a_model_of_two_outputs_steps_as_its_unpipelined_self(tmp_path: Path) -> None:
    planner_ok("import", "torch", f"{MODELS}:pair", *INPUTS, "--training", "--name", "pair",
               "-o", tmp_path / "pair.plan")
    spec = tmp_path / "p.plan"
    spec.write_text('import "pair.plan"\ncluster c {\n'
                    "  device gpu[0..1] { kind gpu  memory 1 GiB  flops 10 TFLOPS }\n"
                    "  link gpu[0..1] <-> gpu[0..1] { bandwidth 1 TB/s }\n}\n"
                    "plan p { graph pair  cluster c  objective pipeline  microbatches 4  "
                    "schedule 1f1b }\n")
    planner_ok("solve", spec, "--algo", "uniform", "--out", tmp_path / "plan.json")
    out = planner_ok("export", "torch", spec, f"{MODELS}:pair", *INPUTS, "--placement",
                     tmp_path / "plan.json", "--pipeline", "--device-map", "gpu0=cpu,gpu1=cpu",
                     "-o", tmp_path / "pipe.json", "--code", tmp_path / "step.py")
    assert "2 stage(s) on 2 rank(s)" in out
    check = ["--spawn", "--cpu", "--check"]
    (tmp_path / "runs").mkdir()
    ran = run_commands(tmp_path / "runs", {
        "default": (tmp_path / "step.py", check, tmp_path),
        # a loss of its own, which asserts that it gets no target (None, as unpipelined)
        "loss": (tmp_path / "step.py", [*check, "--loss", f"{MODELS}:pair_loss"], tmp_path)})
    for name, result in ran.items():
        assert result.returncode == 0, (name, result.stderr[-3000:])
        assert "loss and gradients equal the unpipelined model's: True" in result.stdout, name
