"""The canonical layout of `.plan` files (the engine of `planner fmt`).

`format_source(text)` parses `text` (a `SpecError` propagates unchanged) and prints the
syntax tree back in one canonical layout, keeping every comment. The result parses to the
same model, and formatting it again changes nothing. The layout rules:

- Indentation is two spaces per block level. Top-level items (`import`, `cluster`, `graph`,
  `plan`) are separated by exactly one blank line, except that consecutive imports keep
  the blank lines between them (collapsed to at most one), so an import list stays
  together. Inside blocks, blank lines are kept but collapsed to one, and there is none
  right after `{` or before `}`. The file ends with exactly one newline; an empty file
  (or one with only whitespace and `;`) formats to the empty string.
- The bodies of `cluster`, `graph` and `plan` are always printed one statement per line
  (`{}` when empty). `;` separators are dropped (E109 where that would change how the
  statements read: `fmtcheck`).
- An attribute block (`op`, `device`, `link`, edge) written on one line stays on one line,
  with two spaces between attributes (`{ kind cpu  memory 256 GiB  speed 0.05 }`), unless
  the line would exceed 100 columns; then it is printed in the multi-line form. A block
  written over several lines is printed one attribute per line, keys (with their
  `[selector]`) padded to the longest key of that block plus one space
  (`kind   v100` / `memory 16 GiB`). An empty block prints as `{}`.
- In a run of consecutive one-line `link` statements (not interrupted by a blank line or a
  comment line), the `{` of their blocks is aligned one column after the longest header.
  Ops, edges and devices are not aligned.
- In a plan, settings (`graph`, `cluster`, `memory`, `contention`, ...) have their keys
  padded to the longest setting key plus one; `pin` / `place` are padded to the longest of
  those present plus one (`pin   input to cpu0` next to `place conv1 on gpu0`).
- A comment on its own line goes before the next statement at that statement's
  indentation (before `}` at the block's inner indentation when nothing follows); at the
  top level, the blank line that separates two items goes before the comments that lead
  the second, and comments after the last item keep their blank line (at most one). A
  comment after code stays at the end of the line of the statement or attribute it
  follows; it keeps its column when that leaves at least two spaces after the code,
  otherwise it goes two spaces after the code. A comment inside a statement that is
  printed on one line (`pin a,  # x` newline `b to c`) moves onto its own line before that
  statement. Comment text is kept exactly (trailing whitespace removed).
- Names are printed bare when they match `[A-Za-z_][A-Za-z0-9_.-]*`, else as JSON strings
  (printable non-ASCII kept as is; an invisible, bidi or other non-printable character
  escaped, `\\u202e`); quantities as `number unit` with one space and the number's
  original text (`1_000`, `2e-3`); lists with `, `; chains as `a -> b -> c`; ranges as
  `gpu[0..7]`; imports as `import "path"`. A chain keeps each arrow as written: the grammar
  also reads `<->` between ops, which `check` rejects (E233), so `fmt` must not turn it
  into a valid `->`.
- Line lengths are measured without trailing comments, and alignment padding may take a
  one-line link past 100 columns (its own width decides whether it stays on one line).

Formatting needs no global pass over the text beyond the parse: positions come from the
tree's spans, and the few places the tree does not record (where a block's `{` and `}` are)
are found by skipping whitespace and comments from a known span.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise
from json.encoder import encode_basestring

from . import ast
from .fmtcheck import check_same_reading
from .grammar import grammar
from .lex import line_ends
from .parse import parse, paused_gc

#: the widest a line may be before a one-line block is broken up
MAX_WIDTH = 100
INDENT = "  "

_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")
# Between a statement's last recorded span and its `{` or the enclosing `}` there can only
# be whitespace, `;`, comments and the tail of a device reference (`]`, `[*]`).
_SKIP = re.compile(r"(?:[ \t\r\n\f;\[\]*]+|#[^\n]*)*")
_BLANK = re.compile(r"\n[ \t\r\f;]*\n")

Item = (ast.TopLevel | ast.DeviceDecl | ast.LinkDecl | ast.OpDecl | ast.ChainDecl
        | ast.ColocateDecl | ast.TieDecl | ast.Attr | ast.PinDecl)


def format_source(text: str, file: str = "<string>") -> str:
    """Return `text` (a `.plan` file's contents) in the canonical layout.

    Raises `SpecError` (from the parser) when `text` is not syntactically valid, and E109
    when it holds a `;` the layout cannot drop (`fmtcheck`).
    """
    text = line_ends(text)  # a lone \r ends a line here too (same offsets)
    module = parse(text, file)
    with paused_gc():  # only strings are made; see `paused_gc`
        out = _Printer(text, module).module(module)
    check_same_reading(text, file, module, out)  # E109: a `;` the layout cannot drop
    return out


@lru_cache(maxsize=1 << 14)  # a generated graph names each op in several edges
def format_name(text: str) -> str:
    """A name as the formatter prints it: bare when possible, else a JSON string."""
    return text if _BARE.match(text) else _json(text)


def _json(text: str) -> str:
    out: str = encode_basestring(text)  # json.dumps(text, ensure_ascii=False), faster
    if out.isascii():
        return out
    # A character a reader cannot see stays escaped as written (`\u202e`, `\u200b`): raw,
    # a bidi override reorders the line in review (E261 refuses it in a name either way),
    # and a lone surrogate (`\ud800`) cannot be written as UTF-8.
    return "".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in out)


def _name(n: ast.Name) -> str:
    # Unquoted names are NAME or keyword tokens, so already bare.
    return format_name(n.text) if n.quoted else n.text


def _value(v: ast.Value) -> str:
    if v.kind == "quantity":
        return f"{v.number} {v.unit}"
    if v.kind == "number":
        return v.number
    assert v.name is not None
    return _name(v.name)


def _key(a: ast.Attr) -> str:
    return a.key if a.selector is None else f"{a.key}[{_name(a.selector)}]"


def _attr(a: ast.Attr) -> str:
    return f"{_key(a)} {_value(a.value)}"


def _devref(r: ast.DevRef) -> str:
    if r.kind == "range":
        return f"{_name(r.name)}{r.bounds()}"
    if r.kind == "wild":
        return f"{_name(r.name)}[*]"
    return _name(r.name)


def _names(names: Sequence[ast.Name]) -> str:
    return ", ".join(map(_name, names))


class _Printer:
    """Prints one module; walks the tree in source order, taking comments as it goes."""

    def __init__(self, text: str, module: ast.Module) -> None:
        self.text = text
        self.comments = module.comments
        self.cstarts = [c.span.start for c in module.comments]
        self.ci = 0  # the next comment not yet printed
        self.out: list[str] = []

    # ---- positions ------------------------------------------------------------------

    def _next(self, pos: int) -> int:
        """The offset of the next significant character at or after `pos`."""
        m = _SKIP.match(self.text, pos)
        assert m is not None
        return m.end()

    def _brace(self, pos: int, char: str) -> int:
        """The offset of the brace `char` that must come next after `pos`."""
        at = self._next(pos)
        if self.text[at : at + 1] != char:  # pragma: no cover - a parser/formatter mismatch
            raise AssertionError(f"expected {char!r} at offset {at}")
        return at

    def _block(self, hdr_end: int, attrs: Sequence[ast.Attr],
               always: bool = False) -> tuple[int, int]:
        """(offset of `{`, offset of `}`) of the block after a header, or (-1, -1)."""
        if attrs:
            return self._brace(hdr_end, "{"), self._brace(attrs[-1].value.span.end, "}")
        at = self._next(hdr_end)
        if always or self.text[at : at + 1] == "{":
            return at, self._brace(at + 1, "}")
        return -1, -1

    def _blank(self, a: int, b: int) -> bool:
        """Whether the source has a blank line between offsets `a` and `b`."""
        return _BLANK.search(self.text, a, b) is not None

    def _has_comment(self, a: int, b: int) -> bool:
        """Whether a comment not yet printed starts before offset `b` (and after `a`)."""
        return self.ci < len(self.cstarts) and a <= self.cstarts[self.ci] < b

    # ---- comments -------------------------------------------------------------------

    def _trail(self, c: ast.Comment) -> None:
        """Append a trailing comment to the last line printed."""
        line = self.out[-1]
        col = c.span.column - 1
        gap = max(col - len(line), 2)
        self.out[-1] = line + " " * gap + c.text.rstrip()

    def _inner(self, upto: int, indent: str) -> None:
        """Print comments before `upto` (inside a statement's head) on their own lines."""
        while self.ci < len(self.cstarts) and self.cstarts[self.ci] < upto:
            self.out.append(indent + self.comments[self.ci].text.rstrip())
            self.ci += 1

    def _leading(self, upto: int, prev_end: int, prev_code: bool, indent: str,
                 first: bool, separate: bool) -> tuple[int, bool, bool]:
        """Print the comments before `upto`, the start of a container's next item (or its end).

        A comment on the line of the code just printed (`prev_code`, ending at `prev_end`)
        trails it; the others get their own lines at `indent`. A blank line goes before the
        first own-line comment when `separate` (the top level's item separator), and before
        any one that had a blank line above it in the source unless nothing of the container
        is printed yet (`first`). Returns the new (prev_end, prev_code) and whether an
        own-line comment was printed.
        """
        printed = False
        while self.ci < len(self.cstarts) and self.cstarts[self.ci] < upto:
            c = self.comments[self.ci]
            self.ci += 1
            if prev_code and self.text.find("\n", prev_end, c.span.start) < 0:
                self._trail(c)
            else:
                if separate or (not first and self._blank(prev_end, c.span.start)):
                    self.out.append("")
                self.out.append(indent + c.text.rstrip())
                printed, first, separate = True, False, False
            prev_end, prev_code = c.span.end, False
        return prev_end, prev_code, printed

    # ---- containers -----------------------------------------------------------------

    def module(self, module: ast.Module) -> str:
        """The whole file."""
        text, out = self.text, self.out
        prev_end = 0
        prev_code = False  # whether `prev_end` ends code (a comment may trail it)
        prev_item: Item | None = None
        since_item = False  # a comment line printed since `prev_item`
        items = module.items
        for k in range(len(items) + 1):
            child = items[k] if k < len(items) else None
            start = child.span.start if child is not None else len(text)
            both_imports = isinstance(prev_item, ast.ImportDecl) and isinstance(
                child, ast.ImportDecl)
            # the separator between two items goes before the comments that lead the second
            separate = (child is not None and prev_item is not None and not since_item
                        and not both_imports)
            prev_end, prev_code, printed = self._leading(start, prev_end, prev_code, "",
                                                         not out, separate)
            since_item = since_item or printed
            if child is None:
                break
            if out and ((prev_item is not None and not since_item and not both_imports)
                        or self._blank(prev_end, start)):
                out.append("")
            prev_end = self._top(child)
            prev_code, prev_item, since_item = True, child, False
        return "\n".join(out) + "\n" if out else ""

    def _body(self, children: Sequence[Item], lo: int, hi: int, indent: str,
              pads: tuple[int, int] = (0, 0)) -> None:
        """The statements (or attributes) between a `{` at `lo - 1` and a `}` at `hi`."""
        out = self.out
        prev_end, prev_code, first = lo, True, True
        runs = _link_runs(self, children) if children and isinstance(
            children[0], ast.DeviceDecl | ast.LinkDecl) else None
        n = len(children)
        for k in range(n + 1):
            start = children[k].span.start if k < n else hi
            prev_end, prev_code, printed = self._leading(start, prev_end, prev_code, indent,
                                                         first, False)
            first = first and not printed
            if k == n:
                break
            if not first and self._blank(prev_end, start):
                out.append("")
            prev_end = self._statement(children[k], indent, pads,
                                       runs[k] if runs is not None else 0)
            prev_code, first = True, False

    def _top(self, item: Item) -> int:
        """Print a top-level item; return the offset just after it."""
        if isinstance(item, ast.ImportDecl):
            end = item.path.span.end
            self._inner(end, "")
            self.out.append("import " + _json(item.path.text))
            return end
        if isinstance(item, ast.ClusterDecl):
            return self._decl("cluster", item.name, item.items)
        if isinstance(item, ast.GraphDecl):
            return self._decl("graph", item.name, item.items)
        assert isinstance(item, ast.PlanDecl)
        settings = [len(i.key) for i in item.items if isinstance(i, ast.Attr)]
        pins = [5 if not i.hard else 3 for i in item.items if isinstance(i, ast.PinDecl)]
        pads = (max(settings, default=0) + 1, max(pins, default=0) + 1)
        return self._decl("plan", item.name, item.items, pads)

    def _decl(self, keyword: str, name: ast.Name, items: Sequence[Item],
              pads: tuple[int, int] = (0, 0)) -> int:
        """`keyword NAME { ... }` at the top level, always multi-line."""
        open_ = self._brace(name.span.end, "{")
        last = self._end(items[-1]) if items else open_ + 1
        close = self._brace(last, "}")
        self._inner(open_, "")
        head = f"{keyword} {_name(name)} {{"
        if not items and not self._has_comment(open_, close):
            self.out.append(head + "}")
            return close + 1
        self.out.append(head)
        self._body(items, open_ + 1, close, INDENT, pads)
        self.out.append("}")
        return close + 1

    # ---- statements -----------------------------------------------------------------

    def _end(self, item: Item) -> int:
        """The offset just after a statement (used to find the `}` that follows it)."""
        if isinstance(item, ast.Attr):
            return item.value.span.end
        if isinstance(item, ast.PinDecl):
            return item.device.span.end
        if isinstance(item, ast.ColocateDecl):
            return item.ops[-1].span.end
        hdr_end, attrs = _header_end(item)
        close = self._block(hdr_end, attrs, isinstance(item, ast.DeviceDecl))[1]
        return close + 1 if close >= 0 else hdr_end

    def _statement(self, item: Item, indent: str, pads: tuple[int, int], align: int) -> int:
        """Print a statement inside a block; return the offset just after it."""
        out = self.out
        if isinstance(item, ast.Attr):
            end = item.value.span.end
            self._inner(end, indent)
            out.append(f"{indent}{_key(item).ljust(pads[0])}{_value(item.value)}")
            return end
        if isinstance(item, ast.PinDecl):
            end = item.device.span.end
            self._inner(end, indent)
            kw, prep = ("pin", "to") if item.hard else ("place", "on")
            out.append(f"{indent}{kw.ljust(pads[1])}{_names(item.ops)} {prep} "
                       f"{_name(item.device)}")
            return end
        if isinstance(item, ast.ColocateDecl):
            end = item.ops[-1].span.end
            self._inner(end, indent)
            out.append(f"{indent}colocate {_names(item.ops)}")
            return end
        hdr_end, attrs = _header_end(item)
        open_, close = self._block(hdr_end, attrs, isinstance(item, ast.DeviceDecl))
        head = self._chain(item) if isinstance(item, ast.ChainDecl) else _head(item)
        if open_ < 0:
            self._inner(hdr_end, indent)
            out.append(indent + head)
            return hdr_end
        self._inner(open_, indent)
        if self._one_line_block(open_, close, attrs):
            line = _one_line(indent, head, attrs, align)
            if line is not None:
                out.append(line)
                return close + 1
        if not attrs and not self._has_comment(open_, close):
            out.append(f"{indent}{head} {{}}")
            return close + 1
        out.append(f"{indent}{head} {{")
        pad = max(len(_key(a)) for a in attrs) + 1 if attrs else 0
        self._body(attrs, open_ + 1, close, indent + INDENT, (pad, 0))
        out.append(indent + "}")
        return close + 1

    def _one_line_block(self, open_: int, close: int, attrs: Sequence[ast.Attr]) -> bool:
        """Whether the block from `open_` to `close` prints on its head's line: written on
        one line, or empty with no comment (`{` and `}` on two lines print `{}`: as a link
        in a run, padded as the run's others, or a second `fmt` changed it)."""
        return self.text.find("\n", open_, close) < 0 or (
            not attrs and not self._has_comment(open_, close))

    def _chain(self, item: ast.ChainDecl) -> str:
        """`a -> b -> c`, each arrow as written (a `<->` is E233: printed `->`, it was a
        mistake `fmt` hid, and a spec `check` refused passed after `fmt`)."""
        if item.both_ways is None:
            return _head(item)
        parts = [_name(item.names[0])]
        for a, b in pairwise(item.names):
            both = self.text.startswith("<->", self._next(a.span.end))
            parts += ["<->" if both else "->", _name(b)]
        return " ".join(parts)


def _header_end(item: Item) -> tuple[int, Sequence[ast.Attr]]:
    """Where a block statement's head ends (a lower bound), and its attributes."""
    if isinstance(item, ast.OpDecl):
        return item.name.span.end, item.attrs
    if isinstance(item, ast.ChainDecl):
        return item.names[-1].span.end, item.attrs
    if isinstance(item, ast.TieDecl):
        return item.ops[-1].span.end, item.attrs
    if isinstance(item, ast.DeviceDecl):
        return item.ref.span.end, item.attrs
    assert isinstance(item, ast.LinkDecl), type(item)
    return item.dsts[-1].span.end, item.attrs


def _head(item: Item) -> str:
    """A block statement without its block: `op conv1`, `a -> b`, `link a <-> b`."""
    if isinstance(item, ast.OpDecl):
        return "op " + _name(item.name)
    if isinstance(item, ast.ChainDecl):
        return " -> ".join(map(_name, item.names))
    if isinstance(item, ast.TieDecl):
        return "tie " + _names(item.ops)
    if isinstance(item, ast.DeviceDecl):
        return "device " + _devref(item.ref)
    assert isinstance(item, ast.LinkDecl)
    arrow = "<->" if item.both_ways else "->"
    return (f"link {', '.join(map(_devref, item.srcs))} {arrow} "
            f"{', '.join(map(_devref, item.dsts))}")


def _one_line(indent: str, head: str, attrs: Sequence[ast.Attr], align: int) -> str | None:
    """`head { a  b }` on one line, or None when it would be wider than `MAX_WIDTH` or read
    otherwise (`_reads_as_unit`)."""
    block = "{ " + "  ".join(map(_attr, attrs)) + " }" if attrs else "{}"
    if len(indent) + len(head) + 1 + len(block) > MAX_WIDTH or any(
            _reads_as_unit(a, b) for a, b in pairwise(attrs)):
        return None
    return f"{indent}{head.ljust(align - 1)} {block}"


def _reads_as_unit(a: ast.Attr, b: ast.Attr) -> bool:
    """Whether `b`'s key would read as the unit of `a`'s plain number on one line (`speed
    2  s 1` is `speed` 2 s, then `1`): an unknown key, written `speed 2; s 1` (before,
    `fmt` printed that and its output no longer parsed); on lines of their own, no unit
    follows a number across the line's end."""
    return a.value.kind == "number" and _quantity().match(
        f"{a.value.number}  {_attr(b)}") is not None


@lru_cache(maxsize=1)
def _quantity() -> re.Pattern[str]:
    return re.compile(grammar().patterns["QUANTITY"])


def _link_runs(p: _Printer, items: Sequence[Item]) -> list[int]:
    """Per cluster statement, the width its link header is padded to (0: no padding).

    A run is a sequence of links printed on one line with a block, with no blank line and
    no comment line between them; a comment inside a link's head, printed on a line of its
    own above the link, counts as one (before: the run was not formed until a second `fmt`).
    """
    widths = [0] * len(items)
    heads: list[int] = []
    run: list[int] = []
    prev_end = -1
    cstarts = p.cstarts
    ci = p.ci
    for k, item in enumerate(items):
        start = item.span.start
        while ci < len(cstarts) and cstarts[ci] < start:
            ci += 1
            if prev_end >= 0 and p.text.find("\n", prev_end, cstarts[ci - 1]) >= 0:
                prev_end = -1
        hdr_end, attrs = _header_end(item)
        open_, close = p._block(hdr_end, attrs, isinstance(item, ast.DeviceDecl))
        inner = ci < len(cstarts) and cstarts[ci] < max(open_, 0)
        one = (isinstance(item, ast.LinkDecl) and open_ >= 0
               and p._one_line_block(open_, close, attrs)
               and _one_line(INDENT, _head(item), attrs, 0) is not None)
        # a comment inside the head is printed on its own line above the link: that line
        # ends the run before it, and the link may start the next (as the output reads)
        joined = one and not inner and prev_end >= 0 and not p._blank(prev_end, start)
        if not joined:
            _close_run(widths, run, heads)
            run, heads = [], []
        if one:
            run.append(k)
            heads.append(len(_head(item)))
        while ci < len(cstarts) and cstarts[ci] < (close + 1 if close >= 0 else hdr_end):
            ci += 1
        prev_end = close + 1 if one else -1
    _close_run(widths, run, heads)
    return widths


def _close_run(widths: list[int], run: list[int], heads: list[int]) -> None:
    if len(run) > 1:
        width = max(heads) + 1
        for k in run:
            widths[k] = width
