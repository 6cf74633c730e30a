"""Models with tied weights for `tests/io/test_torch_tied.py`: Hugging Face's GPT-2 and T5
from small configs, random weights (no download).

`planner import torch tests/io/tied_models.py:NAME` loads them; `TOKENS` and `T5_TOKENS` are
their `--example` expressions.
"""

from __future__ import annotations

import sys
import types
from typing import Any

# transformers imports torchvision, whose PyPI build needs a CUDA torch to register its
# detection ops' fake kernels: an empty module stands in (as in real_models.py)
sys.modules.setdefault("torchvision._meta_registrations",
                       types.ModuleType("torchvision._meta_registrations"))

import torch  # noqa: E402 - after the stand-in above
from transformers import (  # noqa: E402
    GPT2Config,
    GPT2LMHeadModel,
    T5Config,
    T5ForConditionalGeneration,
)

TOKENS = "tokens()"
T5_TOKENS = "t5_tokens()"


def gpt2() -> GPT2LMHeadModel:
    """Stock GPT-2, 8 layers, its head tied to its token embedding (`tie_word_embeddings`)."""
    torch.manual_seed(0)
    config = GPT2Config(n_layer=8, n_embd=64, n_head=2, vocab_size=256, n_positions=64,
                        bos_token_id=0, eos_token_id=0, tie_word_embeddings=True,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return GPT2LMHeadModel(config)


def tokens() -> dict[str, Any]:
    """GPT-2's keyword inputs: a batch of 32 tokens."""
    return {"input_ids": torch.arange(32).reshape(1, 32) % 97}


def t5() -> T5ForConditionalGeneration:
    """A small T5: its `shared` embedding is the encoder's, the decoder's and the head's."""
    torch.manual_seed(0)
    config = T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                      num_decoder_layers=2, num_heads=4, dropout_rate=0.0,
                      decoder_start_token_id=0, pad_token_id=0)
    return T5ForConditionalGeneration(config).eval()


def t5_tokens() -> dict[str, Any]:
    """T5's keyword inputs: 16 encoder tokens, 8 decoder tokens."""
    return {"input_ids": torch.arange(16).reshape(1, 16) % 97,
            "decoder_input_ids": torch.arange(8).reshape(1, 8) % 50}
