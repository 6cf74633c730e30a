"""`export torch --pipeline` at stage boundaries torch's runtime is strict about.

A model input read late: torch gives the model's inputs to the first stage alone (a later
stage's would be arguments no stage sends, and its schedules stop: "expected non-root
_RecvInfo but got root arg"), so a split whose later stage reads one is E946, with the
nearest split after its readers, which runs. An activation that is not contiguous (an
`nn.LSTM` with `batch_first`): torch sends it in its traced layout, which gloo refuses, so
the script makes it contiguous, and the step runs under gloo as one process would.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from torch_support import load_script, planner_ok, run_jobs
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.io.torch_split_points import nearest_split

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")

MODELS = Path(__file__).resolve().parent / "torch_pipeline_models.py"
INPUTS = ["--input", "8x16", "--input", "8x4"]


def _exported(root: Path, model: str = "gated",
              inputs: Sequence[str] = INPUTS) -> tuple[list[str], Path]:
    """`model` (`gated` or a variant) imported for training, on 2 devices, stage 1 from
    `b`: the export's args."""
    planner_ok("import", "torch", f"{MODELS}:{model}", "--capture", "fx", *inputs,
               "--training", "--name", "gated", "-o", root / "gated.plan")
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
    return (["export", "torch", str(spec), f"{MODELS}:{model}", *inputs, "--placement",
             str(root / "plan.json"), "--pipeline", "--device-map", "gpu0=cpu,gpu1=cpu",
             "-o", str(root / "pipe.json"), "--code", str(root / "pipe.py")], root / "pipe.py")


@dataclass
class Ran:
    """A case exported (`args`: the export's, `nearest`: its `--nearest` export's result,
    where a test checks it) and its script's step run (`save`)."""

    root: Path
    script: Path
    save: Path
    args: list[str] = field(default_factory=list)
    nearest: Any = None


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """The gated model's nearest split, the tagger and the twin exported, then their steps
    run in one set of 2 processes (torch imported once per process, not once per case)."""
    root = tmp_path_factory.mktemp("gated")
    args, script = _exported(root)
    cases = {"gated": Ran(root, script, root / "save", args,
                          CliRunner().invoke(app, [*args, "--nearest"]))}
    for name, inputs, head in (("tagger", "2x5:int64", "head"), ("twin", "4x16", "b")):
        root = tmp_path_factory.mktemp(name)
        cases[name] = Ran(root, _last_stage_from(root, name, inputs, head), root / "save")
    for case in cases.values():
        case.save.mkdir()
    run_jobs(tmp_path_factory.mktemp("runs"), [
        {"script": str(c.script), "ranks": 2, "save": str(c.save),
         "rendezvous": str(c.root / "rendezvous")} for c in cases.values()])
    return cases


@pytest.mark.slow
def test_a_later_stage_reading_a_model_input_is_E946_and_the_nearest_split_runs(
        ran: dict[str, Ran]) -> None:
    gated = ran["gated"]
    args, script, tmp_path = gated.args, gated.script, gated.root
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "E946" in result.output, result.output
    assert "begins at `b`, at or before `mul`, which reads the model's input `gate`" in \
        " ".join(result.output.split())
    result = gated.nearest
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "pipe.json").read_text())
    assert doc["split_spec"] == {"c": "BEGINNING"} and doc["moved"] == ["b", "mul"]
    save = gated.save
    results = [torch.load(save / f"rank{r}.pt") for r in range(2)]
    assert load_script(script).same(results, load_script(script).unpipelined())


def test_the_nearest_split_keeps_a_stage_a_valid_cut_allows(tmp_path: Path) -> None:
    """`a` and `b` compute alike: leaving stage 0 out (moving `x`, `gate`, `a`) moves less
    compute than the cut before `c` (moving `b`, `mul`), but a stage is left out only when
    fewer boundaries exist. Before: one stage (`split_spec` none, moved `x`, `gate`, `a`)."""
    args, _ = _exported(tmp_path, "gated_even", ["--input", "8x16", "--input", "8x16"])
    result = CliRunner().invoke(app, [*args, "--nearest"])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "pipe.json").read_text())
    assert doc["split_spec"] == {"c": "BEGINNING"} and doc["moved"] == ["b", "mul"]
    assert [(s["device"], s["begins_at"]) for s in doc["stages"]] == [("gpu0", None),
                                                                      ("gpu1", "c")]


def test_nearest_split_leaves_a_stage_out_only_without_cuts_for_it() -> None:
    """Against every split by brute force: the fewest stages left out, then the least moved."""
    rng = random.Random(7)
    for _ in range(300):
        n, count = rng.randint(2, 7), rng.randint(2, 4)
        cuts = sorted(rng.sample(range(1, n), rng.randint(0, n - 1)))
        moves = [[rng.choice((0, 1, 5, 40)) for _ in range(n)] for _ in range(count)]
        got = nearest_split(moves, cuts, True)
        assert got is not None
        kept = len(set(got))
        assert kept == min(count, len(cuts) + 1), (moves, cuts, got)
        assert got == sorted(got) and all(p in cuts for p in range(1, n) if got[p] != got[p - 1])
        least = min(sum(moves[s][p] for p, s in enumerate(split))
                    for split in _splits(n, count, cuts) if len(set(split)) == kept)
        assert sum(moves[s][p] for p, s in enumerate(got)) == least


def _splits(n: int, count: int, cuts: Sequence[int]) -> list[list[int]]:
    """Every assignment of n nodes to increasing stages of `count`, changing at `cuts`."""
    out: list[list[int]] = []

    def extend(prefix: list[int]) -> None:
        if len(prefix) == n:
            out.append(prefix)
            return
        stages = (range(count) if not prefix else
                  range(prefix[-1], count if len(prefix) in cuts else prefix[-1] + 1))
        for s in stages:
            extend([*prefix, s])

    extend([])
    return out


def _last_stage_from(root: Path, model: str, inputs: str, head: str) -> Path:
    """`model` imported for training, planned on 2 devices with stage 1 from module
    `head`, exported with --pipeline: the script."""
    planner_ok("import", "torch", f"{MODELS}:{model}", "--input", inputs, "--training",
               "--name", model, "-o", root / f"{model}.plan")
    spec = root / "p.plan"
    spec.write_text(f'import "{model}.plan"\n'
                    "cluster c {\n  device gpu[0..1] { kind gpu  memory 1 GiB  flops 10 TFLOPS }\n"
                    "  link gpu0 <-> gpu1 { bandwidth 100 GB/s }\n}\n"
                    f"plan p {{ graph {model}  cluster c  objective pipeline  microbatches 2  "
                    "schedule 1f1b }\n")
    ops = [o.name for o in planner.load(spec).plans["p"].graph.ops]
    placement = {op: "gpu1" if op.startswith(head) else "gpu0" for op in ops}
    (root / "plan.json").write_text(json.dumps({"placement": placement}))
    script = root / "pipe.py"
    planner_ok("export", "torch", spec, f"{MODELS}:{model}", "--input", inputs,
               "--placement", root / "plan.json", "--pipeline", "--device-map",
               "gpu0=cpu,gpu1=cpu", "-o", root / "pipe.json", "--code", script)
    assert json.loads((root / "pipe.json").read_text())["split_spec"] == {head: "BEGINNING"}
    return script


def _runs_as_one_process(case: Ran) -> None:
    results = [torch.load(case.save / f"rank{r}.pt") for r in range(2)]
    step = load_script(case.script)
    assert step.same(results, step.unpipelined())


@pytest.mark.slow
def test_a_stage_boundary_that_is_not_contiguous_runs_under_gloo(ran: dict[str, Ran]) -> None:
    """Before: every rank stopped ("input tensor has to be contiguous")."""
    _runs_as_one_process(ran["tagger"])


@pytest.mark.slow
def test_an_output_an_earlier_stage_computes_is_none_in_the_output_rebuilt(
        ran: dict[str, Ran]) -> None:
    """torch's last stage returns what it computes only (T5's encoder_last_hidden_state is
    not among them); the loss gets the model's output with None there. Before: the last
    rank stopped rebuilding it ("`leaves` has length 1 but the spec refers to a pytree
    that holds 2 items")."""
    twin = ran["twin"]
    assert load_script(twin.script).LOGITS == 0
    _runs_as_one_process(twin)
