"""Transformer graphs: a GPT-style decoder stack, or an encoder-decoder (Vaswani et al. 2017).

Dimensions: batch B, sequence S (target T for the decoder of an encoder-decoder), hidden H,
heads A, feed-forward F (default 4H), vocabulary V. Per layer (pre-norm), with FLOPs
(multiply-add = 2) and outputs in elements:

=============  ========================================  ==================  ===========
op             inputs                                    FLOPs               output
=============  ========================================  ==================  ===========
ln1            layer input                               7 BSH               BSH
q, k, v        ln1                                       2 BSH² + BSH        BSH each
scores         q, k                                      2 BS²H + BAS²       BAS²
softmax        scores                                    5 BAS²              BAS²
context        softmax, v                                2 BS²H              BSH
proj           context                                   2 BSH² + BSH        BSH
add1           proj, layer input (residual)              BSH                 BSH
ln2            add1                                      7 BSH               BSH
ffn1           ln2                                       2 BSHF + BSF        BSF
gelu           ffn1                                      4 BSF               BSF
ffn2           gelu                                      2 BSFH + BSH        BSH
add2           ffn2, add1 (residual)                     BSH                 BSH
=============  ========================================  ==================  ===========

Weights (H² + H for each projection, HF + F and FH + H for the FFN, 2H per layer norm)
are the params of the op that uses them. Around the stack: `tokens` (int32 ids),
`embed` (token and position tables, VH + SH params), `ln_f`, `lm_head` (2 BSHV, HV params)
and `softmax` over the vocabulary (5 BSV). A decoder layer of an encoder-decoder adds a
cross-attention block (`x.ln`, `x.q` from the decoder; `x.k`, `x.v` from the encoder's
output; scores over T × S) before its FFN.
"""

from __future__ import annotations

from ..errors import Diagnostic, UsageError
from ..workload import Imported
from .builder import Builder, SizeCheck, check_positive, graph_size


def size(arch: str = "gpt", layers: int = 12, decoder_layers: int | None = None,
         training: bool = False) -> tuple[int, int]:
    """(ops, edges) of `generate` with these options (and any others it accepts), counted
    without building: a layer is 14 ops and 18 edges, a decoder layer that cross-attends 23
    and 30, an embedding (its `tokens` and `embed`) 2 and 1, the head 3 and 3, the encoder's
    `ln_f` 1 and 1; each `tokens` a data op with one edge."""
    if arch == "gpt":
        return graph_size(14 * layers + 5, 18 * layers + 4, 1, 1, training)
    dec = layers if decoder_layers is None else decoder_layers
    return graph_size(14 * layers + 23 * dec + 8, 18 * layers + 30 * dec + 6, 2, 2, training)


def generate(arch: str = "gpt", layers: int = 12, hidden: int = 768, heads: int = 12,
             ffn: int | None = None, seq: int = 1024, batch: int = 8, vocab: int = 50257,
             decoder_layers: int | None = None, tgt_seq: int | None = None,
             dtype: str = "fp32", profile: str = "v100", training: bool = False,
             optimizer: str = "adam", name: str | None = None,
             command: str | None = None, check_size: SizeCheck | None = None) -> Imported:
    """A Transformer graph (`arch` "gpt" or "encdec"); see the module docstring.
    `check_size(ops, edges)`, if given, is called once the options are checked, before the
    graph is built."""
    f, dec_layers, t_len = _checked(arch, layers, hidden, heads, ffn, seq, batch, vocab,
                                    decoder_layers, tgt_seq)
    b = Builder(arch if name is None else name, profile, dtype, optimizer if training else None)
    if check_size is not None:
        check_size(*size(arch, layers, dec_layers, training))
    if arch == "gpt":
        x = _embed(b, "", batch, seq, hidden, vocab)
        for layer in range(layers):
            x = _layer(b, f"L{layer}.", x, None, batch, seq, seq, hidden, heads, f)
        _head(b, "", x, batch, seq, hidden, vocab)
    else:
        x = _embed(b, "enc.", batch, seq, hidden, vocab)
        for layer in range(layers):
            x = _layer(b, f"enc.L{layer}.", x, None, batch, seq, seq, hidden, heads, f)
        memory = b.op("enc.ln_f", 7.0 * batch * seq * hidden, batch * seq * hidden, [x],
                      2 * hidden)
        y = _embed(b, "dec.", batch, t_len, hidden, vocab)
        for layer in range(dec_layers):
            y = _layer(b, f"dec.L{layer}.", y, memory, batch, t_len, seq, hidden, heads, f)
        _head(b, "dec.", y, batch, t_len, hidden, vocab)
    if training:
        b.train(optimizer)
    b.check_ranges()
    n_params = sum(o.params_bytes for o in b.w.ops if not o.name.endswith(".bwd")) / b.elem
    fwd_flops = sum(o.flops or 0.0 for o in b.w.ops if not o.name.endswith(".bwd"))
    shape = (f"GPT-style decoder stack, {layers} layers" if arch == "gpt" else
             f"encoder-decoder, {layers} + {dec_layers} layers, target length {t_len}")
    header = "\n".join([
        f"Generated by:\n$ {command}" if command else "Generated by planner.generate.transformer",
        (f"Source: analytic Transformer ({shape}; hidden {hidden}, {heads} heads, FFN {f}, "
        f"sequence {seq}, vocabulary {vocab}); formulas in planner/generate/transformer.py."),
        (f"Graph: {len(b.w.ops)} ops, {len(b.w.edges)} edges; {n_params / 1e6:.4g} M parameters, "
        f"forward {fwd_flops / 1e12:.4g} TFLOP."),
        b.assumptions(batch, training, optimizer),
    ])
    return Imported(b.w, header, stats={"params": n_params, "flops": fwd_flops})


def _checked(arch: str, layers: int, hidden: int, heads: int, ffn: int | None, seq: int,
             batch: int, vocab: int, decoder_layers: int | None, tgt_seq: int | None
             ) -> tuple[int, int, int]:
    """E930 for options no Transformer has; else (FFN size, decoder layers, target length)
    with their defaults filled in."""
    if arch not in ("gpt", "encdec"):
        raise UsageError(Diagnostic("E930", f"unknown architecture `{arch}`", None,
                                    ("one of: gpt, encdec",)))
    encdec_only = [flag for flag, value in (("--decoder-layers", decoder_layers),
                                            ("--tgt-seq", tgt_seq)) if value is not None]
    if arch == "gpt" and encdec_only:  # was ignored without a word
        raise UsageError(Diagnostic(
            "E930", f"{encdec_only[0]} is an option of --arch encdec, and --arch is gpt: a "
            "GPT-style stack has no separate decoder or target", None,
            (f"add --arch encdec, or remove {encdec_only[0]}",)))
    f = 4 * hidden if ffn is None else ffn
    dec_layers = layers if decoder_layers is None else decoder_layers
    t_len = seq if tgt_seq is None else tgt_seq
    check_positive(layers=layers, hidden=hidden, heads=heads, ffn=f, seq=seq, batch=batch,
                   vocab=vocab, decoder_layers=dec_layers, tgt_seq=t_len)
    if hidden % heads:
        raise UsageError(Diagnostic("E930", f"--hidden {hidden} is not a multiple of --heads "
                                    f"{heads}", None, (_heads_hint(hidden, heads),)))
    return f, dec_layers, t_len


def _heads_hint(hidden: int, heads: int) -> str:
    """What to give instead of `--heads heads`, which does not divide `--hidden hidden`:
    the nearest head counts that do (looked for within 1,000 either way), or the nearest
    hidden sizes that `heads` divides."""
    near = (h for d in range(1, 1001) for h in (heads - d, heads + d) if 0 < h <= hidden)
    counts = sorted([h for h in near if hidden % h == 0][:2])
    low = hidden - hidden % heads
    sizes = " or ".join(str(n) for n in (low, low + heads) if n > 0)
    some = f"a divisor of {hidden} ({' or '.join(map(str, counts))}) " if counts else ""
    return f"give --heads {some}{'or ' if some else ''}--hidden a multiple of {heads} ({sizes})"


def _embed(b: Builder, p: str, batch: int, seq: int, h: int, vocab: int) -> str:
    tokens = b.data(f"{p}tokens", batch * seq * 4)
    n = batch * seq * h
    # reads B·S rows of the table and the position rows, adds them, writes the result
    return b.op(f"{p}embed", float(n), n, [tokens], vocab * h + seq * h,
                moved=float(batch * seq * 4 + 3 * n * b.elem))


def _attention(b: Builder, p: str, x: str, kv: str, batch: int, s_q: int, s_kv: int, h: int,
               heads: int) -> str:
    n_q, n_kv = batch * s_q * h, batch * s_kv * h
    lin = h * h + h
    q = b.op(f"{p}q", 2.0 * n_q * h + n_q, n_q, [x], lin, matmul=True)
    k = b.op(f"{p}k", 2.0 * n_kv * h + n_kv, n_kv, [kv], lin, matmul=True)
    v = b.op(f"{p}v", 2.0 * n_kv * h + n_kv, n_kv, [kv], lin, matmul=True)
    n_s = batch * heads * s_q * s_kv
    scores = b.op(f"{p}scores", 2.0 * batch * s_q * s_kv * h + n_s, n_s, [q, k], matmul=True)
    soft = b.op(f"{p}softmax", 5.0 * n_s, n_s, [scores])
    ctx = b.op(f"{p}context", 2.0 * batch * s_q * s_kv * h, n_q, [soft, v], matmul=True)
    return b.op(f"{p}proj", 2.0 * n_q * h + n_q, n_q, [ctx], lin, matmul=True)


def _layer(b: Builder, p: str, x: str, memory: str | None, batch: int, s: int, s_mem: int,
           h: int, heads: int, f: int) -> str:
    n = batch * s * h
    ln1 = b.op(f"{p}ln1", 7.0 * n, n, [x], 2 * h)
    attn = _attention(b, p, ln1, ln1, batch, s, s, h, heads)
    res = b.op(f"{p}add1", float(n), n, [attn, x])
    if memory is not None:
        lnx = b.op(f"{p}x.ln", 7.0 * n, n, [res], 2 * h)
        cross = _attention(b, f"{p}x.", lnx, memory, batch, s, s_mem, h, heads)
        res = b.op(f"{p}x.add", float(n), n, [cross, res])
    ln2 = b.op(f"{p}ln2", 7.0 * n, n, [res], 2 * h)
    nf = batch * s * f
    up = b.op(f"{p}ffn1", 2.0 * n * f + nf, nf, [ln2], h * f + f, matmul=True)
    act = b.op(f"{p}gelu", 4.0 * nf, nf, [up])
    down = b.op(f"{p}ffn2", 2.0 * nf * h + n, n, [act], f * h + h, matmul=True)
    return b.op(f"{p}add2", float(n), n, [down, res])


def _head(b: Builder, p: str, x: str, batch: int, s: int, h: int, vocab: int) -> None:
    n = batch * s * h
    ln = b.op(f"{p}ln_f", 7.0 * n, n, [x], 2 * h)
    nv = batch * s * vocab
    logits = b.op(f"{p}lm_head", 2.0 * n * vocab, nv, [ln], h * vocab, matmul=True)
    b.op(f"{p}softmax", 5.0 * nv, nv, [logits])
