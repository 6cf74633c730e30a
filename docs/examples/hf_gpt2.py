"""The Hugging Face example of docs/pytorch.md: a small GPT-2 to place, and its device_map run.

    python docs/examples/hf_gpt2.py PLACED.json

reads the `device_map` that `planner export torch` wrote into PLACED.json, runs the model
under `accelerate.dispatch_model` and loaded by transformers' `from_pretrained(...,
device_map=...)`, and checks both against eager mode. Random weights from a small config:
nothing is downloaded.
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from typing import Any

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def model() -> GPT2LMHeadModel:
    """The model `planner import torch docs/examples/hf_gpt2.py:model` captures."""
    torch.manual_seed(0)
    config = GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=1000, n_positions=128,
                        bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config).eval()


def tokens() -> dict[str, Any]:
    """The keyword inputs (`--example "tokens()"`): a batch of 64 tokens."""
    return {"input_ids": torch.arange(64).reshape(1, 64) % 97,
            "attention_mask": torch.ones(1, 64, dtype=torch.long)}


def main(placed_path: str) -> None:
    from accelerate import dispatch_model

    with open(placed_path, encoding="utf-8") as f:
        device_map = json.load(f)["device_map"]
    m, inputs = model(), tokens()
    with torch.no_grad():
        eager = m(**inputs).logits
        dispatched = dispatch_model(copy.deepcopy(m), device_map, force_hooks=True)
        same = torch.equal(dispatched(**inputs).logits.cpu(), eager)
        with tempfile.TemporaryDirectory() as saved:
            m.save_pretrained(saved)
            loaded = GPT2LMHeadModel.from_pretrained(saved, device_map=device_map)
            loaded_same = torch.equal(loaded(**inputs).logits.cpu(), eager)
    print(f"device_map {device_map}")
    print(f"dispatch_model equals eager: {same}; from_pretrained equals eager: {loaded_same}")


if __name__ == "__main__":
    main(*sys.argv[1:])
