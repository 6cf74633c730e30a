"""Small PyTorch models for the torch import/export tests (imported only when torch is).

Each factory returns `(model, example inputs)`; `planner import torch` reaches them as
`tests/io/torch_models.py:NAME` with `--example 'NAME_inputs()'`, `tests/io` on the path (as
under pytest): the Transformer block is torch_pipeline_models.py's.
"""

from __future__ import annotations

import torch
from torch import nn
from torch_pipeline_models import Block


def mlp() -> nn.Module:
    """Three linear layers with ReLU."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                         nn.Linear(32, 4)).eval()


def mlp_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(8, 16, generator=torch.Generator().manual_seed(1)),)


class Residual(nn.Module):
    """conv-BN-ReLU-conv-BN plus the input (a ResNet basic block)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


class SmallCNN(nn.Module):
    """A stem, two residual blocks and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.block1 = Residual(8)
        self.block2 = Residual(8)
        self.head = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block2(self.block1(self.stem(x)))
        return self.head(x.mean(dim=(2, 3)))


def cnn() -> nn.Module:
    torch.manual_seed(0)
    model = SmallCNN()
    with torch.no_grad():  # running statistics that are not the identity
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    return model.eval()


def cnn_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1)),)


def transformer() -> nn.Module:
    """A pre-norm Transformer block (MLP 4x wide, GELU)."""
    torch.manual_seed(0)
    return Block(hidden=4, activation=nn.functional.gelu).eval()


def transformer_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(1)),)


class UnrolledLSTM(nn.Module):
    """One LSTM cell applied over 4 steps (a Python loop that tracing unrolls), then a head."""

    steps = 4

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.cell = nn.LSTMCell(16, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = c = x.new_zeros(x.shape[0], 16)
        for t in range(self.steps):
            h, c = self.cell(self.embed(x[:, t]), (h, c))
        return self.head(h)


def lstm() -> nn.Module:
    torch.manual_seed(0)
    return UnrolledLSTM().eval()


def lstm_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(1)),)


MODELS = {"mlp": (mlp, mlp_inputs), "cnn": (cnn, cnn_inputs),
          "transformer": (transformer, transformer_inputs), "lstm": (lstm, lstm_inputs)}
