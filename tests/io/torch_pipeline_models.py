"""Models for the pipeline export tests (`tests/io/torch_pipeline_models.py:NAME`).

Random weights (seeded), no downloads; the scripts `export torch --pipeline` writes load
this file by path in every rank.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable

import torch
from torch import nn


def mlp() -> nn.Module:
    """Four hidden layers with ReLU, then a head: nine modules in an nn.Sequential."""
    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Linear(16, 32), nn.ReLU()]
    for _ in range(3):
        layers += [nn.Linear(32, 32), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(32, 4))


class Twice(nn.Module):
    """x + x: a layer without parameters (a stage that only receives and sends)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + x


def wide() -> nn.Module:
    """Widen 16 -> 16384, double, narrow back: on 64x16 inputs its two boundaries (4 MiB
    each) dwarf the rest, so a stage's receive buffers are most of what it holds."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 16384), Twice(), nn.Linear(16384, 16))


def long() -> nn.Module:
    """Widen 16 -> 8192, seven parameter-free layers, narrow back: nine modules whose
    boundaries (2 MiB each on 64x16 inputs) dwarf their weights, for four stages on two
    ranks (`interleaved`)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 8192), nn.GELU(), Twice(), nn.Tanh(), Twice(),
                         nn.GELU(), Twice(), nn.Tanh(), nn.Linear(8192, 16))


class Stack(nn.Module):
    """An embedding, `count` layers `make(dim)` and a head. The layers are kept under the
    attribute `name`, which fx puts before their ops' names (`blocks.1.ln1`)."""

    def __init__(self, name: str, make: Callable[[int], nn.Module], count: int,
                 dim: int = 32) -> None:
        super().__init__()
        self.embed = nn.Linear(16, dim)
        self.stack = name
        self.add_module(name, nn.ModuleList(make(dim) for _ in range(count)))
        self.head = nn.Linear(dim, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        for layer in getattr(self, self.stack):
            x = layer(x)
        return self.head(x)


def encoder() -> nn.Module:
    """A small Transformer encoder: an embedding, four `nn.TransformerEncoderLayer`s (each
    one op: fx keeps torch.nn modules whole) and a head."""
    torch.manual_seed(0)
    return Stack("layers", lambda dim: nn.TransformerEncoderLayer(
        dim, 4, 2 * dim, dropout=0.0, batch_first=True), 4)


class Block(nn.Module):
    """A pre-norm Transformer block written out, so that fx traces into it: attention, then
    an MLP `hidden` times `dim` wide, with residuals. Its first op is a function
    (`x + self.pos`), which no SplitPoint can name. (tests/io/torch_models.py's
    `transformer` is one too.)"""

    def __init__(self, dim: int = 32, heads: int = 4, hidden: int = 2,
                 activation: Callable[[torch.Tensor], torch.Tensor] = torch.relu) -> None:
        super().__init__()
        self.heads = heads
        self.activation = activation
        self.pos = nn.Parameter(torch.randn(1, 6, dim) * 0.02)  # read by attribute (get_attr)
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden * dim)
        self.fc2 = nn.Linear(hidden * dim, dim)

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
        return x + self.fc2(self.activation(self.fc1(self.ln2(x))))


def blocks() -> nn.Module:
    """A stack of hand-written Transformer blocks: an embedding, three blocks and a head."""
    torch.manual_seed(0)
    return Stack("blocks", Block, 3)


def gpt2() -> nn.Module:
    """Hugging Face's GPT-2 from a small config (4 layers, width 64, 2 heads, 128 tokens),
    random weights, embeddings untied; in train mode, as built (its dropout active)."""
    # transformers imports torchvision: PyPI's is built against a CUDA torch and fails beside
    # the CPU build while it registers its detection ops' kernels, which no model here uses
    # (see tests/io/real_models.py)
    sys.modules.setdefault("torchvision._meta_registrations",
                           types.ModuleType("torchvision._meta_registrations"))
    # lazy: optional (transformers)
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=4, n_embd=64, n_head=2, vocab_size=128, n_positions=64,
                        tie_word_embeddings=False, bos_token_id=0, eos_token_id=0)
    model: nn.Module = GPT2LMHeadModel(config)
    return model


def gpt2_tokens() -> dict[str, torch.Tensor]:
    """GPT-2's keyword inputs for one micro-batch (`--example "gpt2_tokens()"`): 2
    sequences of 16 tokens."""
    return {"input_ids": torch.arange(32).reshape(2, 16) * 7 % 128,
            "attention_mask": torch.ones(2, 16, dtype=torch.long)}


def gpt2_loss(output: object, target: torch.Tensor) -> torch.Tensor:
    """A loss as a user writes one for `--loss`: it reads `output.logits`."""
    logits = output.logits  # type: ignore[attr-defined]
    return nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten()) * 0.5


class Gated(nn.Module):
    """Three layers, the last fed `b`'s output times the model's second input `gate`: the
    op that reads `gate` runs after two modules (as an encoder-decoder's decoder reads
    `decoder_input_ids` after the encoder)."""

    def __init__(self, hidden: int = 256, width: int = 4) -> None:
        super().__init__()
        # by default `a` computes most, so that the nearest split moves `b` rather than `a`
        self.a, self.b = nn.Linear(16, hidden), nn.Linear(hidden, width)
        self.c = nn.Linear(width, 4)

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        return self.c(self.b(self.a(x)) * gate)


def gated() -> nn.Module:
    torch.manual_seed(0)
    return Gated()


def gated_even() -> nn.Module:
    """`gated` with `a` and `b` both `Linear(16, 16)` (`gate` 8x16): moving `a` computes
    less than moving `b` and `mul`."""
    torch.manual_seed(0)
    return Gated(16, 16)


class Tagger(nn.Module):
    """An embedding, an `nn.LSTM` with `batch_first` (whose output is a transposed view:
    not contiguous) and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(50, 8)
        self.rnn = nn.LSTM(8, 16, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(self.emb(x))[0])


def tagger() -> nn.Module:
    torch.manual_seed(0)
    return Tagger()


class Twin(nn.Module):
    """A layer and a head, returning the head's `logits` and the layer's output, which the
    first stage computes (as T5 returns its encoder's last hidden state)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        hidden = self.a(x)
        return {"logits": self.b(hidden), "hidden": hidden}


def twin() -> nn.Module:
    torch.manual_seed(0)
    return Twin()


class Pair(nn.Module):
    """Two inputs, a stack of layers and two heads, returning a tuple of both: no `logits`,
    so no target (the script's loss is the mean square of the outputs)."""

    def __init__(self) -> None:
        super().__init__()
        self.x, self.y = nn.Linear(16, 32), nn.Linear(8, 32)
        self.body = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.one, self.two = nn.Linear(32, 4), nn.Linear(32, 2)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.body(self.x(x) + self.y(y))
        return self.one(hidden), self.two(hidden)


def pair() -> nn.Module:
    torch.manual_seed(0)
    return Pair()


def pair_loss(output: tuple[torch.Tensor, torch.Tensor], target: object) -> torch.Tensor:
    """A loss of the two outputs that has no target to take (`--loss`)."""
    assert target is None, type(target)
    return output[0].abs().mean() + 2 * output[1].pow(2).mean()
