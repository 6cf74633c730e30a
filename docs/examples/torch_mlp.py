"""The PyTorch example of docs/pytorch.md: a model to place, and a plan applied to it in Python.

    python docs/examples/torch_mlp.py SPEC PLAN.json [SPEC_DEVICE=TORCH_DEVICE,...]

applies the plan (devices by kind unless mapped: gpu0 -> cuda:0), checks the placed model
against eager mode and prints what it did.
"""

from __future__ import annotations

import json
import sys

import torch
from torch import nn


def model() -> nn.Module:
    """The model `planner import torch docs/examples/torch_mlp.py:model` traces."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(),
                         nn.Linear(1024, 256)).eval()


def main(spec_path: str, plan_path: str, device_map: str = "") -> None:
    import planner
    from planner.io.torch_export import apply_plan, parse_device_map, torch_devices
    from planner.io.torch_import import trace

    m, x = model(), torch.randn(32, 256)
    traced = trace(m, (x,))  # the same op names as `planner import torch`
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    cluster = planner.load(spec_path).plans[plan["plan"]].cluster
    devices = torch_devices(cluster, parse_device_map(device_map))  # gpu1 -> cuda:1
    placed = apply_plan(traced, plan["placement"], devices)
    with torch.no_grad():
        same = torch.equal(placed.module(x.to(devices["gpu0"])).cpu(), m(x))
    print(f"devices {devices}; copies {placed.copies}; outputs equal eager: {same}")
    print(f"accelerate device_map: {placed.device_map}")


if __name__ == "__main__":
    main(*sys.argv[1:])
