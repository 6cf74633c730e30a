"""Text -> syntax tree, with spans taken from tokens and every error as a Diagnostic.

The Lark LALR parser is built once per process and builds the tree inline (Lark's
`transformer=` option): no intermediate parse tree, no `propagate_positions`, which is
about 3x cheaper on big specs. `lark-cython` is used when installed (the `fast` extra).
The parse step raises only `SpecError`, never a domain error from inside a callback.
"""

from __future__ import annotations

import json
import re
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from lark import Lark, Transformer
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..errors import Diagnostic, SpecError, Span
from ..units import UNIT_TABLE
from . import ast

KEYWORDS = frozenset(
    "import cluster device link graph op colocate plan pin place to on".split()
)
_STATEMENT_KEYWORDS = {"IMPORT", "CLUSTER", "DEVICE", "LINK", "GRAPH", "OP", "COLOCATE",
                       "PLAN", "PIN", "PLACE"}


def grammar_text() -> str:
    """The grammar, from the installed wheel (`planner/_data`) or the source checkout."""
    try:
        packaged = resources.files("planner").joinpath("_data/plan.lark")
        if packaged.is_file():
            return packaged.read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):  # pragma: no cover - odd installs
        pass
    return (Path(__file__).resolve().parents[2] / "grammar" / "plan.lark").read_text("utf-8")


class _Builder(Transformer):  # type: ignore[type-arg]
    """Inline tree builder: one callback per grammar rule, spans from tokens."""

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
        self.file = "<string>"
        self.comments: list[Any] = []

    def _span(self, tok: Any) -> Span:
        return Span(self.file, tok.line, tok.column, tok.end_line, tok.end_column,
                    tok.start_pos, tok.end_pos)

    def _join(self, a: Span, b: Span) -> Span:
        return Span(self.file, a.line, a.column, b.end_line, b.end_column, a.start, b.end)

    # ---- shared
    def name(self, c: list[Any]) -> ast.Name:
        tok = c[0]
        if tok.type == "STRING":
            return ast.Name(json.loads(tok.value), True, self._span(tok))
        return ast.Name(str(tok.value), False, self._span(tok))

    def value(self, c: list[Any]) -> ast.Value:
        item = c[0]
        if isinstance(item, ast.Name):
            return ast.Value("name", "", "", item, item.span)
        text = str(item.value)
        if item.type == "QUANTITY":
            m = _QUANTITY_SPLIT.match(text)
            assert m is not None
            return ast.Value("quantity", m.group(1), m.group(2), None, self._span(item))
        return ast.Value("number", text, "", None, self._span(item))

    def selector(self, c: list[Any]) -> ast.Name:
        return c[0]  # type: ignore[no-any-return]

    def attr(self, c: list[Any]) -> ast.Attr:
        key = c[0]
        sel = c[1] if len(c) == 3 else None
        return ast.Attr(str(key.value), sel, c[-1], self._span(key))

    def block(self, c: list[Any]) -> tuple[ast.Attr, ...]:
        return tuple(c)

    def oplist(self, c: list[Any]) -> tuple[ast.Name, ...]:
        return tuple(c)

    # ---- clusters
    def devref(self, c: list[Any]) -> ast.DevRef:
        n: ast.Name = c[0]
        return ast.DevRef("name", n, 0, 0, n.span)

    def devrange(self, c: list[Any]) -> ast.DevRef:
        prefix, lo, hi = c
        n = ast.Name(str(prefix.value), False, self._span(prefix))
        return ast.DevRef("range", n, int(lo.value), int(hi.value),
                          self._join(n.span, self._span(hi)))

    def devwild(self, c: list[Any]) -> ast.DevRef:
        n = ast.Name(str(c[0].value), False, self._span(c[0]))
        return ast.DevRef("wild", n, 0, 0, n.span)

    def devlist(self, c: list[Any]) -> tuple[ast.DevRef, ...]:
        return tuple(c)

    def device(self, c: list[Any]) -> ast.DeviceDecl:
        return ast.DeviceDecl(c[1], c[2], c[1].span)

    def link(self, c: list[Any]) -> ast.LinkDecl:
        attrs = c[4] if len(c) == 5 else ()
        return ast.LinkDecl(c[1], c[2].value == "<->", c[3], attrs, self._span(c[0]))

    def cluster(self, c: list[Any]) -> ast.ClusterDecl:
        items = tuple(c[2:])
        devices = tuple(i for i in items if isinstance(i, ast.DeviceDecl))
        links = tuple(i for i in items if isinstance(i, ast.LinkDecl))
        return ast.ClusterDecl(c[1], devices, links, items, c[1].span)

    # ---- graphs
    def op(self, c: list[Any]) -> ast.OpDecl:
        attrs = c[2] if len(c) == 3 else ()
        return ast.OpDecl(c[1], attrs, c[1].span)

    def chain(self, c: list[Any]) -> ast.ChainDecl:
        names = tuple(x for x in c if isinstance(x, ast.Name))
        attrs = c[-1] if isinstance(c[-1], tuple) else ()
        return ast.ChainDecl(names, attrs, self._join(names[0].span, names[-1].span))

    def colocate(self, c: list[Any]) -> ast.ColocateDecl:
        return ast.ColocateDecl(c[1], self._span(c[0]))

    def graph(self, c: list[Any]) -> ast.GraphDecl:
        return ast.GraphDecl(c[1], tuple(c[2:]), c[1].span)

    # ---- plans
    def setting(self, c: list[Any]) -> ast.Attr:
        return ast.Attr(str(c[0].value), None, c[1], self._span(c[0]))

    def pin(self, c: list[Any]) -> ast.PinDecl:
        return ast.PinDecl(c[1], c[3], True, self._span(c[0]))

    def place(self, c: list[Any]) -> ast.PinDecl:
        return ast.PinDecl(c[1], c[3], False, self._span(c[0]))

    def plan(self, c: list[Any]) -> ast.PlanDecl:
        return ast.PlanDecl(c[1], tuple(c[2:]), c[1].span)

    def import_stmt(self, c: list[Any]) -> ast.ImportDecl:
        tok = c[1]
        path = ast.Name(json.loads(tok.value), True, self._span(tok))
        return ast.ImportDecl(path, self._span(c[0]))

    def start(self, c: list[Any]) -> tuple[ast.TopLevel, ...]:
        return tuple(c)


_GLUED = re.compile(r"[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?[ \t]*([A-Za-z/]+)")
_QUANTITY_SPLIT = re.compile(r"([0-9][0-9_.eE+\-]*?)[ \t]*([A-Za-z/]+)$")


class _Parser:
    """A Lark parser with its builder; `parse` is serialised by a lock (builder state)."""

    def __init__(self) -> None:
        self.builder = _Builder()
        kwargs: dict[str, Any] = {}
        try:  # the `fast` extra: a Cython lexer/parser, same trees, ~2x faster
            import lark_cython  # type: ignore[import-not-found]

            kwargs["_plugins"] = lark_cython.plugins
        except ImportError:
            pass
        self.lark = Lark(
            grammar_text(),
            parser="lalr",
            lexer="contextual",
            transformer=self.builder,
            lexer_callbacks={"COMMENT": self.builder.comments.append},
            maybe_placeholders=False,
            **kwargs,
        )
        self.lock = threading.Lock()


@lru_cache(maxsize=1)
def _parser() -> _Parser:
    return _Parser()


def parse(text: str, file: str = "<string>") -> ast.Module:
    """Parse `text` (the contents of `file`) into a syntax tree.

    Raises `SpecError` with one diagnostic (the first syntax error) on bad input.
    """
    p = _parser()
    with p.lock:
        p.builder.file = file
        p.builder.comments.clear()
        try:
            items = p.lark.parse(text)
        except UnexpectedInput as err:
            raise SpecError(_syntax_diagnostic(err, text, file)) from None
        except (LarkError, RecursionError) as err:  # pragma: no cover - defensive
            raise SpecError(
                Diagnostic("E100", f"cannot parse: {err}", Span.start_of(file))
            ) from None
        comments = tuple(
            ast.Comment(str(t.value), Span(file, t.line, t.column, t.end_line,
                                           t.end_column, t.start_pos, t.end_pos))
            for t in p.builder.comments
        )
    return ast.Module(file, items, comments)


# ---- syntax errors -> diagnostics ------------------------------------------------------

_TOKEN_WORDS = {
    "RBRACE": "`}`", "LBRACE": "`{`", "LSQB": "`[`", "RSQB": "`]`", "COMMA": "`,`",
    "SEMICOLON": "`;`", "ARROW": "`->` or `<->`", "NAME": "a name", "STRING": "a quoted name",
    "QUANTITY": "a quantity such as `16 GiB`", "NUMBER": "a number", "INT": "an integer",
    "STAR": "`*`", "__ANON_0": "`..`", "$END": "end of file",
}


def _describe(tok_type: str) -> str:
    if tok_type in _TOKEN_WORDS:
        return _TOKEN_WORDS[tok_type]
    if tok_type.isupper() and tok_type.lower() in KEYWORDS:
        return f"`{tok_type.lower()}`"
    return tok_type


def _syntax_diagnostic(err: UnexpectedInput, text: str, file: str) -> Diagnostic:
    line = max(1, getattr(err, "line", 1) or 1)
    col = max(1, getattr(err, "column", 1) or 1)
    pos = getattr(err, "pos_in_stream", None)
    if pos is None:
        pos = _offset(text, line, col)
    if isinstance(err, UnexpectedCharacters):
        return _unexpected_char(err, text, file, line, col, pos)
    assert isinstance(err, UnexpectedToken)
    tok = err.token
    expected = set(err.expected or ())
    if tok.type == "$END":
        line, col, pos = _end_position(text)
        opener = _open_block(text, len(text))
        hints = (f"missing `}}` to close `{opener}`",) if opener else ()
        span = Span(file, line, col, line, col + 1, pos, pos)
        return Diagnostic("E102", "unexpected end of file", span, hints)
    span = Span(file, tok.line, tok.column, tok.end_line or tok.line,
                tok.end_column or tok.column + 1, tok.start_pos or pos,
                tok.end_pos or pos)
    shown = str(tok.value)[:40]
    tok_pos = tok.start_pos if tok.start_pos is not None else pos
    m = _GLUED.match(text, tok_pos)
    if m and m.group(1) not in UNIT_TABLE:  # `16GiBs`: a number glued to an unknown unit
        return _unknown_unit(file, text, m.start(1), m.end(1))
    glued = _unit_before(text, tok_pos)
    if glued is not None and expected & {"QUANTITY", "NUMBER"}:
        return _unknown_unit(file, text, *glued)
    hints: list[str] = []
    if tok.type == "LBRACE":  # `op b {` inside an unclosed block reads as `key value {`
        m = re.search(r"(\w+)\s+(?:\"(?:[^\"\\]|\\.)*\"|\S+)\s*$", text[max(0, tok_pos - 300) : tok_pos])
        if m and m.group(1) in KEYWORDS:
            opener = _open_block(text, tok_pos - (len(text[max(0, tok_pos - 300):tok_pos]) - m.start()))
            if opener:
                hints.append(f"missing `}}` to close `{opener}`")
    if tok.type == "RBRACE" and "RBRACE" not in expected and not (
        expected & {"QUANTITY", "NUMBER"}
    ):
        return Diagnostic("E107", "unmatched `}`", span, ("remove it, or open a block before it",))
    if tok.type in _STATEMENT_KEYWORDS:
        opener = _open_block(text, tok.start_pos or pos)
        if opener and "RBRACE" in expected:
            hints.append(f"missing `}}` to close `{opener}`")
    if expected & {"QUANTITY", "NUMBER"} and "RBRACE" not in expected:
        hints.append("expected a value, such as `16 GiB`, `1.5 ms` or a name")
    elif tok.type in {"QUANTITY", "NUMBER"} and "NAME" in expected:
        hints.append("a value must follow a key, as in `memory 16 GiB`")
    if not hints:
        words = sorted({_describe(t) for t in expected if not t.startswith("__ANON")} - {""})
        if words:
            hints.append("expected " + _or_list(words[:8]))
    return Diagnostic("E101", f"unexpected `{shown}`", span, tuple(hints))


def _unit_before(text: str, pos: int) -> tuple[int, int] | None:
    """(start, end) of a word right after a number and right before `pos`: a unit typo."""
    window = text[max(0, pos - 80) : pos]
    m = re.search(r"[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?[ \t]+([A-Za-z/]+)\s*$", window)
    if m is None or m.group(1) in UNIT_TABLE:
        return None
    base = pos - len(window)
    return base + m.start(1), base + m.end(1)


def _unknown_unit(file: str, text: str, start: int, end: int) -> Diagnostic:
    import difflib

    unit = text[start:end]
    close = difflib.get_close_matches(unit, list(UNIT_TABLE), n=1, cutoff=0.5)
    hints = [f"did you mean `{close[0]}`?"] if close else []
    hints.append("units: ns us ms s | B KB MB GB TB KiB MiB GiB TiB | GB/s GiB/s Gbps … "
                 "| FLOP GFLOP … | FLOPS TFLOPS …")
    line = text.count("\n", 0, start) + 1
    col = start - (text.rfind("\n", 0, start) + 1) + 1
    return Diagnostic("E103", f"unknown unit `{unit}`",
                      Span(file, line, col, line, col + len(unit), start, end), tuple(hints))


def _unexpected_char(
    err: UnexpectedCharacters, text: str, file: str, line: int, col: int, pos: int
) -> Diagnostic:
    # A number glued to an unknown unit (`16 GiBs`, `3 hours`) is the usual cause.
    m = _GLUED.match(text, pos)
    if m and m.group(1) not in UNIT_TABLE:
        return _unknown_unit(file, text, m.start(1), m.end(1))
    ch = text[pos] if 0 <= pos < len(text) else ""
    span = Span(file, line, col, line, col + 1, pos, pos + 1)
    if ch == '"':
        return Diagnostic("E104", "unterminated or invalid string", span,
                          ("strings use double quotes and JSON escapes, on one line",))
    if ch == "-" or ch == "+":
        return Diagnostic("E105", f"unexpected `{ch}`", span,
                          ("quantities cannot be negative; an edge is written `a -> b`",))
    shown = repr(ch)[1:-1] if ch and (not ch.isprintable() or ch.isspace()) else ch
    return Diagnostic("E106", f"unexpected character `{shown}`", span,
                      ("names are letters, digits, `_`, `.` and `-`, or a quoted string",))


def _or_list(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _offset(text: str, line: int, col: int) -> int:
    off = 0
    for _ in range(line - 1):
        nxt = text.find("\n", off)
        if nxt < 0:
            return len(text)
        off = nxt + 1
    return min(len(text), off + col - 1)


def _end_position(text: str) -> tuple[int, int, int]:
    """Line, column and offset of the last non-blank character (or 1:1)."""
    stripped = text.rstrip()
    if not stripped:
        return 1, 1, 0
    pos = len(stripped) - 1
    line = stripped.count("\n") + 1
    col = pos - (stripped.rfind("\n") + 1) + 1
    return line, col, pos


_SCAN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|[{}]')


def _open_block(text: str, upto: int) -> str | None:
    """The header (`op conv1`) of the innermost block still open at offset `upto`."""
    stack: list[int] = []
    for m in _SCAN.finditer(text, 0, upto):
        tok = m.group(0)
        if tok == "{":
            stack.append(m.start())
        elif tok == "}" and stack:
            stack.pop()
    if not stack:
        return None
    start = stack[-1]
    head = text[max(0, start - 200) : start]
    head = head.split("\n")[-1] if head.strip().split("\n")[-1].strip() else head.strip()
    words = re.findall(r'"(?:[^"\\]|\\.)*"|[^\s{};]+', head)
    return " ".join(words[-2:]) if words else "block"
