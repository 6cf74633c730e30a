"""Property tests for the language (Hypothesis; fixed or random examples: `tests/conftest.py`).

(a) Random valid specs, generated as model-like structures and rendered to text with random
    names (quoted ones too), units, number spellings, separators, layouts and comments,
    round-trip through the formatter and lowering, and lower to the generated model.
(b) Random text, and random mutations of the valid fixtures, give a `Spec` or a
    `SpecError` whose diagnostics all have a span at line >= 1, column >= 1; never
    another exception. Wherever the fast parser accepts a text, its tree equals Lark's.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from planner.errors import SpecError
from planner.spec.format import format_source
from planner.spec.grammar import KEYWORDS
from planner.spec.load import load_text
from planner.spec.names import skeleton, valid_name
from planner.spec.parse import _fast_parse, parse, parse_lark
from planner.units import EXAMPLES, RANGES, SPEED_RANGE, UNITS, parse_number

VALID = Path(__file__).resolve().parent / "valid"
FIXTURES = sorted(p for folder in (VALID, VALID.parent / "format") for p in folder.rglob("*.plan")
                  if p.stat().st_size > 0)
# No shrinking: a failure is reported as generated (shrinking these can take minutes).
SETTINGS = settings(max_examples=150, deadline=None,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow])

# ---- (a) random valid specs --------------------------------------------------------------

bare_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,8}", fullmatch=True)
# quoted names keep the rules of planner/spec/names.py (no control, bidi or look-alike
# characters), which tests/hardening/test_input_names.py checks on their own
# (drawn from the characters a name may hold and made NFKC, rather than filtered out of
# any text: that filter threw away three drawn specs in four)
quoted_names = st.text(st.characters(exclude_categories=("C", "Zl", "Zp", "Zs"),
                                     include_characters=" "), min_size=1, max_size=8).map(
    lambda t: unicodedata.normalize("NFKC", t)).filter(
        lambda t: valid_name(t) and skeleton(t) == t)
any_names = st.one_of(bare_names, st.sampled_from(sorted(KEYWORDS)), quoted_names)


# Strategies are built once, here, rather than inside the draws: a strategy built per
# draw is validated per draw (a third of the drawing time)
prefixes = bare_names.filter(lambda n: n not in KEYWORDS)
exponents = st.sampled_from(["e", "E"])
exponent_signs = st.sampled_from(["", "+", "-"])
unit_choices = {dim: st.sampled_from(sorted(units)) for dim, units in UNITS.items()}
unit_spaces = st.sampled_from([" ", "", "\t", "  "])
separators = st.sampled_from([" ", "  ", ";", " ; ", "\n", "\n\n", "\t"])
comment_texts = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=10)
op_keys = st.lists(st.sampled_from(["params", "output", "temp"]), unique=True)
memory_models = st.sampled_from(["static", "liveness"])
contentions = st.sampled_from(["none", "link", "device"])


def spell_name(name: str, draw: st.DrawFn) -> str:
    """A name as it may be written: bare where allowed (or quoted anyway), else JSON."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", name) and draw(st.integers(0, 3)) != 0:
        return name
    return json.dumps(name, ensure_ascii=draw(st.booleans()))


@st.composite
def numbers(draw: st.DrawFn) -> str:
    """A positive number in one of the spellings the language allows."""
    whole = draw(st.integers(0, 99_999))
    text = str(whole)
    if draw(st.booleans()) and len(text) > 3:
        text = text[:-3] + "_" + text[-3:]
    if draw(st.booleans()):
        text += "." + str(draw(st.integers(0, 999)))
    if draw(st.integers(0, 4)) == 0:
        text += draw(exponents) + draw(exponent_signs) + str(
            draw(st.integers(0, 12)))
    if text.replace("_", "").strip("0.eE+-") == "" or float(text.replace("_", "")) == 0:
        text = "1" + text  # positive, so `flops` and `bandwidth` stay valid
    return text


def quantity(draw: st.DrawFn, dim: str) -> str:
    """A quantity of `dim` inside its valid range (`units.RANGES`)."""
    unit = draw(unit_choices[dim])
    number = draw(numbers())
    lo, hi = RANGES[dim]
    if not lo <= parse_number(number) * UNITS[dim][unit] <= hi:
        number, unit = EXAMPLES[dim].split()
    return number + draw(unit_spaces) + unit


@dataclass
class Layout:
    """Random choices of how a spec is written."""

    draw: st.DrawFn
    lines: list[str] = field(default_factory=list)

    def sep(self) -> str:
        return self.draw(separators)

    def comment(self) -> str:
        if self.draw(st.integers(0, 5)) == 0:
            return " " * self.draw(st.integers(1, 6)) + "# " + self.draw(comment_texts) + "\n"
        return ""

    def block(self, attrs: list[str]) -> str:
        if not attrs and self.draw(st.booleans()):
            return ""
        if self.draw(st.booleans()):  # one line
            return " { " + "  ".join(attrs) + " }"
        inner = "".join("  " + a + self.comment() + "\n" for a in attrs)
        return " {" + self.comment() + "\n" + inner + "}"


@dataclass
class Generated:
    """A generated spec: its text and the facts the lowered model must show."""

    text: str
    op_names: list[str]
    device_names: list[str]
    n_edges: int
    pins: dict[str, str]
    tied: list[str]


@st.composite
def valid_specs(draw: st.DrawFn) -> Generated:  # noqa: C901 - one spec, drawn in file order
    """A syntactically and semantically valid spec with one cluster, graph and plan."""
    lay = Layout(draw)
    out: list[str] = []
    # Cluster: a range of devices, maybe one more; a full mesh of links.
    prefix = draw(prefixes)
    n = draw(st.integers(1, 4))
    devices = [f"{prefix}{i}" for i in range(n)]
    extra = draw(st.one_of(st.none(), any_names.filter(lambda x: x not in devices)))
    def dev_attrs() -> list[str]:
        attrs = ["memory " + quantity(draw, "size"), "flops " + quantity(draw, "rate")]
        if draw(st.booleans()):
            attrs.append("kind " + spell_name(draw(any_names), draw))
        if draw(st.booleans()):
            speed = draw(numbers())
            if not SPEED_RANGE[0] <= parse_number(speed) <= SPEED_RANGE[1]:
                speed = "1.5"
            attrs.append("speed " + speed)
        return draw(st.permutations(attrs))
    cluster = spell_name(draw(any_names), draw)
    body = [f"device {prefix}[0..{n - 1}]" + lay.block(dev_attrs())]
    if extra is not None:
        body.append("device " + spell_name(extra, draw) + lay.block(dev_attrs()))
        devices.append(extra)
    link_attrs = ["bandwidth " + quantity(draw, "bandwidth")]
    if draw(st.booleans()):
        link_attrs.append("latency " + quantity(draw, "time"))
    if len(devices) > 1 and draw(st.booleans()):  # one statement for the full mesh
        body.append(f"link {', '.join(spell_name(d, draw) for d in devices)} <-> {prefix}[*]"
                    + lay.block(link_attrs))
    elif len(devices) > 1:  # a statement per pair (runs of links get aligned)
        for i, a in enumerate(devices):
            for b in devices[i + 1:]:
                body.append(f"link {spell_name(a, draw)} <-> {spell_name(b, draw)}"
                            + lay.block(link_attrs))
    out.append(f"cluster {cluster} {{" + lay.comment() + "\n" + "".join(
        "  " + b + lay.comment() + lay.sep() + "\n" for b in body) + "}")
    # Graph: unique op names, forward edges only (acyclic), maybe a colocation group.
    names = draw(st.lists(any_names, min_size=1, max_size=6, unique=True))
    graph = spell_name(draw(any_names), draw)
    gbody = []
    # maybe two ops that share a weight (`tie`): each holds at least its bytes
    tied = draw(st.lists(st.sampled_from(names), min_size=2, max_size=2, unique=True)) \
        if len(names) > 1 and draw(st.booleans()) else []
    for name in names:
        attrs = ["time " + quantity(draw, "time")] if draw(st.integers(0, 3)) else [
            "flops " + quantity(draw, "work")]
        keys = draw(op_keys)
        for key in keys:
            attrs.append(f"{key} " + ("2 KiB" if key == "params" and name in tied
                                      else quantity(draw, "size")))
        if name in tied and "params" not in keys:
            attrs.append("params 2 KiB")
        if draw(st.integers(0, 4)) == 0:
            attrs.append(f"time[{spell_name(draw(any_names), draw)}] " + quantity(draw, "time"))
        gbody.append("op " + spell_name(name, draw) + lay.block(draw(st.permutations(attrs))))
    edges = set()
    for _ in range(draw(st.integers(0, 5))):
        if len(names) < 2:
            break
        a, b = sorted(draw(st.lists(st.integers(0, len(names) - 1), min_size=2, max_size=2,
                                    unique=True)))
        chain = [a, b]
        if b + 1 < len(names) and draw(st.booleans()):
            chain.append(draw(st.integers(b + 1, len(names) - 1)))
        edges.update(pairwise(chain))
        attrs = ["bytes " + quantity(draw, "size")] if draw(st.booleans()) else []
        gbody.append(" -> ".join(spell_name(names[i], draw) for i in chain) + lay.block(attrs))
    if len(names) > 1 and draw(st.booleans()):
        group = draw(st.lists(st.sampled_from(names), min_size=2, max_size=3, unique=True))
        gbody.append("colocate " + ", ".join(spell_name(x, draw) for x in group))
    if tied:
        gbody.append("tie " + ", ".join(spell_name(x, draw) for x in tied)
                     + lay.block(["bytes 1 KiB"] if draw(st.booleans()) else []))
    ops_first = gbody[:len(names)] + draw(st.permutations(gbody[len(names):]))
    out.append(f"graph {graph} {{\n" + "".join(
        "  " + b + lay.comment() + lay.sep() + "\n" for b in ops_first) + "}")
    # Plan: settings in any order; pins on ops outside colocation groups.
    pbody = [f"graph {graph}", f"cluster {cluster}"]
    if draw(st.booleans()):
        pbody.append("memory " + draw(memory_models))
    if draw(st.booleans()):
        pbody.append("contention " + draw(contentions))
    grouped = set()
    for b in gbody:
        if b.startswith("colocate "):
            grouped = set(range(len(names)))  # keep it simple: no pins when grouped
    pins: dict[str, str] = {}
    for i, name in enumerate(names):
        if i not in grouped and draw(st.integers(0, 3)) == 0:
            dev = draw(st.sampled_from(devices))
            pins[name] = dev
            pbody.append(f"pin {spell_name(name, draw)} to {spell_name(dev, draw)}")
    out.append(f"plan {spell_name(draw(any_names), draw)} {{\n" + "".join(
        "  " + b + lay.comment() + lay.sep() + "\n" for b in draw(st.permutations(pbody)))
        + "}")
    text = "".join(part + lay.comment() + "\n" + lay.sep() for part in out)
    return Generated(text, names, devices, len(edges), pins, tied)


def outcome(text: str) -> object:
    """What a text lowers to (graphs, clusters, plans), or its sorted error messages."""
    try:
        spec = load_text(text, "gen.plan").spec
    except SpecError as err:
        return sorted((d.code, d.message) for d in err.diagnostics)
    return dict(spec.graphs), dict(spec.clusters), dict(spec.plans)


@pytest.mark.slow
@SETTINGS
@given(valid_specs())
def test_random_valid_specs_round_trip(gen: Generated) -> None:
    """Random valid specs: fast == Lark, format idempotent, same model after formatting."""
    fast = _fast_parse(gen.text, "gen.plan")
    lark = parse_lark(gen.text, "gen.plan")
    assert fast is None or fast == lark
    spec = load_text(gen.text, "gen.plan").spec
    problem = spec.plan()
    assert [op.name for op in problem.graph.ops] == gen.op_names
    assert [d.name for d in problem.cluster.devices] == gen.device_names
    assert len(problem.graph.edges) == gen.n_edges
    assert [sorted(problem.graph.ops[i].name for i in t.ops) for t in problem.graph.ties] \
        == ([sorted(gen.tied)] if gen.tied else [])
    op, dev = problem.graph.op_index, problem.cluster.device_index
    assert dict(problem.pins) == {op[o]: dev[d] for o, d in gen.pins.items()}
    formatted = format_source(gen.text, "gen.plan")
    assert format_source(formatted, "gen.plan") == formatted
    assert outcome(formatted) == outcome(gen.text)


# ---- (b) junk and mutations ---------------------------------------------------------------

JUNK = st.sampled_from(list('{}[]";#\n\t\r ->.*,_0123456789aeGiBmsop\\\x00é/<:'))


def check_never_crashes(text: str, base: Path) -> None:
    """Loading gives a Spec or a SpecError with positioned diagnostics, nothing else; the
    fast parser agrees with Lark; whatever parses formats idempotently to the same model."""
    fast = _fast_parse(text, "m.plan")
    try:
        lark = parse_lark(text, "m.plan")
    except SpecError:
        assert fast is None, "the fast path accepted what Lark rejects"
        lark = None
    if fast is not None:
        assert fast == lark
    try:
        load_text(text, "m.plan", base=base)
    except SpecError as err:
        assert err.diagnostics
        for d in err.diagnostics:
            assert d.span is not None and d.span.line >= 1 and d.span.column >= 1, d
    if lark is not None:
        formatted = format_source(text, "m.plan")
        assert format_source(formatted, "m.plan") == formatted
        assert parse(formatted, "m.plan") is not None


@SETTINGS
@given(st.text(max_size=200))
def test_random_text_never_crashes(text: str) -> None:
    """Arbitrary text: a Spec or positioned diagnostics."""
    check_never_crashes(text, VALID)


@SETTINGS
@given(st.lists(JUNK, max_size=60).map("".join))
def test_random_token_soup_never_crashes(text: str) -> None:
    """Text made of the language's own characters, closer to something that parses."""
    check_never_crashes(text, VALID)


@st.composite
def mutations(draw: st.DrawFn) -> tuple[str, Path]:
    """A valid fixture with one to three characters or tokens deleted, inserted, doubled."""
    path = draw(st.sampled_from(FIXTURES))
    text = path.read_text(encoding="utf-8")
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):  # a character
            i = draw(st.integers(0, max(0, len(text) - 1)))
            op = draw(st.sampled_from(["delete", "insert", "double"]))
            if op == "delete":
                text = text[:i] + text[i + 1:]
            elif op == "insert":
                text = text[:i] + draw(JUNK) + text[i:]
            else:
                text = text[:i + 1] + text[i:]
        else:  # a token (whitespace-separated word)
            words = text.split(" ")
            j = draw(st.integers(0, len(words) - 1))
            if draw(st.booleans()):
                del words[j]
            else:
                words.insert(j, words[j])
            text = " ".join(words)
    return text, path.parent


@SETTINGS
@given(mutations())
def test_mutated_fixtures_never_crash(case: tuple[str, Path]) -> None:
    """One to three edits to a valid spec: a Spec or positioned diagnostics."""
    check_never_crashes(*case)
