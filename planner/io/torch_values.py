"""The tensors inside a value a model takes or returns: `flat_tensors`.

One definition runs in two places: the importer counts each op's output bytes with it, and
the pipeline script that `torch_pipeline` writes carries its source, since that script runs
where planner may not be installed. `torch_pipeline` reads that source from this file when
it writes a script, without importing this module: writing a script needs no torch. Like
every `torch_*` module, import it only where torch is wanted.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["flat_tensors"]


def flat_tensors(value: Any) -> list[torch.Tensor]:
    """The tensors in `value` (a tensor, or tuples, lists and dicts of them, nested), in
    order; anything else holds none."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flat_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in flat_tensors(v)]
    return []
