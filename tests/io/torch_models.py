"""Small PyTorch models for the torch import/export tests (imported only when torch is).

Each factory returns `(model, example inputs)`; `planner import torch` reaches them as
`tests/io/torch_models.py:NAME` with `--example 'NAME_inputs()'`.
"""

from __future__ import annotations

import torch
from torch import nn


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


class Block(nn.Module):
    """A pre-norm Transformer block: attention written out, then an MLP, with residuals."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.pos = nn.Parameter(torch.randn(1, 6, dim) * 0.02)  # read by attribute (get_attr)
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.pos
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


def transformer() -> nn.Module:
    torch.manual_seed(0)
    return Block().eval()


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
