"""Op types and groups read from op names, for colours, legends and trace categories.

An op's *type* is the one its spec declares (`type Conv2d`: a PyTorch import writes the
module's class), else read from its name, which carries structure by convention: `n12.Conv`
(ONNX imports), `enc.L0.q` (generated Transformers), `layer3/MatMul_150:0`
(TensorFlow-style paths): the last path component without its index (`Conv`, `q`,
`MatMul`), a backward op (`x.bwd`) taking its forward op's. The *group* is the first path
component (`enc`, `layer3`). Charts colour by type, which stays a small set as
graphs grow (an ONNX graph of 100,000 ops still has a few dozen op types), and fold the
rarest into `other`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..workload.training import BWD_SUFFIX

__all__ = ["Legend", "legend_by_type", "op_group", "op_type"]

_SPLIT = re.compile(r"[/.]")
_INDEX = re.compile(r"(?:[:_]?\d+)+$")
#: category colours (Okabe–Ito, then Tableau), in order of total compute time
CATEGORY_COLOURS: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#8c564b", "#bcbd22",
    "#17becf", "#7f3c8d",
)
OTHER = "other"
OTHER_COLOUR = "#9aa3b2"


def op_type(name: str, declared: str = "") -> str:
    """`declared` when given; else `Conv` for `n12.Conv`, `MatMul` for
    `layer3/MatMul_150:0`, `ln` for `enc.L0.ln1` and for its backward op `enc.L0.ln1.bwd`."""
    if declared:
        return declared
    name = name.removesuffix(BWD_SUFFIX) or name
    last = _SPLIT.split(name)[-1]
    return _INDEX.sub("", last) or last or name


def op_group(name: str) -> str:
    """The first path component: `layer3` for `layer3/MatMul_150:0`; the name itself when
    it has no path."""
    return _SPLIT.split(name, maxsplit=1)[0] or name


@dataclass(frozen=True)
class Legend:
    """Categories in display order with their colours, and each op's category index."""

    names: tuple[str, ...]
    colours: tuple[str, ...]
    #: per op, an index into `names`
    of_op: tuple[int, ...]
    #: per category, its share of the total compute time drawn (0..1)
    shares: tuple[float, ...]


def legend_by_type(names: Sequence[str], weights: Sequence[float],
                   types: Sequence[str] = ()) -> Legend:
    """Categories by op type (`types`, declared, else read from `names`), the heaviest
    first (by `weights`, e.g. compute seconds), at most `len(CATEGORY_COLOURS)` of them; the
    rest fold into `other`. When every op has the same type (names without structure), the
    groups are used instead."""
    declared = list(types) or [""] * len(names)
    keys = [op_type(n, t) for n, t in zip(names, declared, strict=True)]
    if len(set(keys)) <= 1:
        keys = [op_group(n) for n in names]
    total: dict[str, float] = {}
    for k, w in zip(keys, weights, strict=True):
        total[k] = total.get(k, 0.0) + max(w, 0.0)
    ranked = sorted(total, key=lambda k: (-total[k], k))
    keep = ranked if len(ranked) <= len(CATEGORY_COLOURS) else \
        ranked[:len(CATEGORY_COLOURS) - 1]
    index = {k: j for j, k in enumerate(keep)}
    folded = len(keep) < len(ranked)
    cats = list(keep) + ([OTHER] if folded else [])
    colours = list(CATEGORY_COLOURS[:len(keep)]) + ([OTHER_COLOUR] if folded else [])
    other = len(keep)
    of_op = tuple(index.get(k, other) for k in keys)
    grand = sum(total.values()) or 1.0
    shares = [total[k] / grand for k in keep]
    if folded:
        shares.append(sum(total[k] for k in ranked[len(keep):]) / grand)
    return Legend(tuple(cats), tuple(colours), of_op, tuple(shares))
