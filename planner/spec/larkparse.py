"""Lark's side of `parse`: the LALR parser, built once per process, and the tree builder
it calls back (Lark's `transformer=` option: no intermediate parse tree, no
`propagate_positions`, about 3x cheaper on big specs). Imported only when the fast path
(`fastparse`) hands a text on, so that a command on an ordinary spec never loads Lark.
"""

from __future__ import annotations

import json
import os
import re
import threading
from functools import lru_cache
from typing import Any, cast

from lark import Lark, Transformer
from lark.exceptions import LarkError, UnexpectedInput

from ..errors import Diagnostic, Span, SpecError
from . import ast
from .grammar import grammar_text
from .lex import line_ends
from .syntax import HEADER, not_a_spec, syntax_diagnostic


class _Builder(Transformer):  # type: ignore[type-arg]
    """Inline tree builder: one callback per grammar rule, spans from tokens."""

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
        self.file = "<string>"
        self.text = ""  # what is parsed: `devwild` finds its `]` there
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
        n, lo, hi = c
        return ast.DevRef("range", n, int(lo.value), int(hi.value),
                          self._join(n.span, self._span(hi)),
                          ast.range_width(lo.value, hi.value))

    def devwild(self, c: list[Any]) -> ast.DevRef:
        """`gpu[*]`, its span up to the `]` (Lark hands over the name alone)."""
        n: ast.Name = c[0]
        tail = _WILD_TAIL.match(self.text, n.span.end)
        assert tail is not None  # the grammar read these tokens there
        text = tail.group(0)
        lines = text.count("\n")
        end_col = (n.span.end_column + len(text) if not lines
                   else len(text) - text.rfind("\n"))
        return ast.DevRef("wild", n, 0, 0, Span(
            self.file, n.span.line, n.span.column, n.span.end_line + lines, end_col,
            n.span.start, tail.end()))

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
        both = next((self._span(t) for t in c if getattr(t, "value", None) == "<->"), None)
        return ast.ChainDecl(names, attrs, self._join(names[0].span, names[-1].span), both)

    def colocate(self, c: list[Any]) -> ast.ColocateDecl:
        return ast.ColocateDecl(c[1], self._span(c[0]))

    def tie(self, c: list[Any]) -> ast.TieDecl:
        attrs = c[2] if len(c) == 3 else ()
        return ast.TieDecl(c[1], attrs, self._span(c[0]))

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


#: `[*]` after a name, blanks and comments between: a wildcard reference up to its `]`
_GAPS = r"(?:[ \t\r\n\f]|#[^\n]*)*"
_WILD_TAIL = re.compile(rf"{_GAPS}\[{_GAPS}\*{_GAPS}\]")
_QUANTITY_SPLIT = re.compile(r"([0-9][0-9_.eE+\-]*?)[ \t]*([A-Za-z/]+)$")


class _Parser:
    """A Lark parser with its builder; `parse` is serialised by a lock (builder state)."""

    def __init__(self) -> None:
        self.builder = _Builder()
        kwargs: dict[str, Any] = {}
        try:  # the `fast` extra: a Cython lexer/parser, same trees, faster
            if os.environ.get("PLANNER_NO_CYTHON", "") not in ("", "0"):
                raise ImportError("disabled by PLANNER_NO_CYTHON")
            # lazy: optional (the `fast` extra)
            import lark_cython

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


def parse_lark(text: str, file: str = "<string>") -> ast.Module:
    """`parse` with Lark only (no fast path); the reference the fast path must match."""
    text = line_ends(text)
    p = _parser()
    with p.lock:
        p.builder.file = file
        p.builder.text = text
        p.builder.comments.clear()
        try:
            # the builder's `start` makes the tree a tuple of top-level items
            items = cast("tuple[ast.TopLevel, ...]", p.lark.parse(text))
        except UnexpectedInput as err:
            diag = syntax_diagnostic(err, text, file)
            head = HEADER.match(text)
            # the end of the file (E102) comes after a header it holds, though its caret
            # points at the last token, which may be the header's `{`
            if head is None or (diag.code != "E102" and diag.span is not None
                                and diag.span.start < head.end()):
                diag = not_a_spec(text, file)
            raise SpecError(diag) from None
        except (LarkError, RecursionError) as err:  # pragma: no cover - defensive
            raise SpecError(
                Diagnostic("E100", f"cannot parse: {err}", Span.start_of(file))
            ) from None
        # Lark calls back on ignored tokens before setting their end, so derive it
        # (a comment never spans lines).
        comments = tuple(
            ast.Comment(str(t.value), Span(file, t.line, t.column, t.line,
                                           t.column + len(t.value), t.start_pos,
                                           t.start_pos + len(t.value)))
            for t in p.builder.comments
        )
    return ast.Module(file, items, comments)


# ---- syntax errors -> diagnostics ------------------------------------------------------
