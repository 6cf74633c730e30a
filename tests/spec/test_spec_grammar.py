"""One language definition: the grammar, and the fast reader checked against it.

(a) `grammar.read_grammar`, which derives the keywords, statements, setting keys and
    punctuation without Lark, reads grammar/plan.lark as Lark does.
(b) The fast reader reads the grammar as it is (`fastparse.mismatches` is empty), and a
    change made to the grammar alone is either taken up without a change to the reader
    (a keyword spelled differently, a keyword as a plan setting's key) or named, with
    what to change (a statement or terminal added, a rule changed).
(c) One example per production of the grammar, and one per alternative of each rule used
    inside another, each with its tokens on one line and on lines of their own: the fast
    path builds Lark's tree or gives up, and it reads at least one example of each
    production (unless its rule is in `fastparse.LEFT_TO_LARK`).
(d) The other hand-kept lists of the language's words agree with the grammar.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import pytest
from lark import Lark
from lark.grammar import Rule, Symbol

from planner.errors import SpecError
from planner.spec import ast, fastparse, lex, syntax
from planner.spec.fastparse import LEFT_TO_LARK, _fast_parse, mismatches
from planner.spec.grammar import KEYWORDS, Grammar, grammar, grammar_text, read_grammar
from planner.spec.larkparse import _Builder, parse_lark

REPO = Path(__file__).resolve().parents[2]
FASTPARSE = "planner/spec/fastparse.py"


def _lark(text: str, builder: _Builder | None = None) -> Lark:
    return Lark(text, parser="lalr", lexer="contextual", maybe_placeholders=False,
                transformer=builder)


@lru_cache(maxsize=1)
def _reference() -> Lark:
    """Lark's reading of the grammar (its parser, without the tree builder)."""
    return _lark(grammar_text())


# ---- (a) the reading without Lark ---------------------------------------------------------

def _lark_rules(lark: Lark) -> dict[str, list[tuple[Symbol, ...]]]:
    """Lark's rules (EBNF expanded into helper rules `__x_star_0`), by name."""
    rules: dict[str, list[tuple[Symbol, ...]]] = defaultdict(list)
    for rule in lark.rules:
        rules[rule.origin.name].append(tuple(rule.expansion))
    return rules


def _lark_statements(lark: Lark, block: str, words: dict[str, str]) -> dict[str, str]:
    """The statements `block` holds, found in Lark's rules as `Grammar.statements` finds
    them in the text: the rules its helper rules repeat, and their keyword-led rules."""
    rules = _lark_rules(lark)
    helpers = [r for r in rules if re.fullmatch(rf"__{block}_(star|plus)_\d+", r)]
    items = {s.name for h in helpers for exp in rules[h] for s in exp
             if not s.is_term and s.name not in helpers}
    found = {}
    for exp in (exp for item in items for exp in rules[item]):
        if len(exp) == 1 and not exp[0].is_term:
            firsts = {e[0].name for e in rules[exp[0].name] if e}
            if len(firsts) == 1 and (first := firsts.pop()) in words:
                found[words[first]] = exp[0].name
    return found


def _expand(rules: dict[str, list[tuple[Symbol, ...]]], rule: str) -> list[tuple[Symbol, ...]]:
    """`rule`'s expansions with its own helper rules (`__rule_star_0`) expanded too."""
    found, seen, queue = [], set(), deque([rule])
    while queue:
        name = queue.popleft()
        for exp in rules[name]:
            found.append(exp)
            for s in exp:
                if s.name.startswith(f"__{rule}_") and s.name not in seen:
                    seen.add(s.name)
                    queue.append(s.name)
    return found


_DECODED = {"n": "\n", "f": "\f", "t": "\t", "r": "\r"}


def _as_lark_decodes(pattern: str) -> str:
    """A pattern as Lark keeps it, the same expression: its `\\n`, `\\f`, `\\t`, `\\r`,
    `\\xHH`, `\\uHHHH` escapes decoded (others, `\\\\` too, kept)."""
    def decode(m: re.Match[str]) -> str:
        code = m[1]
        if code[0] in "xuU":
            return chr(int(code[1:], 16))
        return _DECODED.get(code, m[0])
    return re.sub(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", decode, pattern)


def _terminals() -> dict[str, Any]:
    return {t.name: t for t in _reference().terminals}


def _keywords() -> dict[str, str]:
    """Lark's keyword terminals: one word each, a string or a whole word (the word, not
    followed by a name's character)."""
    found = {}
    for n, t in _terminals().items():
        whole = re.fullmatch(r"([A-Za-z_]\w*)\(\?!\[[^\]]*\]\)", t.pattern.value)
        if t.pattern.type == "str" and re.fullmatch(r"[A-Za-z_]\w*", t.pattern.value):
            found[n] = t.pattern.value
        elif t.pattern.type == "re" and whole is not None:
            found[n] = whole.group(1)
    return found


def _punctuation() -> dict[str, str]:
    """Lark's other string terminals (`"{"` -> LBRACE), by their text."""
    return {t.pattern.value: n for n, t in _terminals().items()
            if t.pattern.type == "str" and n not in _keywords()}


def test_the_terminals_are_read_as_lark_reads_them() -> None:
    """Keywords, patterns, priorities, strings, punctuation and what is ignored."""
    g, terminals = grammar(), _terminals()
    assert set(g.terminals) == {n for n in terminals if not n.startswith("__")} - set(
        _punctuation().values())
    assert g.terminals.keys() == g.patterns.keys() | g.strings.keys()  # none it cannot read
    assert g.keywords == _keywords()
    assert frozenset(_keywords().values()) == KEYWORDS
    for name, pattern in g.patterns.items():
        assert terminals[name].pattern.value == _as_lark_decodes(pattern), name
        assert terminals[name].priority == g.priorities.get(name, 0), name
    for name, strings in g.strings.items():  # keywords, and `ARROW: "<->" | "->"`
        regex = terminals[name].pattern.to_regexp()
        assert all(re.fullmatch(regex, s) for s in strings), name
    arrows = {s for n, strings in g.strings.items() if n not in _keywords() for s in strings}
    assert set(g.punctuation()) == _punctuation().keys() | arrows
    ignored = {terminals[n].pattern.value for n in _reference().ignore_tokens}
    assert {terminals[i].pattern.value if i in terminals else _as_lark_decodes(i[1:-1])
            for i in g.ignored} == ignored


def test_the_rules_are_read_as_lark_reads_them() -> None:
    """The same rules, each using the same symbols (Lark's names for the strings)."""
    g, rules = grammar(), _lark_rules(_reference())
    assert set(g.rules) == {r for r in rules if not r.startswith("__")}
    for rule, alternatives in g.rules.items():
        written = {_punctuation()[s[1:-1]] if s.startswith('"') else s
                   for alt in alternatives for s in alt[:len(alt) - 2 if "->" in alt else None]
                   if s.startswith('"') or re.fullmatch(r"[A-Za-z_]\w*", s)}
        used = {s.name for exp in _expand(rules, rule) for s in exp
                if not s.name.startswith(f"__{rule}_")}
        assert written == used, rule


def test_what_is_derived_from_the_rules_agrees_with_lark() -> None:
    """The statements of each block, and the keywords of `_key` and `name`."""
    g, lark, words = grammar(), _reference(), _keywords()
    for block in g.rules:
        assert g.statements(block) == _lark_statements(lark, block, words), block
    rules = _lark_rules(lark)
    for rule in ("_key", "name"):
        lone = [exp[0].name for exp in rules[rule] if len(exp) == 1]
        assert g.words(rule) == tuple(words[s] for s in lone if s in words)


# ---- (b) the fast reader against the grammar ----------------------------------------------

def test_the_fast_reader_reads_the_grammar() -> None:
    found = mismatches(grammar())
    assert not found, (f"grammar/plan.lark and {FASTPARSE} differ (until they agree the fast "
                       "path is off and Lark parses every text):\n  " + "\n  ".join(found))


def _edited(old: str, new: str) -> str:
    """The grammar with `old` (once) replaced by `new`; Lark must accept it."""
    text = grammar_text()
    assert text.count(old) == 1, old
    text = text.replace(old, new)
    _lark(text)  # a grammar Lark builds a parser from (no conflict)
    return text


@pytest.fixture
def scratch_grammar(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A function that makes the fast path read an edited grammar text (until the end of
    the test)."""
    caches = (fastparse._syntax, lex.token_re, lex.line_res, fastparse._whole_line_res)

    def use(text: str) -> None:
        edited = read_grammar(text)
        monkeypatch.setattr(fastparse, "grammar", lambda: edited)
        monkeypatch.setattr(lex, "grammar", lambda: edited)
        for cache in caches:
            cache.cache_clear()

    yield use
    for cache in caches:  # the real grammar's, from the next call on
        cache.cache_clear()


def _as_lark_reads(grammar_source: str, text: str) -> tuple[ast.TopLevel, ...]:
    """The items Lark builds from `text` with the grammar `grammar_source`."""
    builder = _Builder()
    builder.file = "t.plan"
    return cast("tuple[ast.TopLevel, ...]", _lark(grammar_source, builder).parse(text))


PLAN_STATEMENT = ('_plan_item: setting | pin | place | ";"',
                  '_plan_item: setting | pin | place | budget | ";"\nbudget: BUDGET value')


#: two keywords as the grammar writes them
ON, COLOCATE = r"ON.2: /on(?![A-Za-z0-9_.\-])/", r"COLOCATE.2: /colocate(?![A-Za-z0-9_.\-])/"


@lru_cache(maxsize=1)
def _with_budget() -> str:
    """A plan statement `budget VALUE` added to the grammar alone (keyword, rule, name)."""
    text = grammar_text().replace(*PLAN_STATEMENT).replace(
        ON, f"{ON}\n{ON.replace('ON', 'BUDGET').replace('on', 'budget')}").replace(
        "| TO | ON |", "| TO | ON | BUDGET |")
    _lark(text)
    return text


def test_a_statement_added_to_the_grammar_alone_is_named(scratch_grammar: Any) -> None:
    found = mismatches(read_grammar(_with_budget()))
    assert any("rule `budget` is not read" in line for line in found), found
    assert any("`_plan_item`'s alternative `budget`" in line for line in found), found
    scratch_grammar(_with_budget())
    assert _fast_parse("plan p { graph g }", "t.plan") is None  # until the reader reads it


@pytest.mark.parametrize(("old", "new", "spec"), [
    pytest.param("_key: NAME | GRAPH | CLUSTER", "_key: NAME | GRAPH | CLUSTER | OP",
                 "plan p { graph g op x }", id="added-to-the-setting-keys"),
    pytest.param(COLOCATE, COLOCATE.replace("/colocate", "/together"),
                 "graph g { op a op b\n together a, b colocate -> a }", id="spelled-differently"),
])
def test_a_keyword_changed_in_the_grammar_is_read_as_the_grammar_says(
        scratch_grammar: Any, old: str, new: str, spec: str) -> None:
    text = _edited(old, new)
    assert mismatches(read_grammar(text)) == []
    scratch_grammar(text)
    fast = _fast_parse(spec, "t.plan")
    assert fast is not None and fast.items == _as_lark_reads(text, spec)


@pytest.mark.parametrize(("old", "new", "named"), [
    ("attr: NAME selector? value", "attr: NAME value", "rule `attr` is read as"),
    ("| PIN | PLACE |", "| PIN |", "keyword(s) place not in rule `name`"),
    ("value: QUANTITY | NUMBER | name", "value: QUANTITY | NUMBER | DAYS | name\nDAYS: /[0-9]+d/",
     "terminal DAYS is not read"),
    ("INT: /[0-9]+/", "INT: /[0-9_]+/", "terminal INT is /[0-9_]+/"),
    ('ARROW: "<->" | "->"', 'ARROW: "<->" | "->" | "=>"', "terminal ARROW is"),
    ("_graph_item: op | chain | colocate", "_graph_item: op | colocate", "no alternative `chain`"),
])
def test_a_rule_changed_in_the_grammar_alone_is_named(old: str, new: str, named: str,
                                                      scratch_grammar: Any) -> None:
    text = _edited(old, new)
    found = mismatches(read_grammar(text))
    assert any(named in line for line in found), found
    scratch_grammar(text)
    assert _fast_parse("graph g { op a }", "t.plan") is None  # Lark parses every text


# ---- (c) one example per production -------------------------------------------------------

#: text for each terminal the grammar gives as a pattern (keywords and punctuation are their
#: own text); the first wherever another symbol is the one varied
SAMPLES = {
    "NAME": ("x", "a-b.c_1"),
    "STRING": ('"s"', '"q \\u00e9"'),
    "INT": ("1", "12"),
    "NUMBER": ("1.5", "1_000e3"),
    "QUANTITY": ("2 ms", "3GiB", "4 GB/s"),
    "SCHEDULE_1F1B": ("1f1b",),
}


def _samples(lark: Lark, g: Grammar) -> dict[str, tuple[str, ...]]:
    """Text for every terminal of `lark` (whose text `g` reads), shortest first."""
    found: dict[str, tuple[str, ...]] = {}
    for t in lark.terminals:
        if t.name in g.strings:
            found[t.name] = tuple(sorted(g.strings[t.name], key=len))
        elif t.pattern.type == "str":
            found[t.name] = (t.pattern.value,)
        elif t.name in SAMPLES:
            assert all(re.fullmatch(t.pattern.to_regexp(), s) for s in SAMPLES[t.name]), t.name
            found[t.name] = SAMPLES[t.name]
    return found


class _Examples:
    """Sentences of the grammar, each with the productions it was made to show."""

    def __init__(self, lark: Lark, g: Grammar) -> None:
        self.rules = _lark_rules(lark)
        self.samples = _samples(lark, g)
        used = {s.name for exps in self.rules.values() for e in exps for s in e if s.is_term}
        missing = sorted(used - self.samples.keys())
        assert not missing, f"no example text for terminal(s) {missing}: add to SAMPLES"
        self.shortest = self._shortest()
        self.context = self._contexts()

    def _shortest(self) -> dict[str, tuple[Symbol, ...]]:
        """Each rule's expansion with the fewest tokens."""
        size: dict[str, int] = {}
        best: dict[str, tuple[Symbol, ...]] = {}
        changed = True
        while changed:
            changed = False
            for rule, exps in self.rules.items():
                for exp in exps:
                    if all(s.is_term or s.name in size for s in exp):
                        n = sum(1 if s.is_term else size[s.name] for s in exp)
                        if n < size.get(rule, 1 << 30):
                            size[rule], best[rule], changed = n, exp, True
        return best

    def minimal(self, symbols: tuple[Symbol, ...]) -> list[str]:
        """The fewest tokens `symbols` derive."""
        out: list[str] = []
        for s in symbols:
            out += [self.samples[s.name][0]] if s.is_term else self.minimal(self.shortest[s.name])
        return out

    def _contexts(self) -> dict[str, tuple[list[str], list[str]]]:
        """Each rule's tokens before and after it in a small whole file."""
        context: dict[str, tuple[list[str], list[str]]] = {"start": ([], [])}
        queue = deque(["start"])
        while queue:
            rule = queue.popleft()
            before, after = context[rule]
            for exp in self.rules[rule]:
                for i, s in enumerate(exp):
                    if not s.is_term and s.name not in context:
                        context[s.name] = (before + self.minimal(exp[:i]),
                                           self.minimal(exp[i + 1:]) + after)
                        queue.append(s.name)
        return context

    def __iter__(self) -> Iterator[tuple[list[str], set[tuple[str, tuple[Symbol, ...]]]]]:
        """(tokens, productions shown): each production with its symbols at their
        shortest, with each other text of a terminal, and with each alternative of a
        rule it uses."""
        for rule, exps in self.rules.items():
            before, after = self.context[rule]
            for exp in exps:
                parts = [self.minimal((s,)) for s in exp]
                yield before + sum(parts, []) + after, {(rule, exp)}
                for i, s in enumerate(exp):
                    inner: list[tuple[list[str], set[Any]]] = (
                        [([t], set()) for t in self.samples[s.name][1:]] if s.is_term else
                        [(self.minimal(f), {(s.name, f)}) for f in self.rules[s.name]])
                    for tokens, shown in inner:
                        varied = [*parts[:i], tokens, *parts[i + 1:]]
                        yield before + sum(varied, []) + after, {(rule, exp), *shown}


def _production(rule: str, exp: tuple[Symbol, ...]) -> str:
    return f"{rule}: {' '.join(s.name for s in exp) or '(nothing)'}"


def test_every_production_reads_as_lark_reads_it() -> None:
    """The fast path builds Lark's tree or gives up, on every example; and it reads an
    example of every production, but those of the rules it leaves to Lark."""
    found = mismatches(grammar())
    assert not found, (f"the fast path is off: grammar/plan.lark and {FASTPARSE} differ:\n  "
                       + "\n  ".join(found))
    read: set[tuple[str, tuple[Symbol, ...]]] = set()
    examples: dict[tuple[str, tuple[Symbol, ...]], str] = {}
    count = 0
    for tokens, shown in _Examples(_reference(), grammar()):
        for sep in (" ", "\n"):
            text = sep.join(tokens) + "\n"
            count += 1
            try:
                lark = parse_lark(text, "t.plan")
            except SpecError as err:  # pragma: no cover - a generator or grammar fault
                raise AssertionError(f"Lark rejects a sentence of its grammar: {text!r}: "
                                     f"{err.diagnostics[0].message}") from None
            fast = _fast_parse(text, "t.plan")
            assert fast is None or fast == lark, f"the fast path reads {text!r} otherwise"
            for production in shown:
                examples.setdefault(production, text)
                if fast is not None:
                    read.add(production)
    assert count > 500
    left = set(LEFT_TO_LARK) | {
        h for h in _lark_rules(_reference()) for r in LEFT_TO_LARK if h.startswith(f"__{r}_")}
    unread = sorted(_production(*p) + f"  (e.g. {examples[p]!r})"
                    for p in examples.keys() - read if p[0] not in left)
    assert not unread, (
        f"the fast path ({FASTPARSE}) reads no example of:\n  " + "\n  ".join(unread)
        + "\nteach `_Reader` to read it (and RULES_READ), or add its rule to LEFT_TO_LARK "
        "with the reason")
    all_productions = {(r.origin.name, tuple(r.expansion)) for r in _reference().rules}
    assert set(examples) == all_productions


def test_the_examples_show_every_production_of_an_edited_grammar(scratch_grammar: Any) -> None:
    """The generator follows the grammar: a statement added there alone has its examples,
    all left to Lark (the reader does not read that grammar)."""
    lark = _lark(_with_budget())
    budget: list[Rule] = [r for r in lark.rules if r.origin.name == "budget"]
    assert len(budget) == 1
    texts = [" ".join(tokens) for tokens, shown in _Examples(lark, read_grammar(_with_budget()))
             if ("budget", tuple(budget[0].expansion)) in shown]
    assert any(t.startswith("plan ") and t.endswith(" { budget 1.5 }") for t in texts)
    scratch_grammar(_with_budget())
    assert all(_fast_parse(t, "t.plan") is None for t in texts)


# ---- (d) the other lists of the language's words ------------------------------------------

def test_the_syntax_hints_take_the_statement_keywords_from_the_grammar() -> None:
    # syntax.py's hints ("`pin` starts a statement") name the words that start a statement
    expected = {"IMPORT", "CLUSTER", "DEVICE", "LINK", "GRAPH", "OP", "COLOCATE", "TIE", "PLAN",
                "PIN", "PLACE"}
    assert expected == syntax._STATEMENT_KEYWORDS
    assert "BUDGET" in read_grammar(_with_budget()).statement_keywords()


def test_the_fuzzing_dictionary_has_every_keyword_and_punctuation() -> None:
    words = set(re.findall(r'^"(.*)"$', (REPO / "fuzz" / "plan.dict").read_text(encoding="utf-8"),
                           re.MULTILINE))
    missing = sorted((KEYWORDS | set(grammar().punctuation())) - words)
    assert not missing, f"add {missing} to fuzz/plan.dict"
