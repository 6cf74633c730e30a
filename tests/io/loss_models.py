"""Models for tests/io/test_torch_loss.py (`tests/io/loss_models.py:NAME`): a small body
and a head returning `logits`, which the exported script's default loss takes the
cross-entropy of."""

from __future__ import annotations

import torch
from torch import nn


class WideHead(nn.Module):
    """Linear(4, 8), ReLU, then a head Linear(8, 100) returning `{"logits": ...}`."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.head = nn.Linear(8, 100)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"logits": self.head(self.body(x))}


def wide_head() -> nn.Module:
    """`WideHead`, seeded."""
    torch.manual_seed(0)
    return WideHead()
