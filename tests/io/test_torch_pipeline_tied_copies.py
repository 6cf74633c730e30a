"""`--check` of the pipeline script compares every copy of a tied weight a rank holds.

Under `interleaved` a rank runs several stages, and each stage using a tied weight holds
its own copy (GPT-2's embedding and head on stages 0 and 3, both on rank 0 of 3 ranks).
The script named each copy by the weight's first name and kept one per rank (a dict by
name: the last stage's), so a copy whose gradient was not summed or that the optimizer did
not step passed `--check` unseen. Now each copy after the first is kept (`copies`) and
checked as a rank's own (`each_copy`): its gradient against the model's, its step against
the unpipelined optimizer's, and the copies against each other. The script is written
without an export (no import, no processes): its check functions on hand-made results."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from torch_support import load_script

from planner.io.torch_pipeline import Cost, TorchPipeline, TorchStage
from planner.io.torch_pipeline_script import pipeline_script

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")

pytestmark = pytest.mark.slow  # torch.distributed imported: about 3 s on a loaded machine

TIED = [(["emb.weight", "head.weight"], [3], "float32")]
_NO_GRAPH = SimpleNamespace(gm=SimpleNamespace(graph=SimpleNamespace(nodes=[])), shapes={},
                            method="fx", model=None)


def _script(tmp_path: Path) -> Any:
    cost = Cost(1e-3, 4e-3, "interleaved", "", True)
    stages = tuple(TorchStage(k, k % 2, f"d{k % 2}", "cpu", None if k == 0 else f"m{k}",
                              (f"op{k}",)) for k in range(4))
    tp = TorchPipeline("p", "interleaved", 2, True, stages, {"d0": "cpu", "d1": "cpu"},
                       {f"op{k}": f"d{k % 2}" for k in range(4)}, cost, True, "", (), cost,
                       tuple((f"d{k % 2}", f"op{k}") for k in range(4)), optimizer="sgd")
    path = tmp_path / "step.py"
    path.write_text(pipeline_script(tp, _NO_GRAPH, "m.py:model", ["8x3"],  # type: ignore[arg-type]
                                    name="step.py"))
    script = load_script(path)
    script.TIED = TIED
    return script


def _rank(script: Any, grads: list[float], stepped: list[bool]) -> dict[str, Any]:
    """Rank 0 of an interleaved pipeline holding two copies of the tied weight (stages 0
    and 2), each with gradient `grads[k]`, stepped by SGD (lr 1) where `stepped[k]`."""
    copies = []
    for g, step in zip(grads, stepped, strict=True):
        p = torch.nn.Parameter(torch.ones(3))
        p.grad = torch.full((3,), g)
        if step:
            script.optimizer_step([p], "sgd", 1.0)
        copies.append(("emb.weight", p))
    got, params, more = script.rank_tensors(copies, True)
    return {"rank": 0, "losses": [torch.tensor(1.0)] * 2, "output": None,
            "step": "sgd, lr 1", "grads": got, "params": params, "copies": more}


EXPECTED = {"loss": torch.tensor(1.0), "step": "sgd, lr 1", "optimizer": "sgd", "lr": 1.0,
            "initial": {"emb.weight": torch.ones(3)}, "grads": {"emb.weight": torch.ones(3)},
            "params": {"emb.weight": torch.zeros(3)}, "random": []}


def test_every_copy_on_a_rank_is_checked(tmp_path: Path) -> None:
    script = _script(tmp_path)
    # both copies summed and stepped: nothing differs
    good = _rank(script, [1.0, 1.0], [True, True])
    assert len(good["copies"]) == 1
    assert script.differences([good], EXPECTED) == []
    assert script.step_differences([good], EXPECTED) == []
    # the first stage's copy not stepped: before, the rank reported the last copy alone
    # and --check passed
    found = script.step_differences([_rank(script, [1.0, 1.0], [False, True])], EXPECTED)
    assert found == ["1 of 1 parameters differ, the most: emb.weight by 1",
                     "the 2 copies of tied weight emb.weight differ after the step, by up "
                     "to 1"]
    # its gradient not summed with the other copy's (half of it): found too
    assert script.differences([_rank(script, [0.5, 1.0], [True, True])], EXPECTED) == [
        "1 of 1 gradients differ, the most: emb.weight by 0.5"]


def test_one_copy_a_rank_keeps_no_copies(tmp_path: Path) -> None:
    script = _script(tmp_path)
    p = torch.nn.Parameter(torch.ones(3))
    p.grad = torch.ones(3)
    # the same parameter named twice (two names of one module's tie): one copy
    grads, params, copies = script.rank_tensors([("emb.weight", p), ("emb.weight", p)], False)
    assert list(grads) == ["emb.weight"] and params == {} and copies == []
