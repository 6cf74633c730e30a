"""The pipeline script's optimizer step: the training step the plan was made for.

A spec of `planner import torch --training --optimizer NAME` counts NAME's state in each
stage's memory; the script `export torch --pipeline --code` writes ran the schedule's step
(forward, backward, gradients) and no optimizer step. It now records the spec's optimizer
(OPTIMIZER, read from its backward ops' params: `training.optimizer_of`; `sgd` where they
say none), steps it once on each rank over its stages' parameters (`--optimizer`, `--lr`
override it; `--optimizer none` takes no step), and `--check` compares the parameters after
the step with the unpipelined model's after the same step.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from torch_support import load_script, planner_ok, run_commands

from planner.workload.training import OPTIMIZER_STATE, optimizer_of

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")

MODELS = Path(__file__).resolve().parent / "torch_pipeline_models.py"
SAID = ("the optimizer step ({}) on each rank equals the unpipelined optimizer's on its "
        "gradients: {}")


def _exported(root: Path, *import_args: str) -> Path:
    """The MLP imported with `import_args`, its 1F1B pipeline of 4 micro-batches on two
    devices (modules 0-3 and 4-8) exported with its script: the script's path."""
    planner_ok("import", "torch", f"{MODELS}:mlp", "--capture", "fx", "--input", "8x16",
               *import_args, "--name", "mlp", "-o", root / "mlp.plan")
    (root / "p.plan").write_text(
        'import "mlp.plan"\n'
        "cluster c {\n  device gpu[0..1] { kind gpu  memory 1 GiB  flops 10 TFLOPS }\n"
        "  link gpu0 <-> gpu1 { bandwidth 1 TB/s }\n}\n"
        "plan p { graph mlp  cluster c  objective pipeline  microbatches 4  schedule 1f1b }\n")
    ops = [line.split()[1].strip('"') for line in (root / "mlp.plan").read_text().splitlines()
           if line.strip().startswith("op ")]
    forward = [op for op in ops if not op.endswith(".bwd")]
    cut = forward.index("4")
    placement = {op: "gpu0" if forward.index(op.removesuffix(".bwd")) < cut else "gpu1"
                 for op in ops}
    (root / "placement.json").write_text(json.dumps({"placement": placement}))
    planner_ok("export", "torch", root / "p.plan", f"{MODELS}:mlp", "--input", "8x16",
               "--placement", root / "placement.json", "--pipeline", "--device-map",
               "gpu0=cpu,gpu1=cpu", "-o", root / "pipe.json", "--code", root / "step.py")
    return root / "step.py"


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    """The MLP exported for momentum and for adam; `script --spawn --cpu --check --save DIR
    ARGS` of each (`--lr 1`; `--optimizer none`), in one set of 2 processes (torch imported
    once per process, not once per run and rank): per case, the script and the run."""
    cases = {"momentum": ("--lr", "1"), "none": ("--optimizer", "none")}
    scripts = {}
    for name, optimizer in (("momentum", "momentum"), ("none", "adam")):
        scripts[name] = _exported(tmp_path_factory.mktemp(name), "--training", "--optimizer",
                                  optimizer)
        (scripts[name].parent / "save").mkdir()
    runs = run_commands(tmp_path_factory.mktemp("runs"), {
        name: (script, ["--spawn", "--cpu", "--check", "--save", str(script.parent / "save"),
                        *cases[name]], script.parent) for name, script in scripts.items()})
    return {name: (scripts[name], runs[name]) for name in cases}


def _checked(checked: dict[str, tuple[Path, Any]], name: str
             ) -> tuple[str, list[dict[str, Any]]]:
    """Case `name`'s run, which must pass: its output and each rank's result."""
    script, run = checked[name]
    save = script.parent / "save"
    assert run.returncode == 0, run.stdout + run.stderr[-4000:]
    assert "loss and gradients equal the unpipelined model's: True" in run.stdout
    return run.stdout, [torch.load(save / f"rank{r}.pt") for r in range(2)]


def test_optimizer_of_reads_the_state_add_backward_counts() -> None:
    for name, copies in OPTIMIZER_STATE.items():
        assert optimizer_of([(2176, 2176 * (1 + copies)), (0, 0), (4224, 4224 * (1 + copies))]) \
            == name
    assert optimizer_of([(1_000_000, 3_001_000)]) == "adam"  # sizes printed to 4 digits
    assert optimizer_of([]) is None and optimizer_of([(0, 0)]) is None  # no params: none said
    assert optimizer_of([(10, 10), (10, 30)]) is None  # the pairs disagree
    assert optimizer_of([(10, 50)]) is None  # four copies: no optimizer import counts


@pytest.mark.slow
@pytest.mark.parametrize(("import_args", "constant"), [
    (("--training", "--optimizer", "sgd"), "sgd"),
    (("--training",), "adam"),  # import's default
    ((), None),  # inference: no optimizer
])
def test_the_script_records_the_specs_optimizer(tmp_path: Path, import_args: tuple[str, ...],
                                                constant: str | None,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    script = _exported(tmp_path, *import_args)
    assert f"OPTIMIZER: str | None = {constant!r}\n" in script.read_text()
    # the JSON beside it says so too, with the learning rate and the state the plan counts
    # (SGD none, Adam two copies of each device's params); before, no optimizer at all
    said = json.loads((tmp_path / "pipe.json").read_text())["optimizer"]
    assert (said["name"], said["counted"]) == (constant, constant)
    assert said["lr"] == (load_script(script).LR if constant else None)
    held = said["state_bytes"]
    assert set(held) == {"gpu0", "gpu1"}
    assert all(b > 0 for b in held.values()) if constant == "adam" else not any(held.values())
    module = load_script(script)
    capsys.readouterr()
    if constant is None:  # an inference step has no optimizer to step: a usage error
        with pytest.raises(SystemExit) as stopped:
            module.main(["--optimizer", "adam"])
        assert stopped.value.code == 2
        assert "runs inference, which steps no optimizer" in capsys.readouterr().err
    else:  # a learning rate torch refuses is a usage error, before any rank starts: one
        # run as a user's (sgd's), the others through the script's `main` (each run
        # imports torch)
        if constant == "sgd":
            run = subprocess.run([sys.executable, str(script), "--lr", "-1"],
                                 capture_output=True, text=True, timeout=120, check=False)
            assert run.returncode == 2 and "argument --lr" in run.stderr, run.stderr
            assert "Traceback" not in run.stderr, run.stderr
        for bad in ("nan", "inf", "fast", *(("-1",) if constant != "sgd" else ())):
            with pytest.raises(SystemExit) as stopped:
                module.main(["--lr", bad])
            assert stopped.value.code == 2
            assert "argument --lr" in capsys.readouterr().err


@pytest.mark.slow
def test_the_script_steps_the_optimizer_and_check_compares_the_parameters(
        checked: dict[str, tuple[Path, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    script_path = checked["momentum"][0]
    out, results = _checked(checked, "momentum")
    assert SAID.format("momentum, lr 1", True) in out
    assert ("the parameters after it equal the unpipelined model's after its own step, within "
            "1e-05") in out
    assert "6 gradient(s), 6 parameter(s) stepped (momentum, lr 1)" in out
    script = load_script(script_path)
    expected = script.unpipelined(mode="eval", lr=1.0)
    assert expected["step"] == "momentum, lr 1" and script.same(results, expected)
    assert all(torch.equal(r["params"][n], p) for r in results
               for n, p in script.replayed(r, expected).items())
    initial = dict(script.load_model(mode="eval")[0].named_parameters())
    stepped = {name: p for r in results for name, p in r["params"].items()}
    assert stepped.keys() == expected["params"].keys() == expected["grads"].keys()
    for name, p in stepped.items():  # momentum's first step: p - lr * grad
        want = initial[name].detach() - expected["grads"][name]
        assert torch.allclose(p, want, atol=1e-6) and not torch.allclose(p, initial[name])
    # a rank that took no step (rank 0: modules 0 and 2, 4 parameters) is found, and said
    kept = {n: initial[n].detach() for n in results[0]["params"]}
    unstepped = [dict(results[0], params=kept), results[1]]
    found = script.step_differences(unstepped, expected)
    assert len(found) == 1 and found[0].startswith("4 of 10 parameters differ, the most: ")
    assert not script.same(unstepped, expected)
    assert not script.check(unstepped, expected, "eval")
    said = capsys.readouterr().out.splitlines()
    assert said[2:5] == [SAID.format("momentum, lr 1", False), "  " + found[0],
                         "  from the unpipelined model's own step (gradients equal within the "
                         "tolerance can step apart: by lr times their difference; adam divides "
                         "each by its magnitude, so by up to lr where one is near zero):"]
    assert said[5].startswith("    4 of 10 parameters differ, the most: ")
    assert script.step_differences([dict(results[0], step=None), results[1]], expected) == [
        "the ranks took optimizer step(s) None, momentum, lr 1; the unpipelined model "
        "momentum, lr 1"]
    # a tied weight's copies, each near the model's but not equal, are found too
    script.TIED = [(["0.bias", "tied.copy"], [32], "float32")]
    nudged = dict(results[1], params={**results[1]["params"],
                                      "0.bias": results[0]["params"]["0.bias"] + 1e-7})
    found = script.step_differences([results[0], nudged], expected)
    assert len(found) == 1, found  # within the tolerance of the model's, yet not equal
    assert found[0].startswith("the 2 copies of tied weight 0.bias differ after the step, by "
                               "up to 1.")


@pytest.mark.slow
def test_optimizer_none_takes_no_step(checked: dict[str, tuple[Path, Any]]) -> None:
    out, results = _checked(checked, "none")
    assert "optimizer step" not in out and "stepped" not in out
    assert [(r["step"], r["params"]) for r in results] == [(None, {}), (None, {})]
