"""The exported script's loss, counted by the spec `import torch --training` writes.

Before: the imported graph had no loss, while the script's `loss_fn` takes the
cross-entropy of the output's `logits` on the last stage, which keeps an fp32 log-softmax
per micro-batch in flight and makes two fp32 gradients in its backward pass. A model with
a 32x250000 head (wide2.py, 64x16 inputs, Adam, 1F1B, 4 micro-batches, 2 ranks) held
370.07 MiB on its last rank in torch (peak of the live storages during `schedule.step`,
plus params and Adam's state) where the plan said 186.94 MiB; now it says 370.03 MiB
(GPipe: 704.80 MiB held, 370.06 MiB planned before, 736.27 MiB now: the plan counts the
head's gradient from the start, torch makes it at the first backward).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from torch_support import planner_ok

from planner import load
from planner.io import torch_pipeline_script
from planner.pipeline.split import split_of, stage_bytes

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")
from live_bytes import Live  # noqa: E402 (it needs torch)

MODELS = Path(__file__).with_name("loss_models.py")


def _imported(tmp_path: Path) -> Path:
    out = tmp_path / "wide.plan"
    planner_ok("import", "torch", f"{MODELS}:wide_head", "--input", "2x4", "--capture", "fx",
               "--training", "-o", out)
    spec = tmp_path / "p.plan"
    spec.write_text('import "wide.plan"\ncluster c {\n'
                    "  device gpu[0..1] { kind gpu  memory 1 GiB  flops 10 TFLOPS }\n"
                    "  link gpu[0..1] <-> gpu[0..1] { bandwidth 1 TB/s }\n}\n"
                    "plan p { graph WideHead  cluster c  objective pipeline  "
                    "microbatches 4  schedule 1f1b }\n")
    return spec


def test_the_last_stage_holds_the_scripts_cross_entropy(tmp_path: Path) -> None:
    spec = _imported(tmp_path)
    problem = load(spec, root=spec.parent).plans["p"]
    assert problem.pipeline is not None
    index = problem.cluster.device_index
    on = {o.name: "gpu1" if o.name.removesuffix(".bwd") == "head" else "gpu0"
          for o in problem.graph.ops}
    split = split_of(problem, [index[on[o.name]] for o in problem.graph.ops])
    held = stage_bytes(problem, split, problem.pipeline)[index["gpu1"]]
    logits = 2 * 100
    params = (8 * 100 + 100) * 4 * (1 + 1 + 2)  # the head's weights, gradient, Adam's state
    received = 2 * 8 * 4  # the ReLU's output, kept until the backward pass
    # one micro-batch in flight (1F1B's last stage): the logits and the fp32 log-softmax;
    # then the loss's backward, its two fp32 gradients (before: the head's input gradient);
    # and a receive buffer of its input per micro-batch (`hybrid.buffer_copies`)
    assert held == params + received + 4 * logits + 4 * logits + 8 * logits + 4 * received
    assert "Loss: the exported script's cross-entropy of `logits` (2x100)" in (
        " ".join(line.removeprefix("# ") for line in (tmp_path / "wide.plan").read_text()
                 .splitlines()))
    # the loss's time is the last stage's too: the roofline of its bytes (V100: 900 GB/s)
    # beside the head's (its input, params and output; backward: twice the forward's)
    ops, at = problem.graph.ops, problem.graph.op_index
    head_bytes = 2 * 8 * 4 + (8 * 100 + 100) * 4 + 4 * logits
    assert ops[at["head"]].time_s == pytest.approx((head_bytes + 8 * logits) / 900e9, 1e-3)
    assert ops[at["head.bwd"]].time_s == pytest.approx(
        (2 * head_bytes + 16 * logits) / 900e9, 1e-3)


def _script_loss() -> Any:
    """The template's `loss_fn`, as every exported script defines it."""
    tree = ast.parse(torch_pipeline_script._script(False))
    wanted = {"loss_fn", "flat_tensors"}
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    namespace: dict[str, Any] = {"torch": torch, "Any": Any}
    exec(compile(ast.Module(body, []), "pipeline_step.py", "exec"), namespace)  # noqa: S102
    return namespace["loss_fn"]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_counts_are_what_torch_holds_for_the_scripts_loss(dtype: str) -> None:
    from planner.io.torch_loss import BACKWARD_PER_LOGIT, KEPT_PER_LOGIT

    loss_fn = _script_loss()
    logits = torch.randn(4, 3, 50, dtype=getattr(torch, dtype), requires_grad=True)
    target = torch.randint(50, (4, 3))
    n = logits.numel()
    live = Live(logits, target)
    with live:
        loss = loss_fn({"logits": logits}, target)
    # the fp32 log-softmax, and two scalars: the loss and nll_loss's total weight
    kept = KEPT_PER_LOGIT * n + 8
    assert live.now == kept
    # bfloat16: and the copy to fp32 (freed), the forward transient the spec's `temp` counts
    assert live.peak == kept + (0 if dtype == "float32" else KEPT_PER_LOGIT * n)
    live.peak = live.now
    with live:
        (grad,) = torch.autograd.grad(loss, logits)
    # the two fp32 gradients at once, at most (a bfloat16 one comes after the first is
    # freed)
    assert live.peak - kept == BACKWARD_PER_LOGIT * n
    assert grad.dtype == logits.dtype
