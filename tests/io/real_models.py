"""Models nobody here wrote, for `tests/io/test_torch_models.py`: torchvision's and Hugging
Face transformers' own classes from small configs, with random weights (no download).

`planner import torch tests/io/real_models.py:NAME` loads them; `INPUTS[NAME]` are the
command's example-input options and `example(NAME)` the same inputs in Python.
"""

from __future__ import annotations

import sys
import types
from typing import Any

# PyPI's torchvision is built against a CUDA torch: beside the CPU build, importing it fails
# while it registers fake kernels for its detection ops ("operator torchvision::nms does
# not exist"). The classification models use none of them, so an empty module stands in for
# that registration (transformers imports torchvision too, so this comes first).
sys.modules.setdefault("torchvision._meta_registrations",
                       types.ModuleType("torchvision._meta_registrations"))

import torch  # noqa: E402 - after the stand-in above

VISION = ["resnet18", "mobilenet_v3_small", "vit"]
TEXT = ["gpt2", "bert", "llama"]
TOKENS = ("dict(input_ids=torch.arange(64).reshape(1, 64) % 97, "
          "attention_mask=torch.ones(1, 64, dtype=torch.long))")
INPUTS = {**{name: ["--input", "1x3x224x224"] for name in VISION},
          **{name: ["--example", TOKENS] for name in TEXT}}


def example(name: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The example inputs of `name` (the same as `INPUTS[name]` give the command)."""
    if name in VISION:
        generator = torch.Generator().manual_seed(0)
        return (torch.randn((1, 3, 224, 224), generator=generator),), {}
    return (), dict(eval(TOKENS, {"torch": torch}))


def _vision(name: str) -> torch.nn.Module:
    import torchvision

    torch.manual_seed(0)
    model: torch.nn.Module = getattr(torchvision.models, name)()
    return model.eval()


def resnet18() -> torch.nn.Module:
    return _vision("resnet18")


def mobilenet_v3_small() -> torch.nn.Module:
    return _vision("mobilenet_v3_small")


def vit() -> torch.nn.Module:
    """torchvision's VisionTransformer, the class `vit_b_16()` builds, at its patch size and
    image size but 4 layers of 256 (vit_b_16: 12 of 768, 4x slower through the steps)."""
    from torchvision.models import VisionTransformer

    torch.manual_seed(0)
    return VisionTransformer(image_size=224, patch_size=16, num_layers=4, num_heads=4,
                             hidden_dim=256, mlp_dim=1024).eval()


def gpt2() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=1000, n_positions=128,
                        bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config).eval()


def bert() -> torch.nn.Module:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(num_hidden_layers=4, hidden_size=256, num_attention_heads=4,
                        intermediate_size=1024, vocab_size=1000, max_position_embeddings=128)
    return BertModel(config).eval()


def llama() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(num_hidden_layers=4, hidden_size=256, num_attention_heads=4,
                         num_key_value_heads=2, intermediate_size=688, vocab_size=1000,
                         max_position_embeddings=128, bos_token_id=0, eos_token_id=0)
    return LlamaForCausalLM(config).eval()
