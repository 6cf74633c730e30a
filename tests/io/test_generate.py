"""The Transformer and GNMT generators: sizes from the formulas, structure, bad options."""

from __future__ import annotations

import itertools
import pkgutil

import networkx as nx
import pytest

import planner
import planner.generate
from planner.errors import UsageError
from planner.generate import gnmt, transformer
from planner.generate.builder import Builder
from planner.workload import Workload


def _ops(w: Workload) -> dict[str, object]:
    return {o.name: o for o in w.ops}


def _digraph(w: Workload) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(o.name for o in w.ops)
    g.add_edges_from((e.src, e.dst) for e in w.edges)
    return g


def test_gpt2_small_has_the_published_parameter_count() -> None:
    h, v = 768, 50257
    result = transformer.generate(layers=12, hidden=h, heads=12, seq=1024, batch=1, vocab=v)
    # GPT-2 small: 124,439,808 parameters with the output layer tied to the embedding; ours
    # has its own output layer (H x V more)
    assert result.stats["params"] == 124_439_808 + h * v


def test_transformer_op_flops_and_sizes_follow_the_dimensions() -> None:
    b, s, h, a, f = 2, 16, 64, 4, 256
    result = transformer.generate(layers=2, hidden=h, heads=a, ffn=f, seq=s, batch=b, vocab=100)
    ops = {o.name: o for o in result.workload.ops}
    q = ops["L0.q"]
    assert q.flops == 2 * b * s * h * h + b * s * h
    assert (q.params_bytes, q.output_bytes) == (4 * (h * h + h), 4 * b * s * h)
    scores = ops["L1.scores"]
    assert scores.flops == 2 * b * s * s * h + b * a * s * s
    assert scores.output_bytes == 4 * b * a * s * s
    assert ops["L1.ffn1"].output_bytes == 4 * b * s * f
    assert ops["L0.gelu"].flops == 4 * b * s * f
    edges = {(e.src, e.dst) for e in result.workload.edges}
    assert {("L0.q", "L0.scores"), ("L0.k", "L0.scores"), ("L0.v", "L0.context"),
            ("embed", "L0.add1"), ("L0.add1", "L0.add2")} <= edges  # residuals
    assert len(result.workload.ops) == 2 + 14 * 2 + 3


def test_encoder_decoder_cross_attends_to_the_encoder_output() -> None:
    result = transformer.generate(arch="encdec", layers=2, decoder_layers=3, hidden=32,
                                  heads=2, seq=8, tgt_seq=4, batch=1, vocab=50)
    w = result.workload
    assert len(w.ops) == (2 + 14 * 2 + 1) + (2 + 23 * 3 + 3)
    edges = {(e.src, e.dst) for e in w.edges}
    for layer in range(3):
        assert ("enc.ln_f", f"dec.L{layer}.x.k") in edges
    ops = {o.name: o for o in w.ops}
    assert ops["dec.L1.x.scores"].output_bytes == 4 * 1 * 2 * 4 * 8  # B·A·T·S
    g = _digraph(w)
    # the decoder's first self-attention does not wait for the encoder: parallel branches
    assert not nx.has_path(g, "enc.L1.add2", "dec.L0.add1")
    planner.loads(result.to_spec())


def test_gnmt_size_and_wavefront() -> None:
    layers, s = 8, 50
    result = gnmt.generate(layers=layers, seq=s)
    w = result.workload
    assert len(w.ops) == 2 + (2 * layers + 5) + s * (1 + 3 * layers) + 1 + s * (3 * layers + 4)
    assert len(w.ops) >= 2000
    g = _digraph(w)
    preds = set(g.predecessors("enc.l3.t7.gates"))
    assert {"enc.l2.t7.res", "enc.l3.t6.cell", "enc.l3.w"} <= preds
    # the wavefront: layer 3 at step 6 and layer 2 at step 7 are independent
    assert not nx.has_path(g, "enc.l3.t6.cell", "enc.l2.t7.cell")
    assert not nx.has_path(g, "enc.l2.t7.cell", "enc.l3.t6.cell")
    # the backward direction of the bottom layer runs from the last step to the first
    assert g.has_edge("enc.l0.bw.t9.cell", "enc.l0.bw.t8.gates")
    # attention of every decoder step reads the whole encoder memory
    assert all(g.has_edge("enc.memory", f"dec.t{t}.attn.score") for t in range(s))
    assert nx.is_directed_acyclic_graph(g)


def test_gnmt_parameters_and_shared_weights() -> None:
    h, v, layers = 1024, 32000, 8
    result = gnmt.generate(layers=layers, hidden=h, vocab=v, seq=3, batch=1)
    lstm = (
        2 * (2 * h * 4 * h + 4 * h)  # bidirectional bottom layer, input H
        + (3 * h * 4 * h + 4 * h)  # second encoder layer, input 2H
        + (layers - 2) * (2 * h * 4 * h + 4 * h)
        + layers * (3 * h * 4 * h + 4 * h)  # decoder layers, input H + context
    )
    expected = 2 * v * h + lstm + (h * h) + (h * h + h) + (h * v + v)
    assert result.stats["params"] == expected
    w = result.workload
    weight = next(o for o in w.ops if o.name == "enc.l4.w")
    users = [e for e in w.edges if e.src == "enc.l4.w"]
    assert len(users) == 3 and all(e.bytes == weight.params_bytes for e in users)


def test_training_graphs_load() -> None:
    for result in (gnmt.generate(layers=2, seq=3, training=True),
                   transformer.generate(layers=1, hidden=32, heads=2, seq=8, vocab=40,
                                        training=True)):
        names = {o.name for o in result.workload.ops}
        assert all(n + ".bwd" in names for n in names
                   if not n.endswith(".bwd") and "tokens" not in n and n not in ("src", "tgt"))
        planner.loads(result.to_spec())


def test_fp16_halves_activations() -> None:
    a = transformer.generate(layers=1, hidden=32, heads=2, seq=8, vocab=40)
    b = transformer.generate(layers=1, hidden=32, heads=2, seq=8, vocab=40, dtype="fp16")
    assert _ops(b.workload)["L0.q"].output_bytes * 2 == (  # type: ignore[attr-defined]
        _ops(a.workload)["L0.q"].output_bytes)  # type: ignore[attr-defined]


@pytest.mark.parametrize("call", [
    lambda: transformer.generate(hidden=100, heads=3),
    lambda: transformer.generate(arch="bert"),
    lambda: transformer.generate(layers=0),
    lambda: transformer.generate(profile="tpu"),
    lambda: gnmt.generate(layers=1),
    lambda: gnmt.generate(batch=0),
    lambda: gnmt.generate(dtype="int8"),
    lambda: gnmt.generate(seq=2, layers=2, training=True, optimizer="lion"),
])
def test_bad_options_are_usage_errors(call: object) -> None:
    with pytest.raises(UsageError):
        call()  # type: ignore[operator]


@pytest.mark.parametrize(("make", "flag"), [
    (lambda: transformer.generate(layers=1, ffn=0), "--ffn"),
    (lambda: transformer.generate(arch="encdec", layers=1, tgt_seq=0), "--tgt-seq"),
    (lambda: gnmt.generate(layers=2, tgt_seq=0), "--tgt-seq"),
    # built an encoder whose output fed nothing (0), or, negative, a graph the up-front
    # size check undercounted: `--layers 36000 --decoder-layers -20000` built 504,008 ops
    # (4.5 s, 380 MB) before E011, and more ran out of memory with a traceback
    (lambda: transformer.generate(arch="encdec", layers=1, decoder_layers=0),
     "--decoder-layers")])
def test_an_option_of_0_is_e930_not_the_default(make: object, flag: str) -> None:
    """`--ffn 0` built FFN 3072 and `--tgt-seq 0` the source length, silently."""
    with pytest.raises(UsageError) as err:
        make()  # type: ignore[operator]
    (d,) = err.value.diagnostics
    assert d.code == "E930" and d.message == f"{flag} must be at least 1, not 0"


@pytest.mark.parametrize(("options", "flag"), [
    ({"decoder_layers": 3}, "--decoder-layers"), ({"tgt_seq": 4}, "--tgt-seq")])
def test_an_encdec_option_with_arch_gpt_is_e930(options: dict[str, int], flag: str) -> None:
    """`--decoder-layers 3` and `--tgt-seq 4` without `--arch encdec` were ignored: the GPT
    stack came out as without them, their values only in the header's command."""
    with pytest.raises(UsageError) as err:
        transformer.generate(layers=1, hidden=8, heads=2, seq=4, vocab=10, **options)
    (d,) = err.value.diagnostics
    assert d.code == "E930" and d.message.startswith(f"{flag} is an option of --arch encdec")
    assert d.hints == ("add --arch encdec, or remove " + flag,)


def test_options_making_a_value_outside_the_language_are_e930() -> None:
    """`--hidden 1000000000` was E932, "a bug in planner's importer"."""
    with pytest.raises(UsageError) as err:
        transformer.generate(layers=1, hidden=1_000_000_000, heads=1)
    (d,) = err.value.diagnostics
    assert d.code == "E930" and "above the valid range of a time" in d.message


def test_a_size_above_the_range_is_hinted_to_make_the_model_smaller() -> None:
    """Before: "make the model smaller or larger" whichever side the value was on
    (`generate transformer --batch 999999999999`: a size above the range)."""
    with pytest.raises(UsageError) as err:
        transformer.generate(layers=1, hidden=8, heads=1, seq=1024, vocab=4,
                             batch=999_999_999_999)
    (d,) = err.value.diagnostics
    assert d.code == "E930" and "above the valid range of a size" in d.message
    assert d.hints[0].endswith("make the model smaller (--hidden, --seq, --batch, --vocab)")
    # before: "`output` 3999999999996 KiB"
    assert "`output` 3725.29 TiB, above" in d.message, d.message


def test_a_size_just_above_the_range_reads_above_it() -> None:
    """A size a KiB over 1024 TiB reads above it, not as `1024.00 TiB`."""
    b = Builder("g", "v100", "fp32")
    b.op("x", 1, 2**48 + 2**8)  # fp32: 1024 TiB + 1 KiB
    with pytest.raises(UsageError) as err:
        b.check_ranges()
    (d,) = err.value.diagnostics
    assert "1024.000000001 TiB, above the valid range of a size" in d.message, d.message


@pytest.mark.parametrize(("flops", "side", "way"), [(1e19, "above", "smaller"),
                                                    (0.5, "below", "larger")])
def test_a_value_outside_the_range_is_hinted_back_the_way_it_left(
        flops: float, side: str, way: str) -> None:
    b = Builder("g", "v100", "fp32")
    b.op("x", flops, 1)
    with pytest.raises(UsageError) as err:
        b.check_ranges()
    (d,) = err.value.diagnostics
    assert d.code == "E930" and f"{side} the valid range of a work (FLOP)" in d.message
    assert d.hints[0].endswith(f"make the model {way} (--hidden, --seq, --batch, --vocab)")


#: per generator: its `size` options and small values of the others, for the grid below
SIZE_GRIDS = {
    "transformer": ([{"arch": a, "layers": n, "decoder_layers": d}
                     for a, n, d in itertools.product(("gpt", "encdec"), (1, 2, 3),
                                                      (None, 1, 2))
                     if a == "encdec" or d is None],
                    {"hidden": 4, "heads": 2, "seq": 2, "batch": 1, "vocab": 5}),
    "gnmt": ([{"layers": n, "seq": s, "tgt_seq": t}
              for n, s, t in itertools.product((2, 3, 4, 5), (1, 2, 3, 5), (None, 1, 2, 4))],
             {"hidden": 4, "vocab": 5, "batch": 1}),
}


def test_every_generator_counts_its_graph_exactly_without_building_it() -> None:
    """The CLI refuses a graph over the `ops` or `edges` limit from `size` before building
    it (before: `generate gnmt --layers 2 --seq 100000` built 1,700,012 ops in 32.8 s and
    1.56 GB, then said E011), so `size` must be the count `generate` builds, exactly."""
    modules = {m.name for m in pkgutil.iter_modules(planner.generate.__path__)} - {"builder"}
    assert modules == set(SIZE_GRIDS), "a generator without a size test"
    for module_name, (grid, small) in SIZE_GRIDS.items():
        module = getattr(planner.generate, module_name)
        for options, training in itertools.product(grid, (False, True)):
            w = module.generate(**options, **small, training=training).workload
            assert module.size(**options, training=training) == (len(w.ops), len(w.edges)), (
                module_name, options, training)


@pytest.mark.parametrize(("hidden", "heads", "hint"), [
    (768, 5, "give --heads a divisor of 768 (4 or 6) or --hidden a multiple of 5 (765 or 770)"),
    (10, 12, "give --heads a divisor of 10 (5 or 10) or --hidden a multiple of 12 (12)")])
def test_heads_that_do_not_divide_hidden_get_a_hint_whose_values_work(
        hidden: int, heads: int, hint: str) -> None:
    """E930 said what was wrong and nothing of what to give instead."""
    with pytest.raises(UsageError) as err:
        transformer.generate(layers=1, hidden=hidden, heads=heads)
    (d,) = err.value.diagnostics
    assert d.code == "E930" and d.hints == (hint,)
    counts, sizes = (part.split("(")[1].rstrip(")").split(" or ")
                     for part in hint.split(" or --hidden"))
    for h in counts:  # every value the hint names builds
        transformer.generate(layers=1, hidden=hidden, heads=int(h), seq=4, vocab=8)
    for size in sizes:
        transformer.generate(layers=1, hidden=int(size), heads=heads, seq=4, vocab=8)


def test_a_size_below_1_is_e930_with_a_hint() -> None:
    with pytest.raises(UsageError) as err:
        gnmt.generate(layers=2, batch=0)
    (d,) = err.value.diagnostics
    assert d.hints == ("give --batch a whole number of 1 or more",)



def test_a_negative_decoder_layer_count_is_e930_before_any_building() -> None:
    with pytest.raises(UsageError) as err:
        transformer.generate(arch="encdec", layers=36000, decoder_layers=-20000, hidden=12,
                             heads=12, seq=1, batch=1, vocab=1)
    (d,) = err.value.diagnostics
    assert d.code == "E930" and d.message == "--decoder-layers must be at least 1, not -20000"
