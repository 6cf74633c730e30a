"""FLOPs of PyTorch ops, as `torch.utils.flop_counter` counts them, and what it misses.

`Counter` runs one node at a time under `FlopCounterMode` (2 FLOPs per multiply-add:
matrix products, convolutions, attention) with formulas added for the aten ops it lacks
that do matrix work: `scaled_dot_product_attention`'s CPU kernel
(`_scaled_dot_product_flash_attention_for_cpu`) and `nn.MultiheadAttention`'s fused path
(`_native_multi_head_attention`: input projections, attention, output projection) and
the CPU kernel of an `nn.LSTM` layer (`mkldnn_rnn_layer`: its two matrix products per
step; `nn.GRU` and `nn.RNN` run as counted matrix products on the CPU).
It records every aten op a node dispatches, so that ops with no FLOPs can be told apart:
pointwise ops, views, copies, reductions, norms, pooling, indexing and embeddings are
memory-bound (the roofline times them by bytes moved); any other op without a formula
(a custom op included) is *uncounted* and the importer warns about it (W948), naming it,
unless its time is measured.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .torch_load import require_torch

#: aten ops (overload packets by name) that do no matrix work: bytes decide their time
MEMORY_BOUND = frozenset("""
    embedding embedding_bag layer_norm native_layer_norm batch_norm native_batch_norm
    _native_batch_norm_legit _native_batch_norm_legit_no_training group_norm
    native_group_norm instance_norm rms_norm _fused_rms_norm max_pool1d max_pool2d
    max_pool3d max_pool2d_with_indices avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d
    adaptive_avg_pool2d _adaptive_avg_pool2d adaptive_max_pool2d mean sum prod amax amin
    max min argmax argmin softmax _softmax log_softmax _log_softmax cat stack index
    index_select gather scatter scatter_add index_put index_put_ copy_ _to_copy to clone
    contiguous dropout native_dropout arange zeros ones full empty empty_like zeros_like
    ones_like full_like new_ones new_zeros new_empty new_full fill_ masked_fill
    masked_fill_ where cumsum triu tril constant_pad_nd pad topk sort var var_mean std
    scalar_tensor lift_fresh_copy alias detach _unsafe_view upsample_nearest2d
    upsample_bilinear2d repeat tile roll flip one_hot any all isin embedding_dense_backward
    linalg_vector_norm norm _assert_tensor_metadata _assert_scalar item
    _local_scalar_dense sym_size sym_numel
""".split())  # noqa: SIM905 - a list of words reads best as text


def _formulas(torch: Any) -> dict[Any, Callable[..., int]]:
    # lazy: optional (the `torch` extra)
    from torch.utils.flop_counter import sdpa_flop_count

    aten = torch.ops.aten

    def sdpa(query: Any, key: Any, value: Any, *args: Any, out_shape: Any = None,
             **kwargs: Any) -> int:
        return int(sdpa_flop_count(query, key, value))  # type: ignore[no-untyped-call, unused-ignore]

    def mha(query: Any, key: Any, value: Any, embed_dim: int, num_head: int,
            *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
        # batch_first (B, L, E): 3 projections in, attention, 1 projection out
        b, lq, e = query
        lk = key[1]
        head = e // max(num_head, 1)
        projections = 2 * b * e * e * (lq + 2 * lk + lq)
        shapes = ((b, num_head, lq, head), (b, num_head, lk, head), (b, num_head, lk, head))
        attention = sdpa_flop_count(*shapes)  # type: ignore[no-untyped-call, unused-ignore]
        return int(projections + attention)

    def rnn_layer(inputs: Any, weight_ih: Any, weight_hh: Any, *args: Any,
                  out_shape: Any = None, **kwargs: Any) -> int:
        # each step of each sequence: gates x (its input + the hidden state), 2 FLOPs a MAC
        steps = 1
        for d in inputs[:-1]:
            steps *= d
        return int(2 * steps * (weight_ih[0] * weight_ih[1] + weight_hh[0] * weight_hh[1]))

    out: dict[Any, Callable[..., int]] = {}
    for name, formula in (("_scaled_dot_product_flash_attention_for_cpu", sdpa),
                          ("_scaled_dot_product_fused_attention_overrideable", sdpa),
                          ("_native_multi_head_attention", mha),
                          ("mkldnn_rnn_layer", rnn_layer)):
        packet = getattr(aten, name, None)
        if packet is not None:
            out[packet] = formula
    return out


class Counter:
    """FLOPs per node and the uncounted aten ops each node ran (module docstring)."""

    def __init__(self) -> None:
        torch = require_torch()
        # lazy: optional (the `torch` extra)
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.flop_counter import FlopCounterMode

        self._mode = FlopCounterMode
        self._custom = _formulas(torch)
        known = {*self._registry(), *self._custom}
        ran: list[Any] = []
        self.ran = ran

        class Recording(TorchDispatchMode):  # type: ignore[misc, no-untyped-call, unused-ignore]
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                                   kwargs: Any = None) -> Any:
                ran.append(func)
                return func(*args, **(kwargs or {}))

        self._recording = Recording
        self._known = known
        self._pointwise = torch.Tag.pointwise

    def _registry(self) -> set[Any]:
        # lazy: optional (the `torch` extra)
        from torch.utils.flop_counter import flop_registry

        return set(flop_registry)

    def run(self, thunk: Callable[[], Any]) -> tuple[Any, float, list[str]]:
        """`thunk()`'s value, its FLOPs, and the names of the uncounted aten ops it ran."""
        self.ran.clear()
        recording = self._recording()  # type: ignore[no-untyped-call, unused-ignore]
        with self._mode(display=False, custom_mapping=self._custom) as counter, recording:
            value = thunk()
        flops = float(counter.get_total_flops())
        return value, flops, [] if flops > 0 else self._uncounted()

    def _uncounted(self) -> list[str]:
        out = []
        for func in self.ran:
            packet = getattr(func, "overloadpacket", func)
            name = getattr(packet, "__name__", str(packet))
            if packet in self._known or self._pointwise in getattr(func, "tags", ()):
                continue
            if getattr(func, "is_view", False) or name.rstrip("_") in MEMORY_BOUND \
                    or name in MEMORY_BOUND:
                continue
            qualified = str(packet)  # `aten._cdist_forward`, `mylib.op`
            if qualified not in out:
                out.append(qualified)
        return out
