"""The parser: the fast path against Lark, the switches, spans, and hostile input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import planner
from planner.errors import SpecError
from planner.spec import parse as parse_mod
from planner.spec.ast import Module
from planner.spec.format import format_source
from planner.spec.load import load_path, load_text
from planner.spec.parse import _fast_parse, parse, parse_lark

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "spec" / "valid" / "example" / "tiny.plan"


def _read_alike(text: str) -> Module:
    """`text` as the fast path reads it, which reads it (not deferring) as Lark does."""
    fast = _fast_parse(text, "t.plan")
    assert fast is not None
    assert fast == parse_lark(text, "t.plan")
    return fast


@pytest.mark.parametrize("text", [
    "graph g { op -> b }",                     # `op` as a name: Lark's lookahead decides
    "graph g { graph -> b }",                  # a keyword starting a chain
    "graph g { op a { op 1 ms } }",            # a keyword where only NAME fits (a key)
    "plan p { op x }",                         # ... (a setting key)
    "cluster c { device d[1_0..2] { memory 1 GiB } }",   # INT vs NUMBER
    "graph g { a ; }",                         # a chain needs an arrow
    "graph g { op a { time 1 ms }",            # unclosed
    "graph g {} @",                            # junk
    "plan p {pin a tomato}",                   # `to` glued to a name
    # `1f1b` where only a NAME fits, a key (before: the fast path read it as one, E210,
    # where Lark says E103; the differential fuzzer's one difference in 3M inputs)
    "graph g { op a { 1f1b 1 ms time 1 ms } }",
    "graph g { op a { time 1 ms } }\nplan p { graph g 1f1b 2 }",
])
def test_fast_path_defers_to_lark(text: str) -> None:
    """Where Lark might read text differently, or it is wrong, the fast path gives up and
    `parse` answers exactly as Lark does (tree or diagnostic)."""
    assert _fast_parse(text, "t.plan") is None
    try:
        expected = parse_lark(text, "t.plan")
    except SpecError as err:
        with pytest.raises(SpecError) as info:
            parse(text, "t.plan")
        assert info.value.diagnostics == err.diagnostics
    else:
        assert parse(text, "t.plan") == expected


def test_fast_path_reads_the_common_forms_exactly_like_lark() -> None:
    """Every construct of the language, comments and separators included."""
    text = (
        '# c0\nimport "x.plan"  # c1\n;cluster c { device d[0..3] { kind k  memory 1 GiB }\n'
        'device "e" { memory 2GiB;speed 0.5 } link d0, d1 -> d[*], "e" { bandwidth 1 Gbps }\n'
        'link d2 <-> d3 ; } graph "g" { op a { time 1 ms  time[k] 2 ms  flops 1e3 FLOP }\n'
        'op "b\\u00e9\\n" op c {} a -> "b\\u00e9\\n" -> c { bytes 1_000 B } colocate a, "b*"\n'
        '} plan p { graph "g" ; cluster c memory static contention link pin a, c to d0\n'
        'place "b\\u00e9\\n" on "e" }\n')
    fast = _read_alike(text)
    assert len(fast.comments) == 2


def test_a_quoted_name_prefixes_a_range_and_a_wildcard() -> None:
    """`"gpü"[0..1]` names `gpü0` and `gpü1`, as `gpu[0..1]` names `gpu0` and `gpu1` (before:
    E101 at the `[`, so a device name that needs quotes could not take a range)."""
    text = ('cluster c { device "gpü"[0..1] { memory 1 GB }\n'
            '  link "gpü"[*] <-> "gpü"[*] { bandwidth 1 GB/s } }\n'
            'graph g { op a { time 1 ms  output 1 MB }  op b { time 1 ms }  a -> b }\n'
            'plan p { graph g  cluster c  pin a to "gpü1" }\n')
    _read_alike(text)
    problem = planner.loads(text).plan()
    assert [d.name for d in problem.cluster.devices] == ["gpü0", "gpü1"]
    assert problem.cluster.link(0, 1) is not None and problem.cluster.link(1, 0) is not None
    assert dict(problem.pins) == {0: 1}  # a on gpü1
    canonical = format_source(text)
    assert 'device "gpü"[0..1] {' in canonical and 'link "gpü"[*] <-> "gpü"[*]' in canonical
    assert format_source(canonical) == canonical


def test_a_bound_written_with_leading_zeros_pads_the_ranges_names() -> None:
    """`gpu[00..02]` declares `gpu00` … `gpu02`, as a Slurm node list reads (before: `gpu0`
    … `gpu2`, so `pin a to gpu01` was E207 "did you mean `gpu0`?"); `[0..07]` pads too,
    and `fmt` writes both bounds at that width. Unpadded ranges are unchanged."""
    text = ("cluster c { device gpu[00..02] { memory 1 GB }\n"
            "  device tpu[0..07] { memory 1 GB }  device npu[8..10] { memory 1 GB }\n"
            "  link gpu[00..02], tpu[00..7], npu[8..10] <-> gpu[*], tpu[0..07], npu[*] {\n"
            "    bandwidth 1 GB/s } }\n"
            "graph g { op a { time 1 ms } }\n"
            "plan p { graph g  cluster c  pin a to gpu01 }\n")
    _read_alike(text)
    problem = planner.loads(text).plan()
    names = [d.name for d in problem.cluster.devices]
    assert names == ["gpu00", "gpu01", "gpu02", *(f"tpu0{i}" for i in range(8)),
                     "npu8", "npu9", "npu10"]
    assert dict(problem.pins) == {0: 1}
    index = {n: k for k, n in enumerate(names)}
    assert problem.cluster.link(index["gpu01"], index["tpu07"]) is not None
    canonical = format_source(text)
    assert "gpu[00..02]" in canonical and "tpu[00..07]" in canonical
    assert "npu[8..10]" in canonical and "tpu[00..07], npu[8..10] <-> gpu[*]" in canonical
    assert format_source(canonical) == canonical
    with pytest.raises(SpecError, match=r"`tpu\[06..09\]` names devices cluster `c` lacks: "
                       r"tpu08, tpu09.*has `tpu\[06..07\]` of this range") as caught:
        planner.loads(text.replace("tpu[0..07], npu[*]", "tpu[06..09], npu[*]"))
    assert "E207" in str(caught.value)
    with pytest.raises(SpecError, match=r"`tpu\[0..7\]` names .* lacks: tpu0, .*`tpu00`"):
        planner.loads(text.replace("tpu[00..7]", "tpu[0..7]"))  # the names are padded


@pytest.mark.parametrize("value", ["1f1b", "gpipe", '"interleaved"'])
def test_fast_path_reads_the_pipeline_settings_like_lark(value: str) -> None:
    # `1f1b`, the one name that starts with a digit, is read by the fast path too: a
    # 100k-op spec that names it would otherwise fall back to Lark, several times slower
    text = ("graph g { op a { time 1 ms; backward_of b } op b { time 1 ms } }\n"
            f"plan p {{ graph g; cluster c; objective pipeline; schedule {value}\n"
            "  microbatches 8; stages_per_device 2 }\n")
    _read_alike(text)


def test_a_two_way_edge_is_left_to_lark_which_records_it() -> None:
    """`a <-> b` in a graph is an error for lowering to report; the fast path bails."""
    text = "graph g { op a {} op b {} a <-> b }"
    assert _fast_parse(text, "t.plan") is None
    chain = parse_lark(text, "t.plan").items[0].items[2]
    assert chain.both_ways is not None and chain.both_ways.column == 29


def test_planner_parser_lark_skips_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """`PLANNER_PARSER=lark` (for benchmarks) parses with Lark only."""
    def boom(text: str, file: str) -> None:
        raise AssertionError("fast path used")

    monkeypatch.setattr(parse_mod, "_fast_parse", boom)
    monkeypatch.setenv("PLANNER_PARSER", "lark")
    text = TINY.read_text(encoding="utf-8")
    assert parse(text, "t.plan") == parse_lark(text, "t.plan")


def test_planner_no_cython_disables_lark_cython() -> None:
    """`PLANNER_NO_CYTHON=1` builds the pure-Python Lark parser."""
    pytest.importorskip("lark_cython")
    code = ("from planner.spec.parse import _parser; "
            "print(bool(_parser().lark.options._plugins))")
    env = {**os.environ, "PLANNER_NO_CYTHON": "1"}
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    env["PLANNER_NO_CYTHON"] = "0"
    on = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                        check=True).stdout.strip()
    assert (off, on) == ("False", "True")


def test_comment_spans_are_complete() -> None:
    """Comments carry end positions on both paths (Lark leaves them unset on ignored tokens)."""
    text = "graph g {  # hi there\n}\n"
    for module in (parse_lark(text, "t"), _fast_parse(text, "t")):
        assert module is not None
        (c,) = module.comments
        assert (c.span.line, c.span.column, c.span.end_line, c.span.end_column) == (1, 12, 1, 22)
        assert text[c.span.start:c.span.end] == "# hi there"


def test_spans_point_at_tokens() -> None:
    """Line and column are 1-based and offsets index the text, on lines after the first."""
    text = 'graph g {\n\t op "x y" { time  1.5 ms }\n}\n'
    module = _fast_parse(text, "t")
    assert module is not None
    op = module.items[0].items[0]  # type: ignore[union-attr]
    assert (op.name.span.line, op.name.span.column) == (2, 6)
    assert text[op.name.span.start:op.name.span.end] == '"x y"'
    value = op.attrs[0].value
    assert (value.number, value.unit) == ("1.5", "ms")
    assert text[value.span.start:value.span.end] == "1.5 ms"


@pytest.mark.parametrize("text", [
    "{" * 10_000_000,                              # 10 MB of nesting
    "graph g { " + "op a { " * 200_000,            # unclosed blocks
    "graph g {" + "\n" * 200_000 + "}}",           # far away
    "\x00\x01\x02\xff\ufeff" * 1000,                # control characters, a BOM
])
def test_hostile_input_is_a_diagnostic(text: str) -> None:
    """Huge or binary input ends in a positioned diagnostic, never a traceback."""
    with pytest.raises(SpecError) as info:
        load_text(text, "h.plan")
    for d in info.value.diagnostics:
        assert d.span is not None and d.span.line >= 1 and d.span.column >= 1


@pytest.mark.parametrize("text, code", [
    ("cluster c { device d[0..99999999] { memory 1 GiB } }", "E246"),
    ("cluster c { device d[0..1] { memory 1 GiB }\n link d[0..99999999] <-> d[*] {} }", "E246"),
    ("cluster c {" + " ".join(f"device d{i}_[0..999] {{ memory 1 GiB }}" for i in range(3))
     + "}", "E246"),
    ("cluster c { device d0 { memory 1e999 GiB } }", "E223"),
    ("cluster c { device d0 { memory 1 GiB  speed 1e400 } }", "E223"),
    ('import "a\\u0000b"', "E001"),  # as a file's import says it (E003 from loads before)
    ('import "/dev/zero"', "E008"),  # outside the root (and would be read forever)
])
def test_resource_limits(text: str, code: str) -> None:
    """Ranges too big to expand, overflowing numbers and special files are errors, not a
    crash, a hang or an OOM."""
    with pytest.raises(SpecError) as info:
        load_text(text, "r.plan", base=REPO / "tests" / "spec")
    assert code in {d.code for d in info.value.diagnostics}


def test_import_path_with_nul(tmp_path: Path) -> None:
    """An import path with a NUL character is reported at the import."""
    (tmp_path / "a.plan").write_text('import "x\\u0000y"\n', encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_path(tmp_path / "a.plan")
    (d,) = info.value.diagnostics
    assert d.code == "E001" and d.span is not None and (d.span.line, d.span.column) == (1, 8)


def test_empty_file_is_valid(tmp_path: Path) -> None:
    """An empty file is a valid spec that defines nothing."""
    (tmp_path / "e.plan").write_text("", encoding="utf-8")
    spec = load_path(tmp_path / "e.plan").spec
    assert not spec.graphs and not spec.clusters and not spec.plans


ONE_LINE_FORMS = [  # (graph body, whether the fast path reads it)
    ('op "a:0" { time 1.5 us  time[cpu] 2 ms  flops 3e2 MFLOP  params 4 KiB }', True),
    ("op a { time 1 ms }  op b {}  op c { time [ cpu ] 2 ms }", True),
    ('op "a" { time[ "cp u" ] 1 ms  kind v100 }', True),   # a name value: the lexer reads it
    ("op a\n{ time 1 ms }", True),                          # the block on the next line
    ("op a { time 1 ms\n output 2 MiB }", True),           # a block over two lines
    ("op a { time 1 ms; output 2 MiB }", True),             # a separator in the block
    ("op a { time 1 ms }# after\nop b { time 1ms}", True),
    ("op a {time 1 ms} op b {time 2 ms} a->b", False),    # NAME takes `a-`: Lark decides
    ('op a {} op b {} op c {} a -> b -> "c" { bytes 1_000 B }', True),
    ("op a {} op b {} op c {} a -> b\n -> c", True),       # a chain over lines
    ("op a {} op b {} op c {} a -> b ->\n c { bytes 1 KiB }", True),
    ("op a {} op b {} a -> b\n{ bytes 1 KiB }", True),     # its block on the next line
    ("op a {} op b {} a -> b {}\n a -> b { bytes 2 KiB } ; b -> a", True),
    ("op a {} op b {} a -> b { bytes 1 KiB } -> a", False),  # no arrow after a block
    ("op a {} op b {} a -> b # c\n", True),
    ("op a {} op b {} a -> b <-> a", False),
    ('op a {} op "b\\u00e9" {} a -> "b\\u00e9" { bytes 1 KiB  op 2 }', False),  # keyword key
    ("op a { time 1 msx }", False),                         # `1` then a key without a value
    ("op a { time1ms }", False),                            # one NAME, no value: an error
    ("op a { time-1 ms  t_2 ms }", True),                   # keys `time-1`, `t_2`: name values
    ("op a {} op b {} a ->  b\t{\tbytes 3 MiB\t}\r\n", True),
]


@pytest.mark.parametrize(("body", "reads"), ONE_LINE_FORMS)
def test_one_line_forms_read_as_lark_reads_them(body: str, reads: bool) -> None:
    """The reader's one-line forms (`_Reader.line_chain`, `line_block`) give Lark's tree,
    and give way to the lexer where the text goes on in another form."""
    text = f"graph g {{\n  {body}\n}}\n"
    fast = _fast_parse(text, "t.plan")
    assert (fast is not None) == reads
    if fast is not None:
        assert fast == parse_lark(text, "t.plan")


WHOLE_LINES = [  # graph bodies after a first one-line op: what `_Reader.lines` meets
    "op b { time 1 ms }\n\n  # c\nop c { time 2 ms }  # d\n",
    "a -> b\nb -> c { bytes 1 KiB }\n\"a\" -> c\n}",
    "a -> b\n  -> c\n",                    # a chain going on: the lexer's
    "a -> b\n{ bytes 1 KiB }\n",           # ... its block on the next line
    "a -> b\n\n-> c\n",                   # ... after a blank line
    "a -> b # x\n# y\n-> c { bytes 2 B }\n",
    "a -> b\ncolocate a, b\nop d { time 1 ms }\nd -> a",
    "a -> b ; b -> c\n",                    # more on the line after a chain
    "op b { time 1 ms } op c { time 1 ms }\nb -> c",
    "op b\n{ time 1 ms }\nop c { time 1 ms }",
    "op b { time 1 ms\n}\nop c {}",
    "op b { kind x }\n",                    # a name value: the lexer reads it
    "op -> b\n",                            # `op` as a name: Lark decides
    "graph -> b\n",
    "a -> b <-> c\n",
    "a->b\n",
    'op "b\\u00e9" { time 1 ms }\n"b\\u00e9" -> a { bytes 1 B }\n',
    "a -> b { bytes 1 KiB }\tb -> c\r\nop d { time 1 ms }\r\n",
    'a -> b # c\n"b" -> "c"\t# d\nc -> a\n',  # two-name chains, each read in one match
    "a -> op\nop -> a\n",
    "a -> b-\nb- -> c\n",                  # `-` ends a NAME: `b-` is a name
    "a -> b\t\r\n\nb -> c\n",
]


@pytest.mark.parametrize("body", WHOLE_LINES)
def test_whole_lines_read_as_lark_reads_them(body: str) -> None:
    """After a one-line statement the reader takes whole lines itself (`_Reader.lines`):
    the tree is Lark's, comments included, or the fast path gives way as a whole."""
    text = "graph g {\n  op a { time 1 ms }\n" + body + "\n}\n"
    try:
        expected = parse_lark(text, "t.plan")
    except SpecError:
        assert _fast_parse(text, "t.plan") is None
        return
    fast = _fast_parse(text, "t.plan")
    if fast is not None:
        assert fast == expected


def test_whole_lines_skip_the_lexer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph of one-line ops and chains, with blank and comment lines between, goes past
    the lexer nearly whole: a few tokens, not three a line (a change that silently hands
    the lines back to the lexer fails here, though the tree would not change)."""
    from planner.spec import fastparse

    yielded = 0
    tokens = fastparse.lex  # the lexer, as the fast path calls it

    def counting(text: str, comments: list) -> object:
        nonlocal yielded
        gen = tokens(text, comments)
        tok = next(gen)
        while True:
            yielded += 1
            try:
                tok = gen.send((yield tok))
            except StopIteration:
                return

    monkeypatch.setattr(fastparse, "lex", counting)
    ops = [f'  op "n{i}" {{ time {i + 1} us  output 1 MiB }}' for i in range(200)]
    chains = [f'  "n{i}" -> "n{i + 1}"' + (" { bytes 2 KiB }" if i % 3 else "")
              for i in range(199)]
    body = "\n".join(ops[:100] + ["", "  # half"] + ops[100:] + chains)
    text = f"graph g {{\n{body}\n}}\n"
    fast = _fast_parse(text, "t.plan")
    assert fast == parse_lark(text, "t.plan")
    assert len(fast.comments) == 1 and fast.comments[0].span.line == 103
    assert yielded < 20, yielded


def test_one_line_forms_under_random_blanks_and_breaks() -> None:
    """Blanks, line breaks, comments and separators at random token boundaries of a
    generated graph: the fast path's tree is Lark's every time it gives one."""
    import random

    rng = random.Random(7)
    lines = ['op "x/a:0" { time 1.5 us  time[cpu] 2 ms  params 4 KiB }', "op b { output 1 MiB }",
             'op c { flops 2 GFLOP }', '"x/a:0" -> b -> c { bytes 3 KiB }', 'b -> c', 'c']
    seps = [" ", "  ", "\t", "\n", " # n\n", " ;", "\r\n", ""]  # "": tokens glued
    read = valid = 0
    for _ in range(300):
        body = []
        for line in lines[:-1]:
            toks = line.replace("{", " { ").replace("}", " } ").replace("->", " -> ").split(" ")
            toks = [t for t in toks if t]
            body.append("".join(t + (rng.choice(seps) if rng.random() < 0.2 else " ")
                                for t in toks))
        text = "graph g {\n" + "\n".join(body) + "\n}\n"
        fast = _fast_parse(text, "t.plan")
        try:
            expected = parse_lark(text, "t.plan")
        except SpecError:
            assert fast is None
            continue
        valid += 1
        if fast is not None:
            read += 1
            assert fast == expected, text
    assert valid > 50 and read > valid // 2, (valid, read)  # the fast path read most


def test_one_line_blocks_share_their_keys_and_units() -> None:
    """Every block's attribute keys and units are one string object each (a 100k-op tree
    held 800k copies), and the tree is still Lark's."""
    text = ("graph g {\n  op a { time 1 ms  output 2 MiB }\n  op b { time 3 ms  output 4 MiB }\n"
            "  a -> b { bytes 1 KiB }\n}\n")
    tree = _fast_parse(text, "s.plan")
    assert tree == parse_lark(text, "s.plan")
    ops = [i for i in tree.items[0].items if i.__class__.__name__ == "OpDecl"]
    (a_time, a_out), (b_time, b_out) = (op.attrs for op in ops)
    assert a_time.key is b_time.key and a_out.key is b_out.key
    assert a_time.value.unit is b_time.value.unit and a_out.value.unit is b_out.value.unit


@pytest.mark.parametrize("prefix", ["op", "to", "link", "device", "cluster", "on"])
def test_a_keyword_is_a_device_ranges_prefix_as_it_is_a_name(prefix: str) -> None:
    # keywords are names (`device op { ... }`), so `device op[0..1]` declares op0 and op1;
    # before: E101 "unexpected `[`" from both parsers
    text = (f"cluster c {{\n  device {prefix}[0..1] {{ memory 1 GiB }}\n"
            f"  link {prefix}[*] <-> {prefix}[*] {{ bandwidth 1 GB/s }}\n}}\n")
    _read_alike(text)
    devices = load_text(text, "t.plan").spec.clusters["c"].devices
    assert [d.name for d in devices] == [f"{prefix}0", f"{prefix}1"]
