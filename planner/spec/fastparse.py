"""The fast path of `parse`: a regular-expression lexer and a recursive-descent reader.

The lexer (`lex.py`) yields every token with its offset, streamed; a reader with one
token of lookahead, and line readers that match whole one-line forms past it, accept the
usual forms and build exactly the tree the Lark path builds (spans included). It is
deliberately conservative: wherever Lark's contextual lexer or LALR lookahead could read
the text differently (a keyword where only NAME fits, `op -> b`, `gpu[1_0..2]`, `a <-> b`
in a graph), or on any error, it gives up (`fast_parse` returns None) and Lark parses the
text instead, so Lark alone decides every error message. The tests compare both trees on
every spec in the repository and on generated and mutated texts.

One language definition: the terminals' patterns, the keywords, the statements each
block holds (by keyword), the keywords a plan setting's key may be and the punctuation
are taken from the grammar (`grammar.grammar()`), so that a keyword, a setting key or a
spelling is changed there alone. How each rule is read is the reader's code; `RULES_READ`
states, for every rule, the grammar's text that code follows, and `mismatches` compares
it with the grammar: where they differ (a rule changed or added in the grammar only), the
fast path reads nothing (Lark parses every text) and tests/spec/test_spec_grammar.py
fails, naming the rule and what to change.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Generator
from functools import lru_cache
from typing import Any, NamedTuple

from ..errors import Span
from ..units import UNIT_TABLE
from . import ast
from .grammar import Grammar, grammar, split_alternatives
from .lex import (
    LEXED,
    TOK_COMMENT,
    TOK_END,
    TOK_NAME,
    TOK_NUMBER,
    TOK_PUNCT,
    TOK_QUANTITY,
    TOK_STRING,
    Bail,
    Tok,
    lex,
    line_ends,
    line_res,
    name_terminals,
)

__all__ = ["HAND_READ_TERMINALS", "IGNORED", "LEFT_TO_LARK", "RULES_READ", "mismatches"]

_UNIT_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz/"

#: Every rule of grammar/plan.lark, as `_Reader` reads it. A string: the rule as the
#: grammar writes it, which the reader's code follows. A tuple: the alternatives the
#: reader reads by hand; each other alternative is a keyword, or a statement that a
#: keyword starts, and the reader takes those from the grammar (`_syntax`), so they are
#: added there alone. `mismatches` compares this with the grammar.
RULES_READ: dict[str, str | tuple[str, ...]] = {
    "start": "_item*",
    "_item": ('";"',),
    "import_stmt": "IMPORT STRING",
    "cluster": 'CLUSTER name "{" _cluster_item* "}"',
    "_cluster_item": ('";"',),
    "device": "DEVICE devref block",
    "link": "LINK devlist ARROW devlist block?",
    "devlist": 'devref ("," devref)*',
    "devref": 'name | name "[" INT ".." INT "]" -> devrange | name "[" "*" "]" -> devwild',
    "graph": 'GRAPH name "{" _graph_item* "}"',
    "_graph_item": ("chain", '";"'),
    "op": "OP name block?",
    "chain": "name (ARROW name)+ block?",
    "colocate": "COLOCATE oplist",
    "tie": "TIE oplist block?",
    "plan": 'PLAN name "{" _plan_item* "}"',
    "_plan_item": ("setting", '";"'),
    "setting": "_key value",
    "_key": ("NAME",),
    "pin": "PIN oplist TO name",
    "place": "PLACE oplist ON name",
    "oplist": 'name ("," name)*',
    "block": '"{" _attr_item* "}"',
    "_attr_item": 'attr | ";"',
    "attr": "NAME selector? value",
    "selector": '"[" name "]"',
    "value": "QUANTITY | NUMBER | name",
    "name": ("_word", "STRING"),
    # and every keyword, and the terminals lexed as names (`SCHEDULE_1F1B`)
    "_word": ("NAME",),
}
#: Rules the fast path leaves to Lark (it bails wherever one is used), each with the
#: reason; `mismatches` accepts them in place of an entry of `RULES_READ`.
LEFT_TO_LARK: dict[str, str] = {}
#: Terminals read in the reader's own way, as the grammar writes them: an INT is a NUMBER
#: token of digits alone (`devref`'s range); the arrows are compared by their text.
HAND_READ_TERMINALS = {"INT": "/[0-9]+/", "ARROW": '"<->" | "->"'}
#: What the grammar skips between tokens, as the lexer and the line readers skip it
#: (blanks, line breaks and comments).
IGNORED = ("COMMENT", r"/[ \t\r\n\f]+/")


def mismatches(g: Grammar) -> list[str]:
    """Where grammar `g` and the reader (`RULES_READ`, `LEFT_TO_LARK`, the terminals
    the lexer takes) differ, one line each; empty when the reader reads `g`."""
    found = [f"rule `{rule}` is not read: give `_Reader` a reader for it and add it to "
             "RULES_READ (or to LEFT_TO_LARK, with the reason the fast path bails on it)"
             for rule in sorted(g.rules.keys() - RULES_READ.keys() - LEFT_TO_LARK.keys())]
    found += [f"rule `{rule}` is read but the grammar has none: remove it"
              for rule in sorted((RULES_READ.keys() | LEFT_TO_LARK.keys()) - g.rules.keys())]
    found += _rule_mismatches(g)
    found += _terminal_mismatches(g)
    not_names = sorted(set(g.keywords.values()) - set(g.words("_word")))
    if not_names:
        found.append(f"keyword(s) {', '.join(not_names)} not in rule `name`: the reader takes "
                     "every keyword as a name, as the grammar says (add them to `name`)")
    return found


def _rule_mismatches(g: Grammar) -> list[str]:
    """Where a rule of `RULES_READ` and the grammar's differ."""
    found = []
    # what the reader takes from the grammar: keywords, and the statements it has readers
    # for (in whichever block); in `name`, the terminals lexed as names too
    derived = {*g.keywords, *(rule for block in g.rules for rule in g.statements(block).values()
                                if rule in _STATEMENTS)}
    for rule, read in RULES_READ.items():
        if rule not in g.rules:
            continue
        if isinstance(read, str):
            if split_alternatives(read) != g.rules[rule]:
                found.append(f"rule `{rule}` is read as `{read}`, not as the grammar writes "
                             "it: change the reader and RULES_READ to match")
            continue
        lone = g.lone_symbols(rule)
        found += [f"rule `{rule}` has no alternative `{symbol}` any more: change the reader "
                  "and RULES_READ to match" for symbol in read if symbol not in lone]
        taken = {*read, *derived, *(g.patterns if rule == "_word" else ())}
        found += [f"rule `{rule}`'s alternative `{' '.join(alt)}` is not read: give `_Reader` "
                  "a reader for it and add it to RULES_READ"
                  for alt in g.rules[rule] if len(alt) != 1 or alt[0] not in taken]
    return found


def _terminal_mismatches(g: Grammar) -> list[str]:
    """Where the grammar's terminals and what the lexer takes differ."""
    found = [f"terminal {t} is gone: the lexer reads it (`lex.LEXED`)"
             for t in LEXED if t not in g.patterns]
    taken = {*LEXED, *name_terminals(g), *g.keywords}
    for t, written in g.terminals.items():
        if t in taken:
            continue
        if t not in HAND_READ_TERMINALS:
            found.append(f"terminal {t} is not read: add it to `lex.LEXED` (a token kind of "
                         "its own) or HAND_READ_TERMINALS")
        elif split_alternatives(HAND_READ_TERMINALS[t]) != split_alternatives(written):
            found.append(f"terminal {t} is {written}, read as {HAND_READ_TERMINALS[t]}: "
                         "change HAND_READ_TERMINALS and the reader to match")
    if g.ignored != IGNORED:
        found.append(f"the grammar ignores {g.ignored}, the lexer {IGNORED}: change the lexer "
                     "and IGNORED to match")
    return found


#: attribute keys and units, each one string object that every block's attribute shares:
#: the regular expression's groups are new strings, and a 100k-op spec has about 800k of
#: these (45 MB), which lowering then reads and hashes one by one
_SHARED: dict[str, str] = {k: k for k in (*ast.OP_ATTRS, *ast.EDGE_ATTRS, *ast.DEVICE_ATTRS,
                                          *ast.LINK_ATTRS, *UNIT_TABLE)}


@lru_cache(maxsize=1)
def _whole_line_res() -> tuple[re.Pattern[str], ...]:
    """The pieces `_Reader.lines` reads whole lines with: the rest of a line (blanks, a
    comment, the break), an op's head (`op` and its name: the keyword followed by a blank,
    so that it is not the start of a longer NAME), and a chain's first name; and the start
    of a line whose first token can neither continue a chain nor give it a block (a name,
    a string or `}`); and the whole line of a chain of two names without a block."""
    name = line_res()[0].pattern[len(r"[ \t\r\f]*+"):]
    blank, ended = r"[ \t\r\f]*+", r'[ \t\r\f]*+[A-Za-z_"}]'
    atomic = "((?>" + name[1:-1] + "))"  # the lexer's longest NAME, as in `line_res`
    comment = "(" + grammar().patterns["COMMENT"] + ")?"
    syntax = _syntax()
    op_word = syntax.op_word if syntax is not None else None
    op = re.escape(op_word) if op_word is not None else "(?!)"  # (no op: never matches)
    return (re.compile(blank + comment + r"\n"),
            re.compile(blank + op + r"[ \t\r\f]++" + name),
            re.compile(blank + name),
            re.compile(ended),
            # `a -> b` alone on its line, the chain ended by the next line's start: what
            # the pieces above read in six matches, in one
            re.compile(blank + atomic + blank + "->" + blank + atomic + blank + comment
                       + r"\n(?=" + ended + ")"))


def _fast_parse(text: str, file: str) -> ast.Module | None:
    """The tree of `text`, or None when the fast path cannot read it."""
    syntax = _syntax()
    if syntax is None:  # the grammar is not the one the reader reads (`mismatches`)
        return None
    text = line_ends(text)
    raw: list[Tok] = []
    try:
        items = _Reader(lex(text, raw), file, text, raw, syntax).module()
    except (Bail, StopIteration):
        return None
    comments = tuple(
        ast.Comment(v, Span(file, ln, col, ln, col + len(v), s, s + len(v)))
        for _, v, s, ln, col in raw
    )
    return ast.Module(file, items, comments)


# Spans are the bulk of a big tree (three per attribute): a named tuple built with
# `tuple.__new__` skips the generated `__new__`'s argument handling.
_new_tuple = tuple.__new__
_new = object.__new__


def _span(file: str, line: int, col: int, end_line: int, end_col: int, start: int,
          end: int) -> Span:
    """`Span(...)`, built faster (see above)."""
    return _new_tuple(Span, (file, line, col, end_line, end_col, start, end))


def _slots(cls: type) -> tuple[Callable[[object, object], None], ...]:
    """The slot setters of a frozen slotted dataclass of the tree, in field order."""
    return tuple(getattr(cls, f.name).__set__ for f in dataclasses.fields(cls))


# The tree's attributes, values and names built by setting their slots directly, as the
# spans were before they became tuples: a frozen dataclass's `__init__` goes through
# `object.__setattr__` per field, and a 100k-op spec has about 1.3M of these (0.5 us each).
_NAME_TEXT, _NAME_QUOTED, _NAME_SPAN = _slots(ast.Name)
_ATTR_KEY, _ATTR_SEL, _ATTR_VALUE, _ATTR_SPAN = _slots(ast.Attr)
_VALUE_KIND, _VALUE_NUMBER, _VALUE_UNIT, _VALUE_NAME, _VALUE_SPAN = _slots(ast.Value)


def _name(text: str, quoted: bool, span: Span) -> ast.Name:
    """`ast.Name(...)`, built faster (see above)."""
    obj = _new(ast.Name)
    _NAME_TEXT(obj, text)
    _NAME_QUOTED(obj, quoted)
    _NAME_SPAN(obj, span)
    return obj


def _attr(key: str, selector: ast.Name | None, value: ast.Value, span: Span) -> ast.Attr:
    """`ast.Attr(...)`, built faster (see above)."""
    obj = _new(ast.Attr)
    _ATTR_KEY(obj, key)
    _ATTR_SEL(obj, selector)
    _ATTR_VALUE(obj, value)
    _ATTR_SPAN(obj, span)
    return obj


def _value(kind: str, number: str, unit: str, span: Span) -> ast.Value:
    """`ast.Value(kind, number, unit, None, span)` (a number or quantity), built faster."""
    obj = _new(ast.Value)
    _VALUE_KIND(obj, kind)
    _VALUE_NUMBER(obj, number)
    _VALUE_UNIT(obj, unit)
    _VALUE_NAME(obj, None)
    _VALUE_SPAN(obj, span)
    return obj


_OP_NAME, _OP_ATTRS, _OP_SPAN = _slots(ast.OpDecl)
_CHAIN_NAMES, _CHAIN_ATTRS, _CHAIN_SPAN, _CHAIN_BOTH = _slots(ast.ChainDecl)


def _op(name: ast.Name, attrs: tuple[ast.Attr, ...]) -> ast.OpDecl:
    """`ast.OpDecl(name, attrs, name.span)`, built faster (see above)."""
    obj = _new(ast.OpDecl)
    _OP_NAME(obj, name)
    _OP_ATTRS(obj, attrs)
    _OP_SPAN(obj, name.span)
    return obj


def _chain(names: list[ast.Name], attrs: tuple[ast.Attr, ...]) -> ast.ChainDecl:
    """`ast.ChainDecl(...)` of names written with `->`, from the first to the last name,
    built faster (see above)."""
    a, b = names[0].span, names[-1].span
    obj = _new(ast.ChainDecl)
    _CHAIN_NAMES(obj, tuple(names))
    _CHAIN_ATTRS(obj, attrs)
    _CHAIN_SPAN(obj, _span(a.file, a.line, a.column, b.end_line, b.end_column, a.start, b.end))
    _CHAIN_BOTH(obj, None)
    return obj


def _line_name(file: str, ln: int, base: int, m: re.Match[str], group: int) -> ast.Name:
    """The name (a NAME or a string) of `m`'s `group`, on line `ln` (columns are offsets
    less `base`)."""
    v, st = m.group(group), m.start(group)
    end = st + len(v)
    span = _new_tuple(Span, (file, ln, st - base, ln, end - base, st, end))
    return _name(_unquote(v), True, span) if v[0] == '"' else _name(v, False, span)


def _comment(comments: list[Tok], m: re.Match[str], group: int, ln: int, base: int) -> None:
    """A comment `lines` read (`m`'s `group`, on line `ln`), as the lexer records one."""
    cs = m.start(group)
    comments.append((TOK_COMMENT, m.group(group), cs, ln, cs - base))


def _unquote(v: str) -> str:
    return v[1:-1] if "\\" not in v else str(json.loads(v))


def _is(tok: Tok, punct: str) -> bool:
    return tok[0] == TOK_PUNCT and tok[1] == punct


class _Syntax(NamedTuple):
    """What the reader takes from the grammar (`_syntax`)."""

    keywords: frozenset[str]
    #: a block's rule (`start` for the file) -> keyword -> the reader of the statement it
    #: starts (but `op`'s, which `graph` reads inline)
    statements: dict[str, dict[str, Callable[[_Reader, Tok], Any]]]
    op_word: str | None  # the keyword of `op`, if a graph holds ops
    setting_words: frozenset[str]  # the keywords a plan setting's key may be (`_key`)
    joining_words: dict[str, str]  # the second keyword of `pin` and `place` (`to`, `on`)


@lru_cache(maxsize=1)
def _syntax() -> _Syntax | None:
    """The keywords and statements of the grammar, as the reader dispatches on them; None
    when the grammar is not the one the reader reads (`mismatches`)."""
    g = grammar()
    if mismatches(g):
        return None
    statements: dict[str, dict[str, Callable[[_Reader, Tok], Any]]] = {}
    op_word = None
    for block in ("start", "cluster", "graph", "plan"):
        readers = statements[block] = {}
        for word, rule in g.statements(block).items():
            read = _STATEMENTS[rule]
            if read is not None:
                readers[word] = read
            elif block == "graph" and rule == "op":
                op_word = word
    return _Syntax(frozenset(g.keywords.values()), statements, op_word,
                   frozenset(g.words("_key")),
                   {rule: g.rule_words(rule)[1] for rule in ("pin", "place")})


class _Reader:
    """Recursive descent with one token of lookahead (`cur`); `Bail` where unsure."""

    def __init__(self, tokens: Generator[Tok, int | tuple[int, int, int] | None, None],
                 file: str, text: str, comments: list[Tok], syntax: _Syntax) -> None:
        self.next = tokens.__next__
        self.resume = tokens.send
        self.cur = self.next()
        self.file = file
        self.text = text
        self.comments = comments  # the lexer's; `lines` adds the comments it reads
        self.syntax = syntax
        self.keywords = syntax.keywords

    def take(self) -> Tok:
        """Consume and return the lookahead token."""
        tok = self.cur
        self.cur = self.next()
        return tok

    def punct(self, ch: str) -> None:
        """Consume the punctuation `ch`."""
        if not _is(self.cur, ch):
            raise Bail
        self.cur = self.next()

    def span(self, tok: Tok) -> Span:
        """The span of one token (tokens never span lines)."""
        _, v, s, ln, col = tok
        n = len(v)
        return _span(self.file, ln, col, ln, col + n, s, s + n)

    def join(self, a: Span, b: Span) -> Span:
        """From the start of `a` to the end of `b`."""
        return _span(self.file, a.line, a.column, b.end_line, b.end_column, a.start, b.end)

    def name(self, tok: Tok) -> ast.Name:
        """A `name`: NAME, any keyword, or a string."""
        k = tok[0]
        if k == TOK_NAME:
            return _name(tok[1], False, self.span(tok))
        if k == TOK_STRING:
            return _name(_unquote(tok[1]), True, self.span(tok))
        raise Bail

    def statement(self, block: str, tok: Tok) -> Any:
        """The statement that keyword `tok` starts in `block` (the lookahead is the token
        after it), read by the reader of the rule the grammar gives it (`_syntax`)."""
        read = self.syntax.statements[block].get(tok[1]) if tok[0] == TOK_NAME else None
        if read is None:
            raise Bail
        return read(self, tok)

    def module(self) -> tuple[ast.TopLevel, ...]:
        """`start: _item*`."""
        items: list[ast.TopLevel] = []
        while True:
            tok = self.cur
            k = tok[0]
            if k == TOK_END:
                return tuple(items)
            self.cur = self.next()
            if k != TOK_PUNCT or tok[1] != ";":
                items.append(self.statement("start", tok))

    def import_stmt(self, keyword: Tok) -> ast.ImportDecl:
        """`import "path"` (after the keyword)."""
        path = self.take()
        if path[0] != TOK_STRING:
            raise Bail
        return ast.ImportDecl(ast.Name(json.loads(path[1]), True, self.span(path)),
                              self.span(keyword))

    # ---- clusters
    def cluster(self, keyword: Tok) -> ast.ClusterDecl:
        """`cluster NAME { device... link... }` (after the keyword)."""
        name = self.name(self.take())
        self.punct("{")
        items: list[ast.DeviceDecl | ast.LinkDecl] = []
        while True:
            tok = self.take()
            k, v = tok[0], tok[1]
            if k == TOK_PUNCT and v == "}":
                break
            if k != TOK_PUNCT or v != ";":
                items.append(self.statement("cluster", tok))
        devices = tuple(i for i in items if isinstance(i, ast.DeviceDecl))
        links = tuple(i for i in items if isinstance(i, ast.LinkDecl))
        return ast.ClusterDecl(name, devices, links, tuple(items), name.span)

    def device(self, keyword: Tok) -> ast.DeviceDecl:
        """`device REF { attrs }` (after the keyword)."""
        ref = self.devref()
        if not _is(self.cur, "{"):
            raise Bail
        return ast.DeviceDecl(ref, self.block(), ref.span)

    def link(self, keyword: Tok) -> ast.LinkDecl:
        """`link SRCS -> DSTS { attrs }`, or `<->` (after the keyword)."""
        srcs = self.devlist()
        arrow = self.take()
        if arrow[0] != TOK_PUNCT or arrow[1] not in ("->", "<->"):
            raise Bail
        dsts = self.devlist()
        attrs = self.block() if _is(self.cur, "{") else ()
        return ast.LinkDecl(srcs, arrow[1] == "<->", dsts, attrs, self.span(keyword))

    def devref(self) -> ast.DevRef:
        """`name`, `name[lo..hi]` or `name[*]`."""
        tok = self.take()
        prefix = self.name(tok)
        if not _is(self.cur, "["):
            return ast.DevRef("name", prefix, 0, 0, prefix.span)
        self.cur = self.next()
        lo = self.take()
        if _is(lo, "*"):
            close = self.cur
            self.punct("]")
            return ast.DevRef("wild", prefix, 0, 0, self.join(prefix.span, self.span(close)))
        self.punct("..")
        hi = self.take()
        self.punct("]")
        if not (lo[0] == hi[0] == TOK_NUMBER and lo[1].isdigit() and hi[1].isdigit()):
            raise Bail
        return ast.DevRef("range", prefix, int(lo[1]), int(hi[1]),
                          self.join(prefix.span, self.span(hi)), ast.range_width(lo[1], hi[1]))

    def devlist(self) -> tuple[ast.DevRef, ...]:
        """`devref ("," devref)*`."""
        refs = [self.devref()]
        while _is(self.cur, ","):
            self.cur = self.next()
            refs.append(self.devref())
        return tuple(refs)

    # ---- graphs
    # complex: the loop over a graph's items, most of a big spec: chains and ops are read
    # inline, on whole lines where they can be, without a call per item
    def graph(self, keyword: Tok) -> ast.GraphDecl:
        """`graph NAME { op... chain... colocate... tie... }` (after the keyword)."""
        name = self.name(self.take())
        self.punct("{")
        items: list[ast.OpDecl | ast.ChainDecl | ast.ColocateDecl | ast.TieDecl] = []
        append = items.append
        nxt = self.next
        keywords, op_word = self.keywords, self.syntax.op_word
        while True:
            tok = self.cur
            cur = nxt()
            k, v = tok[0], tok[1]
            if k == TOK_STRING or (k == TOK_NAME and v not in keywords):  # a chain
                names = [self.name(tok)]
                if cur[0] == TOK_PUNCT and cur[1] == "->":
                    ln, base = tok[3], tok[2] - tok[4]
                    end = self.line_names(tok[2] + len(v), ln, base, names)
                    if end is not None:
                        block = self.line_block(end, ln, base)
                        if block is not None:
                            append(_chain(names, block[0]))
                            self.lines(block[1], ln, base, append)
                            continue
                        cur = self.resume(end)
                while cur[0] == TOK_PUNCT and cur[1] == "->":  # `<->` is Lark's to report
                    names.append(self.name(nxt()))
                    cur = nxt()
                if len(names) < 2:
                    raise Bail
                self.cur = cur
                append(_chain(names, self.block() if cur[0] == TOK_PUNCT and cur[1] == "{"
                              else ()))
            elif k == TOK_NAME and v == op_word:  # read here: most of a big spec
                n = self.name(cur)
                ln, base = cur[3], cur[2] - cur[4]
                block = self.line_block(cur[2] + len(cur[1]), ln, base)
                if block is not None:
                    append(_op(n, block[0]))
                    self.lines(block[1], ln, base, append)
                    continue
                self.cur = cur = nxt()
                append(_op(n, self.block() if cur[0] == TOK_PUNCT and cur[1] == "{" else ()))
            elif k == TOK_PUNCT and v == "}":
                self.cur = cur
                break
            elif k == TOK_PUNCT and v == ";":
                self.cur = cur
            else:
                self.cur = cur
                append(self.statement("graph", tok))
        return ast.GraphDecl(name, tuple(items), name.span)

    def colocate(self, keyword: Tok) -> ast.ColocateDecl:
        """`colocate OPS` (after the keyword)."""
        return ast.ColocateDecl(self.oplist(), self.span(keyword))

    def tie(self, keyword: Tok) -> ast.TieDecl:
        """`tie OPS { attrs }` (after the keyword; the block is optional)."""
        ops = self.oplist()
        attrs = self.block() if _is(self.cur, "{") else ()
        return ast.TieDecl(ops, attrs, self.span(keyword))

    # ---- one-line forms, read without the lexer (a 100k-op graph is 2M tokens)
    def line_names(self, pos: int, ln: int, base: int, names: list[ast.Name]) -> int | None:
        """The names that follow `-> ` from offset `pos` on line `ln` (columns are offsets
        less `base`) go to `names`; the offset after the last, or None when none follows."""
        arrow = line_res()[1]
        text, file = self.text, self.file
        found = len(names)
        while (m := arrow.match(text, pos)) is not None:
            v, st = m.group(1), m.start(1)
            n = len(v)
            span = _span(file, ln, st - base, ln, st - base + n, st, st + n)
            names.append(_name(_unquote(v), True, span) if v[0] == '"'
                         else _name(v, False, span))
            pos = m.end()
        return None if len(names) == found else pos

    def lines(self, pos: int, ln: int, base: int,
              append: Callable[[ast.OpDecl | ast.ChainDecl], None]) -> None:
        """Whole lines, from offset `pos` just after a statement on line `ln` (columns are
        offsets less `base`): each op with its block and each chain (with or without a
        block) that one line holds, and the blank and comment lines between; the lexer
        resumes where a line holds anything else, at its start (the new lookahead).

        A chain without a block is taken only when the next line starts with a name, a
        string or `}`: anything else (an `->`, a `{`, a blank or comment line) could still
        continue it, and the lexer decides. What is not taken is left whole to the lexer,
        which keeps the tree exactly the token path's (a 100k-op graph: 300k lines, each
        otherwise three tokens through the lexer).
        """
        line_end, op_head, chain_head, ended, pair = _whole_line_res()
        text, file, comments, keywords = self.text, self.file, self.comments, self.keywords
        # the match that ends the line (None: more on it) and its comment's group
        eol, note = line_end.match(text, pos), 1
        while eol is not None:
            if eol.group(note) is not None:
                _comment(comments, eol, note, ln, base)
            pos = eol.end()
            ln += 1
            base = pos - 1
            m = op_head.match(text, pos)
            if m is not None:
                block = self.line_block(m.end(), ln, base)
                if block is None:
                    break
                append(_op(_line_name(file, ln, base, m, 1), block[0]))
                pos = block[1]
                eol, note = line_end.match(text, pos), 1
                continue
            m = pair.match(text, pos)
            if m is not None and m.group(1) not in keywords:
                append(_chain([_line_name(file, ln, base, m, 1),
                               _line_name(file, ln, base, m, 2)], ()))
                eol, note = m, 3  # the pair's match takes its line's end
                continue
            m = chain_head.match(text, pos)
            if m is None:  # a blank or comment line, or the lexer's
                eol, note = line_end.match(text, pos), 1
                continue
            if m.group(1) in keywords:
                break
            names = [_line_name(file, ln, base, m, 1)]
            end = self.line_names(m.end(), ln, base, names)
            if end is None:
                break
            block = self.line_block(end, ln, base)
            if block is not None:
                append(_chain(names, block[0]))
                pos = block[1]
                eol, note = line_end.match(text, pos), 1
                continue
            eol, note = line_end.match(text, end), 1
            if eol is None or ended.match(text, eol.end()) is None:
                break
            append(_chain(names, ()))
        self.cur = self.resume((pos, ln, base + 1))

    def line_block(self, pos: int, ln: int, base: int
                   ) -> tuple[tuple[ast.Attr, ...], int] | None:
        """`{ key[sel] value ... }` from offset `pos` to the end of its `}`, on line `ln`
        (columns are offsets less `base`), when every value is a number or a quantity:
        (the attributes, the offset after the `}`), built as `block` builds them; else None
        (nothing consumed)."""
        _, _, opening, attr, closing = line_res()
        text = self.text
        m = opening.match(text, pos)
        if m is None:
            return None
        pos = m.end()
        # built inline (`_span`, `_attr`, `_value`, `_name`): a call costs as much as the
        # object, and a 100k-op spec has about 600k attributes
        file, new, new_tuple, span_t = self.file, _new, _new_tuple, Span
        attr_t, value_t, shared, keywords = ast.Attr, ast.Value, _SHARED, self.keywords
        attrs: list[ast.Attr] = []
        while (m := attr.match(text, pos)) is not None:
            key, sv, head, unit, number = m.groups()
            if key in keywords:
                return None
            key = shared.get(key, key)
            st = m.start(1)
            pos = m.end()  # the value ends the match
            sel = None
            if sv is not None:
                ss = m.start(2)
                se = ss + len(sv)
                sel = _name(_unquote(sv), True, new_tuple(
                    span_t, (file, ln, ss - base, ln, se - base, ss, se))) if sv[0] == '"' \
                    else _name(sv, False, new_tuple(
                        span_t, (file, ln, ss - base, ln, se - base, ss, se)))
            value = new(value_t)
            if head is not None:
                vs = m.start(3)
                _VALUE_KIND(value, "quantity")
                _VALUE_NUMBER(value, head)
                _VALUE_UNIT(value, shared.get(unit, unit))
            else:
                vs = m.start(5)
                _VALUE_KIND(value, "number")
                _VALUE_NUMBER(value, number)
                _VALUE_UNIT(value, "")
            _VALUE_NAME(value, None)
            _VALUE_SPAN(value, new_tuple(span_t, (file, ln, vs - base, ln, pos - base, vs, pos)))
            a = new(attr_t)
            _ATTR_KEY(a, key)
            _ATTR_SEL(a, sel)
            _ATTR_VALUE(a, value)
            ke = st + len(key)
            _ATTR_SPAN(a, new_tuple(span_t, (file, ln, st - base, ln, ke - base, st, ke)))
            attrs.append(a)
        m = closing.match(text, pos)
        return None if m is None else (tuple(attrs), m.end())

    # ---- plans
    def plan(self, keyword: Tok) -> ast.PlanDecl:
        """`plan NAME { settings, pins, places }` (after the keyword)."""
        name = self.name(self.take())
        self.punct("{")
        items: list[ast.Attr | ast.PinDecl] = []
        statements, keywords = self.syntax.statements["plan"], self.keywords
        setting_words = self.syntax.setting_words
        while True:
            tok = self.take()
            k, v = tok[0], tok[1]
            if k == TOK_PUNCT and v == "}":
                break
            if k == TOK_PUNCT and v == ";":
                continue
            if k != TOK_NAME:
                raise Bail
            if v in statements:
                items.append(statements[v](self, tok))
            elif (v not in keywords or v in setting_words) and not v[0].isdigit():
                # `setting: _key value` (a key is a NAME or a keyword, not `1f1b`)
                items.append(ast.Attr(v, None, self.value(self.take()), self.span(tok)))
            else:
                raise Bail
        return ast.PlanDecl(name, tuple(items), name.span)

    def pin(self, keyword: Tok) -> ast.PinDecl:
        """`pin OPS to DEVICE` (after the keyword)."""
        return self.pinned(keyword, "pin")

    def place(self, keyword: Tok) -> ast.PinDecl:
        """`place OPS on DEVICE` (after the keyword)."""
        return self.pinned(keyword, "place")

    def pinned(self, keyword: Tok, rule: str) -> ast.PinDecl:
        """`pin` or `place` (`rule`), after its keyword."""
        ops = self.oplist()
        word = self.take()
        if word[0] != TOK_NAME or word[1] != self.syntax.joining_words[rule]:
            raise Bail
        device = self.name(self.take())
        return ast.PinDecl(ops, device, rule == "pin", self.span(keyword))

    def oplist(self) -> tuple[ast.Name, ...]:
        """`name ("," name)*`."""
        ops = [self.name(self.take())]
        while _is(self.cur, ","):
            self.cur = self.next()
            ops.append(self.name(self.take()))
        return tuple(ops)

    # ---- shared
    def block(self) -> tuple[ast.Attr, ...]:
        """`{ attr... }` (at the `{`)."""
        nxt = self.next
        file, keywords = self.file, self.keywords
        attrs: list[ast.Attr] = []
        while True:
            tok = nxt()
            k = tok[0]
            if k == TOK_NAME:
                key = tok[1]
                if key in keywords or key[0].isdigit():  # a key is a NAME (not `1f1b`)
                    raise Bail
                val = nxt()
                sel = None
                if val[0] == TOK_PUNCT and val[1] == "[":
                    sel = self.name(nxt())
                    if not _is(nxt(), "]"):
                        raise Bail
                    val = nxt()
                _, _, s, ln, col = tok
                n = len(key)
                attrs.append(_attr(key, sel, self.value(val),
                                      _span(file, ln, col, ln, col + n, s, s + n)))
            elif k == TOK_PUNCT and tok[1] == "}":
                break
            elif k == TOK_PUNCT and tok[1] == ";":
                continue
            else:
                raise Bail
        self.cur = nxt()
        return tuple(attrs)

    def value(self, tok: Tok) -> ast.Value:
        """`QUANTITY | NUMBER | name`."""
        k, v, s, ln, col = tok
        if k == TOK_QUANTITY:
            # The unit is the trailing run of letters and `/` (a number ends in a digit
            # or `_`), as `_QUANTITY_SPLIT` finds it, but without a regex.
            head = v.rstrip(_UNIT_CHARS)
            n = len(v)
            return _value("quantity", head.rstrip(" \t"), v[len(head):],
                          _span(self.file, ln, col, ln, col + n, s, s + n))
        if k == TOK_NUMBER:
            return _value("number", v, "", self.span(tok))
        n2 = self.name(tok)
        return ast.Value("name", "", "", n2, n2.span)


#: The reader of each statement a block may hold (`_syntax` gives each its keyword from
#: the grammar), by the statement's rule; None: read inline by its block (`graph` reads
#: `op`, most of a big spec, without a call).
_STATEMENTS: dict[str, Callable[[_Reader, Tok], Any] | None] = {
    "import_stmt": _Reader.import_stmt, "cluster": _Reader.cluster, "graph": _Reader.graph,
    "plan": _Reader.plan, "device": _Reader.device, "link": _Reader.link, "op": None,
    "colocate": _Reader.colocate, "tie": _Reader.tie, "pin": _Reader.pin, "place": _Reader.place,
}
