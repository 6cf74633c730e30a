"""GNMT (Wu et al. 2016, "v2" attention as in TensorFlow NMT and MLPerf), unrolled in time.

Stacked LSTMs: an encoder of L layers (the bottom one bidirectional) over S source steps
and a decoder of L layers over T target steps, with Bahdanau attention from the bottom
decoder layer feeding every decoder layer, and residual connections from the third layer
up. Unrolling every layer over every step puts the wavefront in the graph: layer l at step
t can run beside layer l+1 at step t-1, which is what model-parallel placement exploits.

Dimensions: batch B, hidden H (also the embedding size), vocabulary V. Ops per step and
layer (FLOPs with multiply-add = 2; outputs in elements):

====================  =============================================  =================  ======
op                    inputs                                         FLOPs              output
====================  =============================================  =================  ======
`...t{t}.gates`       layer input(s) (I wide), h(t-1), weights       2 B (I + H) 4H     4BH
`...t{t}.cell`        gates, c(t-1)                                  28 BH (a)          2BH
`...t{t}.res`         h, the layer's input (layers 2 and up)         BH                 BH
`enc.t{t}.embed`      source ids, embedding table                    0 (a gather)       BH
`enc.memory`          top encoder outputs of all steps               2 BSH²             2BSH
`dec.t{t}.attn.score` bottom decoder h(t), memory                    2BH² + 7BSH (b)    BS
`dec.t{t}.attn.softmax`                                              5 BS               BS
`dec.t{t}.attn.context` softmax, memory                              2 BSH              BH
`dec.t{t}.proj`       top decoder output, projection weights         2 BHV              BV
`dec.t{t}.softmax`    proj                                           5 BV               BV
====================  =============================================  =================  ======

(a) bias add 4, three sigmoids and two tanh at 4 FLOP each, 3 multiplies and 1 add per
hidden unit. (b) query projection, then per source step v·tanh(q + k): H adds, H tanh (4
each), H multiply-adds.

Weights shared across steps live in weight ops (`*.w`, `*.embedding`) that send them to
every step that uses them, so a device running any step of a layer holds a copy; the
edges carry their bytes. Input widths I: bottom encoder H (embedding), second encoder
layer 2H (both directions), others H; bottom decoder H + H (embedding and the previous
attention context), other decoder layers H + H (the layer below and the context).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import Diagnostic, UsageError
from ..workload import Imported
from .builder import Builder, Input, SizeCheck, check_positive, graph_size

#: one LSTM step: (layer prefix, step, inputs, input width, weights, previous cell) -> cell
Lstm = Callable[[str, int, Sequence[Input], int, str, str | None], str]


def size(layers: int = 8, seq: int = 50, tgt_seq: int | None = None,
         training: bool = False) -> tuple[int, int]:
    """(ops, edges) of `generate` with these options (and any others it accepts), counted
    without building. L layers, S source and T target steps: the encoder is its embedding
    table, S `embed` ops, the bottom layer's two directions and each layer's weights, an LSTM
    step of 2 ops per layer and step, a `res` per step from the third layer up, and `memory`;
    the decoder is 3 + L weight ops and 3L + 4 ops a step; the first step has fewer edges (no
    previous cell or context). `src` and `tgt` are data ops, with an edge per step."""
    s, t = seq, (seq if tgt_seq is None else tgt_seq)
    enc_ops = 5 + 7 * s + (layers - 2) * (1 + 3 * s)
    # embed 2S; each direction 5S - 2; layer 1 6S - 2; each layer above 7S - 2; memory S
    enc_edges = 2 * s + 2 * (5 * s - 2) + (6 * s - 2) + (layers - 2) * (7 * s - 2) + s
    dec_edges = (6 * layers + 6) + (t - 1) * (8 * layers + 7)
    return graph_size(2 + enc_ops + 3 + layers + t * (3 * layers + 4), enc_edges + dec_edges,
                      2, s + t, training)


def generate(layers: int = 8, hidden: int = 1024, vocab: int = 32000, seq: int = 50,
             tgt_seq: int | None = None, batch: int = 128, dtype: str = "fp32",
             profile: str = "v100", training: bool = False, optimizer: str = "adam",
             name: str | None = None, command: str | None = None,
             check_size: SizeCheck | None = None) -> Imported:
    """A GNMT graph unrolled over `seq` source and `tgt_seq` target steps. `check_size(ops,
    edges)`, if given, is called once the options are checked, before the graph is built."""
    t_len = seq if tgt_seq is None else tgt_seq
    check_positive(hidden=hidden, vocab=vocab, seq=seq, tgt_seq=t_len, batch=batch)
    if layers < 2:
        raise UsageError(Diagnostic("E930", "--layers must be at least 2 (GNMT has a "
                                    "bidirectional bottom layer and one above it)", None,
                                    ("GNMT uses 4 or 8",)))
    b = Builder(f"gnmt{layers}" if name is None else name, profile, dtype,
                optimizer if training else None)
    if check_size is not None:
        check_size(*size(layers, seq, t_len, training))
    e = b.elem
    src = b.data("src", batch * seq * 4)
    tgt = b.data("tgt", batch * t_len * 4)
    lstm = _lstm(b, batch, hidden)
    memory = _encoder(b, lstm, src, layers, hidden, vocab, seq, batch)
    _decoder(b, lstm, tgt, memory, layers, hidden, vocab, seq, t_len, batch)
    if training:
        b.train(optimizer)
    b.check_ranges()
    fwd = [o for o in b.w.ops if not o.name.endswith(".bwd")]
    n_params = sum(o.params_bytes for o in fwd) / e
    fwd_flops = sum(o.flops or 0.0 for o in fwd)
    header = "\n".join([
        f"Generated by:\n$ {command}" if command else "Generated by planner.generate.gnmt",
        (f"Source: analytic GNMT ({layers} LSTM layers each side, bidirectional bottom encoder "
        f"layer, hidden {hidden}, vocabulary {vocab}, {seq} source and {t_len} target steps "
        "unrolled); formulas in planner/generate/gnmt.py."),
        (f"Graph: {len(b.w.ops)} ops, {len(b.w.edges)} edges; {n_params / 1e6:.4g} M "
        f"parameters, forward {fwd_flops / 1e12:.4g} TFLOP."),
        b.assumptions(batch, training, optimizer),
    ])
    return Imported(b.w, header, stats={"params": n_params, "flops": fwd_flops})


def _lstm(b: Builder, batch: int, hidden: int) -> Lstm:
    """The LSTM step of this batch and hidden size."""
    hb = batch * hidden  # one step of one layer's h
    h_bytes = hb * b.elem

    def lstm(p: str, t: int, inputs: Sequence[Input], width: int, w: str,
             prev: str | None) -> str:
        """One LSTM step: gates (a matrix product) then the cell (pointwise)."""
        ins: list[Input] = [*inputs, w]
        if prev is not None:
            ins.append((prev, h_bytes))
        gates = b.op(f"{p}.t{t}.gates", 2.0 * batch * (width + hidden) * 4 * hidden,
                     4 * hb, ins, matmul=True)
        cell_in: list[Input] = [gates] + ([(prev, h_bytes)] if prev is not None else [])
        return b.op(f"{p}.t{t}.cell", 28.0 * hb, 2 * hb, cell_in)

    return lstm


def _encoder(b: Builder, lstm: Lstm, src: str, layers: int, hidden: int, vocab: int,
             seq: int, batch: int) -> str:
    """The encoder's ops over `seq` steps; returns its memory (the attention's keys)."""
    hb = batch * hidden
    h_bytes = hb * b.elem
    emb = b.weights("enc.embedding", vocab * hidden)
    embedded = [b.op(f"enc.t{t}.embed", 0.0, hb, [(src, batch * 4), emb],
                     moved=float(batch * 4 + 2 * h_bytes)) for t in range(seq)]
    fw_w = b.weights("enc.l0.fw.w", (2 * hidden) * 4 * hidden + 4 * hidden)
    bw_w = b.weights("enc.l0.bw.w", (2 * hidden) * 4 * hidden + 4 * hidden)
    fw: list[str] = []
    for t in range(seq):
        fw.append(lstm("enc.l0.fw", t, [(embedded[t], h_bytes)], hidden, fw_w,
                       fw[-1] if fw else None))
    bw_rev: list[str] = []
    for t in reversed(range(seq)):
        bw_rev.append(lstm("enc.l0.bw", t, [(embedded[t], h_bytes)], hidden, bw_w,
                           bw_rev[-1] if bw_rev else None))
    bw = bw_rev[::-1]
    outs = [[(fw[t], h_bytes), (bw[t], h_bytes)] for t in range(seq)]
    width = 2 * hidden
    for layer in range(1, layers):
        w = b.weights(f"enc.l{layer}.w", (width + hidden) * 4 * hidden + 4 * hidden)
        cells: list[str] = []
        for t in range(seq):
            cells.append(lstm(f"enc.l{layer}", t, outs[t], width, w,
                              cells[-1] if cells else None))
        if layer >= 2:
            outs = [[(b.op(f"enc.l{layer}.t{t}.res", float(hb), hb,
                           [(cells[t], h_bytes), *outs[t]]), h_bytes)] for t in range(seq)]
        else:
            outs = [[(c, h_bytes)] for c in cells]
        width = hidden
    return b.op("enc.memory", 2.0 * batch * seq * hidden * hidden, 2 * batch * seq * hidden,
                [o[0] for o in outs], hidden * hidden, matmul=True)


def _decoder(b: Builder, lstm: Lstm, tgt: str, memory: str, layers: int, hidden: int,
             vocab: int, seq: int, t_len: int, batch: int) -> None:
    """The decoder's ops over `t_len` steps, attending to the encoder's `memory`."""
    hb = batch * hidden
    h_bytes = hb * b.elem
    mem_bytes = 2 * batch * seq * hidden * b.elem
    demb = b.weights("dec.embedding", vocab * hidden)
    attn_w = b.weights("dec.attn.w", hidden * hidden + hidden)
    proj_w = b.weights("dec.proj.w", hidden * vocab + vocab)
    dec_w = [b.weights(f"dec.l{layer}.w", (2 * hidden + hidden) * 4 * hidden + 4 * hidden)
             for layer in range(layers)]
    prev_cell: list[str | None] = [None] * layers
    ctx: str | None = None
    nv = batch * vocab
    for t in range(t_len):
        x = b.op(f"dec.t{t}.embed", 0.0, hb, [(tgt, batch * 4), demb],
                 moved=float(batch * 4 + 2 * h_bytes))
        bottom_in = [(x, h_bytes)] + ([(ctx, h_bytes)] if ctx is not None else [])
        h0 = lstm("dec.l0", t, bottom_in, 2 * hidden, dec_w[0], prev_cell[0])
        prev_cell[0] = h0
        score = b.op(f"dec.t{t}.attn.score",
                     2.0 * hb * hidden + 7.0 * batch * seq * hidden, batch * seq,
                     [(h0, h_bytes), (memory, mem_bytes), attn_w],
                     matmul=True)
        soft = b.op(f"dec.t{t}.attn.softmax", 5.0 * batch * seq, batch * seq, [score])
        ctx = b.op(f"dec.t{t}.attn.context", 2.0 * batch * seq * hidden, hb,
                   [soft, (memory, mem_bytes)], matmul=True)
        below: tuple[str, int] = (h0, h_bytes)
        for layer in range(1, layers):
            cell = lstm(f"dec.l{layer}", t, [below, (ctx, h_bytes)], 2 * hidden, dec_w[layer],
                        prev_cell[layer])
            prev_cell[layer] = cell
            if layer >= 2:
                below = (b.op(f"dec.l{layer}.t{t}.res", float(hb), hb,
                              [(cell, h_bytes), below]), h_bytes)
            else:
                below = (cell, h_bytes)
        logits = b.op(f"dec.t{t}.proj", 2.0 * hb * vocab, nv,
                      [below, proj_w], matmul=True)
        b.op(f"dec.t{t}.softmax", 5.0 * nv, nv, [logits])
