"""What the parsers say about text they reject: E010 for a file that is not a spec (its
content never shown), and one diagnostic with a location, a reason and a hint for a syntax
error Lark found (`syntax_diagnostic`).

A module of its own below both parsers: `larkparse` raises these diagnostics, and `load`
and the renderer ask `looks_like_spec`, without `parse` and `larkparse` importing each
other's private names (they were a cycle).

Why not Lark's `match_examples`: it labels an error with the label of a known broken text
that fails in the same parser state on the same token, so each state needs an example of
its own, and a state no example shows gets no hint. The hints here are computed from what
the state expects (`err.expected`) and the token, so they hold in every state; the broken
specs of tests/spec/broken/ pin their wording, each with its expected diagnostic.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .. import schedules
from ..errors import Diagnostic, Span, did_you_mean
from ..units import UNIT_TABLE, closest_unit
from .ast import DEVICE_ATTRS, EDGE_ATTRS, LINK_ATTRS, OP_ATTRS, PLAN_SETTINGS
from .grammar import KEYWORDS, grammar
from .lex import line_ends

if TYPE_CHECKING:  # Lark is imported only when the fast path hands a text on (`larkparse`)
    from lark.exceptions import UnexpectedCharacters, UnexpectedInput

_STATEMENT_KEYWORDS = grammar().statement_keywords()


_GLUED = re.compile(r"[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?[ \t]*([A-Za-z/]+)")
_BLANKS = r"[ \t\r\n\f]"
_QUOTED = r'"(?:[^"\\\x00-\x1f]|\\.)*+"'
#: blanks and comments, which may stand between any two tokens
_GAP = rf"(?:{_BLANKS}|#[^\r\n]*+)"
#: what every spec starts with, after blanks, comments and `;`: `import "FILE"`, or a
#: `cluster`, `graph` or `plan` header up to its `{`
HEADER = re.compile(
    rf"(?:{_GAP}|;)*+(?:import{_GAP}*+{_QUOTED}|(?:cluster|graph|plan)"
    rf"(?:{_GAP}++[A-Za-z_][A-Za-z0-9_.\-]*+|{_GAP}*+{_QUOTED}){_GAP}*+\{{)")
_FIRST_WORD = re.compile(rf"(?:{_BLANKS}|;|#[^\r\n]*+)*+([A-Za-z_]{{1,20}})")


def looks_like_spec(text: str) -> bool:
    """Whether `text` starts as a spec does (an import, or a block header up to its `{`):
    only such a file's lines are ever shown in a diagnostic."""
    return HEADER.match(line_ends(text)) is not None


def not_a_spec(text: str, file: str) -> Diagnostic:
    """E010 for a syntax error before the first header: the file may be anything (a
    credentials file an import named), so neither its words nor its lines are shown."""
    word = _FIRST_WORD.match(text)
    starts = ("import", "cluster", "graph", "plan")
    # a keyword spelt right needs no 'did you mean' (its name or `{` is what is wrong)
    close = did_you_mean(word.group(1), starts) if word and word.group(1) not in starts else ()
    return Diagnostic("E010", f"{file} is not a planner spec (its content is not shown)",
                      Span.start_of(file), (*close, ('a spec starts with `import "FILE"` or with '
                                             "`cluster`, `graph` or `plan`, a name and `{`")))


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


# complex: the docstring's cases in turn, each a guard and its diagnostic: bad character, end
# of file, bad value, unmatched `}`, then an unexpected token with its hints
def syntax_diagnostic(err: UnexpectedInput, text: str, file: str) -> Diagnostic:
    """The one diagnostic for a syntax error Lark raised: where, what, and a hint. In
    turn: a character no token starts with, the end of the file, a value written wrong (a
    non-finite number, an unknown unit), then an unexpected token with its hints."""
    line = max(1, getattr(err, "line", 1) or 1)
    col = max(1, getattr(err, "column", 1) or 1)
    pos = getattr(err, "pos_in_stream", None)
    if pos is None:
        pos = _offset(text, line, col)
    # lazy: start-up (Lark is loaded by now: it raised `err`)
    from lark.exceptions import UnexpectedCharacters, UnexpectedToken

    if isinstance(err, UnexpectedCharacters):
        return _unexpected_char(err, text, file, line, col, pos)
    assert isinstance(err, UnexpectedToken)
    tok = err.token
    # `1f1b` is a name (the one that starts with a digit): "a name" says it
    expected = set(err.expected or ()) - {"SCHEDULE_1F1B"}
    if tok.type == "$END":
        return _unexpected_end(text, file)
    tok_pos = tok.start_pos if tok.start_pos is not None else pos
    misplaced = _misplaced(text, file, tok_pos, str(tok.value))
    if misplaced is not None:
        return misplaced
    value = _bad_value(text, file, tok_pos, expected)
    if value is not None:
        return value
    span = Span(file, tok.line, tok.column, tok.end_line or tok.line,
                tok.end_column or tok.column + 1, tok.start_pos or pos,
                tok.end_pos or pos)
    name_fits = "NAME" in expected and "STRING" in expected
    if tok.type == "RBRACE" and "RBRACE" not in expected and not name_fits and not (
        expected & {"QUANTITY", "NUMBER"}
    ):
        return Diagnostic("E107", "unmatched `}`", span, ("remove it, or open a block before it",))
    hints = _token_hints(tok, text, tok_pos, tok.start_pos or pos, expected, name_fits)
    if not hints or (tok.type == "NAME" and len(hints) == 1 and "did you mean" in hints[0]):
        hints.extend(_expected_words(expected, name_fits))
    return Diagnostic("E101", f"unexpected `{str(tok.value)[:40]}`", span, tuple(hints))


def _unexpected_end(text: str, file: str) -> Diagnostic:
    """E102 at the end of the file, naming the block left open."""
    line, col, pos = _end_position(text)
    opener = _open_block(text, len(text))
    end_hints = (f"missing `}}` to close `{opener}`",) if opener else ()
    return Diagnostic("E102", "unexpected end of file", Span(file, line, col, line, col + 1,
                                                             pos, pos), end_hints)


def _bad_value(text: str, file: str, tok_pos: int, expected: set[str]) -> Diagnostic | None:
    """A value written wrong before the token at `tok_pos`, which Lark only noticed there:
    `nan` or `inf` meant as a number (E108), a number glued to an unknown unit (`16GiBs`),
    an unknown unit where a quantity was expected, or one before the next attribute."""
    not_number = _non_finite_before(text, file, tok_pos)
    if not_number is not None:
        return not_number
    m = _GLUED.match(text, tok_pos)
    if m and m.group(1) not in UNIT_TABLE:  # `16GiBs`: a number glued to an unknown unit
        return _unknown_unit(file, text, m.start(1), m.end(1))
    glued = _unit_before(text, tok_pos)
    if glued is not None and expected & {"QUANTITY", "NUMBER"}:
        return _unknown_unit(file, text, *glued)
    typo = _unit_before_key(text, tok_pos)
    if typo is not None and "NAME" in expected:
        return _unknown_unit(file, text, *typo)
    return None


def _token_hints(tok: Any, text: str, tok_pos: int, keyword_pos: int, expected: set[str],
                 name_fits: bool) -> list[str]:
    """The hints for an unexpected token: a block left open, an edge without its target,
    a misspelt keyword, a value where a key belongs (or the other way round)."""
    hints: list[str] = _statement_read_as_op(text, tok_pos) \
        if tok.type in ("NAME", "STRING") and "ARROW" in expected else \
        _in_an_op_list(text, tok_pos, tok.type)
    if tok.type == "LBRACE":
        hints.extend(_unclosed_before_brace(text, tok_pos))
    if text[:tok_pos].rstrip().endswith("->") and name_fits:
        hints.append("an edge needs an op name after `->`, as in `a -> b`")
    if tok.type == "NAME":  # a misspelt keyword (`plna`, `devise`)
        words = [t.lower() for t in expected if t in _STATEMENT_KEYWORDS]
        if words and not name_fits:
            hints.extend(did_you_mean(str(tok.value), words))
    if tok.type in _STATEMENT_KEYWORDS:
        opener = _open_block(text, keyword_pos)
        if opener and "RBRACE" in expected:
            elsewhere = _statement_home(tok.type.lower(), opener.split()[0])
            hints.append(elsewhere or f"missing `}}` to close `{opener}`")
    if expected & {"QUANTITY", "NUMBER"} and "RBRACE" not in expected:
        hints += _unit_on_next_line(text, tok_pos)
        hints.append("expected a value, such as `16 GiB`, `1.5 ms` or a name")
    elif tok.type in {"QUANTITY", "NUMBER"} and "NAME" in expected:
        hints += _unit_on_next_line(text, tok_pos)
        hints.append("a value must follow a key, as in `memory 16 GiB`")
    return hints


def _unit_on_next_line(text: str, tok_pos: int) -> list[str]:
    """The hint for a quantity whose unit went to the next line (`memory 16` NL `GiB }`,
    or NL `GiB speed 2`): the unit was read as the next attribute's key."""
    split = _UNIT_ON_NEXT_LINE.search(text, max(0, tok_pos - 200), tok_pos)
    if split is None or split.group(2) not in UNIT_TABLE:
        return []
    number, unit = split.group(1), split.group(2)
    return [f"`{unit}` is read as a key: a quantity's number and unit stand on one line, as "
            f"in `{number} {unit}`"]


#: a number at a line's end, then a word alone before the token: a unit read as a key
_UNIT_ON_NEXT_LINE = re.compile(
    r"(\d[\w.+\-]*)[ \t]*\n\s*([A-Za-z/]+)(?:\s+[A-Za-z_][\w.\-]*)?\s*\Z")
#: the word that starts a statement, right before the token at the end of the text
_STATEMENT_START = re.compile(r"(?:\A|[\n{};])[ \t]*([A-Za-z_][\w.\-]*)[ \t]+\Z")
_TOP_LEVEL = ("graph", "cluster", "plan", "import")


_OP_LIST_STATEMENT = re.compile(r"(?:\A|[\n{};])[ \t]*(pin|place|colocate|tie)\b[^\n{};]*\Z")


def _in_an_op_list(text: str, tok_pos: int, tok_type: str) -> list[str]:
    """The hint for a `*` or a `[` in a `pin`, `place`, `colocate` or `tie`: an op
    pattern is quoted (`"a*"`), and a pin or a place names one device (`[..]` and `[*]`
    select devices in a cluster's `link`)."""
    if tok_type not in ("STAR", "LSQB"):
        return []
    m = _OP_LIST_STATEMENT.search(text, max(0, tok_pos - 300), tok_pos)
    if m is None:
        return []
    if tok_type == "STAR":
        return [f"an op pattern is quoted, as in `{m.group(1)} \"layer1/*\"`"]
    if m.group(1) in ("pin", "place"):
        return [f"`{m.group(1)}` names one device, such as `gpu0` (a range or `[*]` selects "
                "devices in a cluster's `link`)"]
    return []


#: the block each statement belongs to (`tie`: `graph`), as the grammar says
_HOMES = {keyword: block for block in ("graph", "cluster", "plan")
          for keyword in grammar().statements(block)}


def _statement_home(keyword: str, block: str) -> str | None:
    """The hint for a statement written in a block it does not belong to (`tie` in a plan,
    `pin` in a graph): no `}` is missing there, the statement is misplaced."""
    home = _HOMES.get(keyword)
    if home is None or home == block or block not in _HOMES.values():
        return None
    return f"`{keyword}` is a statement of a {home}, not of a {block}: write it in a {home}"


#: a plan's settings that are no attribute of another block (`graph` and `cluster` open one)
_PLAN_ONLY = frozenset(PLAN_SETTINGS) - {"graph", "cluster", *DEVICE_ATTRS}


def _misplaced(text: str, file: str, tok_pos: int, value: str) -> Diagnostic | None:
    """E101 at a statement's first word when the statement belongs in another block: a
    plan's setting in a graph or a cluster (`schedule gpipe`), or `pin`, `place`, `link`,
    `device` in a graph. Inside a graph any word starts an edge, so there Lark fails only
    at the word after it (`expected ->`): the word itself is what is out of place."""
    m = _STATEMENT_START.search(text, max(0, tok_pos - 200), tok_pos)
    start, word = (m.start(1), m.group(1)) if m is not None else (tok_pos, value)
    opener = _open_block(text, start)
    block = opener.split()[0] if opener else ""
    if block not in ("graph", "cluster") or text[start : start + len(word)] != word:
        return None
    if word in _PLAN_ONLY:
        hint = f"`{word}` is a setting of a plan, not of a {block}: write it in a plan"
    elif block == "graph" and m is not None:
        hint = _statement_home(word, "graph") or ""
    else:
        hint = ""
    if not hint:
        return None
    line = text.count("\n", 0, start) + 1
    col = start - (text.rfind("\n", 0, start) + 1) + 1
    return Diagnostic("E101", f"unexpected `{word}`", Span(
        file, line, col, line, col + len(word), start, start + len(word)), (hint,))


def _statement_read_as_op(text: str, tok_pos: int) -> list[str]:
    """Inside a graph any word names an op, so a statement's first word followed by a name
    reads as the start of an edge (`a b`), which fails only at the name: a block left open
    before `graph g2 {` (or `cluster`, `plan`), or a misspelt keyword (`opp a`, `colocat a,
    b`), said at that word."""
    m = _STATEMENT_START.search(text, max(0, tok_pos - 200), tok_pos)
    if m is None:
        return []
    word = m.group(1)
    if word in _TOP_LEVEL:
        opener = _open_block(text, m.start(1))
        return [f"missing `}}` to close `{opener}`"] if opener else []
    if word.lower() in KEYWORDS:
        elsewhere = _statement_home(word, "graph")
        return [elsewhere] if elsewhere else []
    return list(did_you_mean(word, sorted(k.lower() for k in _STATEMENT_KEYWORDS)))


def _expected_words(expected: set[str], name_fits: bool) -> list[str]:
    """`expected X, Y or Z`, from the tokens Lark expected (where a name fits, every
    keyword does too, since `name` accepts them: "a name" says it)."""
    shown_types = {t for t in expected if not t.startswith("__ANON")}
    if name_fits:
        shown_types = {t for t in shown_types if t.lower() not in KEYWORDS}
    words = sorted({_describe(t) for t in shown_types} - {""})
    return ["expected " + _or_list(words[:8])] if words else []


def _unclosed_before_brace(text: str, pos: int) -> list[str]:
    """`op b {` inside an unclosed block reads as `key value {`: the hint naming that block
    when the words before the `{` at `pos` start with a keyword."""
    window = text[max(0, pos - 300) : pos]
    m = re.search(r"(\w+)\s+(?:\"(?:[^\"\\]|\\.)*\"|\S+)\s*$", window)
    if m and m.group(1) in KEYWORDS:
        opener = _open_block(text, pos - (len(window) - m.start()))
        if opener:
            return [f"missing `}}` to close `{opener}`"]
    return []


_NON_FINITE = re.compile(r"(?i)(?<![\w.\-])(nan|inf|infinity)(?![\w.\-])")
#: `nan` or `inf` then a unit's first part, right before a rate's `/` (`nan GB/s`)
_NON_FINITE_RATE = re.compile(r"(?i)(?<![\w.\-])(?:nan|inf|infinity)[ \t]+[A-Za-z]+\Z")


def _non_finite_before(text: str, file: str, pos: int) -> Diagnostic | None:
    """E108 when a `nan` or `inf` on the line before `pos` was meant as a number: `time nan
    ms` reads as `time` = `nan`, then a key `ms`, and fails a token or two later."""
    start = max(0, pos - 80, text.rfind("\n", 0, pos) + 1)
    found = list(_NON_FINITE.finditer(text, start, pos))
    if not found:
        return None
    m = found[-1]
    line = text.count("\n", 0, m.start()) + 1
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    return Diagnostic("E108", f"`{m.group(1)}` is not a number", Span(
        file, line, col, line, col + len(m.group(1)), m.start(), m.end()),
        ("quantities are finite numbers with a unit, such as `1.5 ms`",))


def _unit_before(text: str, pos: int) -> tuple[int, int] | None:
    """(start, end) of a word right after a number and right before `pos`: a unit typo."""
    window = text[max(0, pos - 80) : pos]
    m = re.search(r"[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?[ \t]+([A-Za-z/]+)\s*$", window)
    if m is None or m.group(1) in UNIT_TABLE:
        return None
    base = pos - len(window)
    return base + m.start(1), base + m.end(1)


#: every attribute's key: what may follow a value in a block
_ATTRIBUTE_KEYS = frozenset({*OP_ATTRS, *EDGE_ATTRS, *DEVICE_ATTRS, *LINK_ATTRS})
_UNIT_THEN_KEY = re.compile(r"[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?[ \t]+([A-Za-z/]+)"
                            r"\s+([A-Za-z_]\w*)[ \t]*$")


def _unit_before_key(text: str, pos: int) -> tuple[int, int] | None:
    """(start, end) of an unknown unit followed by an attribute's key, right before the value
    at `pos`: `memory 16 Gib  flops 15 TFLOPS` reads `Gib` as a key and `flops` as its value,
    and fails only at `15 TFLOPS`, a value where a key belongs."""
    window = text[max(0, pos - 120) : pos]
    m = _UNIT_THEN_KEY.search(window)
    if m is None or m.group(2) not in _ATTRIBUTE_KEYS or m.group(1) in UNIT_TABLE \
            or m.group(1) in _ATTRIBUTE_KEYS or m.group(1).lower() in KEYWORDS:
        return None
    base = pos - len(window)
    return base + m.start(1), base + m.end(1)


def _unknown_unit(file: str, text: str, start: int, end: int) -> Diagnostic:
    schedule = _schedule_value(file, text, start)
    if schedule is not None:
        return schedule
    unit = text[start:end]
    close = closest_unit(unit, _key_dims(text, start))
    hints = [f"did you mean `{close}`?"] if close else []
    hints.append("units: ns us ms s | B KB MB GB TB KiB MiB GiB TiB | GB/s GiB/s Gbps … "
                 "| FLOP GFLOP … | FLOPS TFLOPS …")
    line = text.count("\n", 0, start) + 1
    col = start - (text.rfind("\n", 0, start) + 1) + 1
    return Diagnostic("E103", f"unknown unit `{unit}`",
                      Span(file, line, col, line, col + len(unit), start, end), tuple(hints))


#: a `schedule` setting's value that lexes as a number with a unit: `1F1B`, `1f2b`
_SCHEDULE_VALUE = re.compile(r"\bschedule[ \t]+([0-9][A-Za-z0-9_.\-]*)")


def _schedule_value(file: str, text: str, unit_start: int) -> Diagnostic | None:
    """E101 for `schedule 1F1B` (and other misspellings of `1f1b` that start with a digit),
    which read as a number and a unit: the name is the mistake, not the unit."""
    m = None
    for m in _SCHEDULE_VALUE.finditer(text, max(0, unit_start - 40), unit_start + 40):
        if m.start(1) < unit_start <= m.end(1):
            break
    else:
        return None
    value = m.group(1)
    names = [t.name for t in schedules.TABLE]
    if value in names:  # a schedule, where none belongs: not what is wrong
        return None
    line = text.count("\n", 0, m.start(1)) + 1
    col = m.start(1) - (text.rfind("\n", 0, m.start(1)) + 1) + 1
    return Diagnostic("E101", f"`{value}` is not a schedule",
                      Span(file, line, col, line, col + len(value), m.start(1), m.end(1)),
                      (*did_you_mean(value.lower(), names), "one of: " + " | ".join(names)))


def _key_dims(text: str, unit_start: int) -> set[str]:
    """The dimensions the key before `16 GiBs` takes (`memory`: size), or none known."""
    m = re.search(r"([A-Za-z_][A-Za-z0-9_.\-]*)(?:\[[^\]\n]*\])?[ \t]+[0-9][0-9_.eE+\-]*[ \t]*$",
                  text[max(0, unit_start - 120) : unit_start])
    if m is None:
        return set()
    return {t[m.group(1)] for t in (OP_ATTRS, EDGE_ATTRS, DEVICE_ATTRS, LINK_ATTRS)
            if m.group(1) in t}


_STRING_PREFIX = re.compile(r'"(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+')


def _bad_string(text: str, file: str, line: int, col: int, pos: int) -> Diagnostic:
    """Say what is wrong in the string opened at `pos`: an escape, a control character or
    the missing closing quote."""
    m = _STRING_PREFIX.match(text, pos)
    at = m.end() if m else pos + 1
    ch = text[at : at + 1]
    c = col + (at - pos)
    if ch == "\\":
        esc = text[at : at + 2] if text[at + 1 : at + 2] != "u" else text[at : at + 6]
        esc = esc.split("\n")[0]
        return Diagnostic(
            "E104", f"invalid escape `{esc}` in a string", Span(file, line, c, line, c + len(esc),
                                                              at, at + len(esc)),
            ('JSON escapes only: \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX',))
    if ch and ch != "\n" and ch != "\r":
        shown = repr(ch)[1:-1]
        return Diagnostic(
            "E104", f"control character `{shown}` in a string",
            Span(file, line, c, line, c + 1, at, at + 1),
            ("write it as an escape, such as `\\t`, or remove it",))
    return Diagnostic("E104", "unterminated string", Span(file, line, col, line, col + 1, pos,
                                                          pos + 1),
                      ('close it with `"` on the same line',))


def _unexpected_char(
    err: UnexpectedCharacters, text: str, file: str, line: int, col: int, pos: int
) -> Diagnostic:
    # A number glued to an unknown unit (`16 GiBs`, `3 hours`) is the usual cause.
    m = _GLUED.match(text, pos)
    if m and m.group(1) not in UNIT_TABLE:
        return _unknown_unit(file, text, m.start(1), m.end(1))
    ch = text[pos] if 0 <= pos < len(text) else ""
    if ch == "/":
        spaced = _spaced_rate(text, file, pos)
        if spaced is not None:
            return spaced
        not_number = _non_finite_before(text, file, pos) if _NON_FINITE_RATE.search(
            text, max(0, pos - 80), pos) else None
        if not_number is not None:  # `nan GB/s`: E108, as `nan GB` is (was E106 at `/`)
            return not_number
    span = Span(file, line, col, line, col + 1, pos, pos + 1)
    if ch == '"':
        return _bad_string(text, file, line, col, pos)
    if ch in "-+.":
        number = _number_mark(text, ch, pos, span)
        if number is not None:
            return number
    if ch == ">" and text[pos - 1 : pos] == "-":  # `a->b`: NAME takes `a-`
        hint = "names may contain `-`, so `a->b` reads as `a-` then `>`; write `a -> b`"
        return Diagnostic("E106", "unexpected character `>`", span, (hint,))
    shown = repr(ch)[1:-1] if ch and (not ch.isprintable() or ch.isspace()) else ch
    return Diagnostic("E106", f"unexpected character `{shown}`", span,
                      ("names are letters, digits, `_`, `.` and `-`, or a quoted string",))


def _number_mark(text: str, ch: str, pos: int, span: Span) -> Diagnostic | None:
    """A `-`, `+` or `.` no token takes: a range written `gpu[0-3]`, a sign (quantities
    are never negative), or a number without digits on one side of its point (`.5`, `1.`)."""
    if ch == "-" and re.search(r"\[[ \t]*[0-9]+[ \t]*\Z", text[max(0, pos - 40) : pos]):
        return Diagnostic("E105", "unexpected `-`", span, ("a device range is written with "
                                                           "`..`, as in `gpu[0..3]`",))
    if ch in "-+":
        return Diagnostic("E105", f"unexpected `{ch}`", span,
                          ("quantities cannot be negative; an edge is written `a -> b`",))
    before = re.search(r"[0-9]+\Z", text[max(0, pos - 40) : pos])
    after = re.match(r"[0-9]+", text[pos + 1 : pos + 41])
    if before is None and after is None:
        return None
    written = (f"`{before.group(0)}` or `{before.group(0)}.0`" if before is not None else
               f"`0.{after.group(0)}`" if after is not None else "")
    return Diagnostic("E106", "unexpected character `.`", span,
                      (f"a number has digits on both sides of its `.`: write {written}",))


_NUMBER_THEN_WORD = re.compile(r"[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?[ \t]+"
                               r"([A-Za-z]+)[ \t]*\Z")
_WORD_AFTER = re.compile(r"[ \t]*([A-Za-z]+)")


def _spaced_rate(text: str, file: str, pos: int) -> Diagnostic | None:
    """E103 for a rate unit the lexer split at its `/` (`10 Gb/s`, `10 GB / s`: a unit
    after a space is a word, which takes no `/`), at the whole unit; None when the `/` at
    `pos` does not sit inside one."""
    before = _NUMBER_THEN_WORD.search(text, max(0, pos - 80), pos)
    after = _WORD_AFTER.match(text, pos + 1)
    if before is None or after is None:
        return None
    unit = f"{before.group(1)}/{after.group(1)}"
    start, end = before.start(1), after.end(1)
    line = text.count("\n", 0, start) + 1
    col = start - (text.rfind("\n", 0, start) + 1) + 1
    where = Span(file, line, col, line, col + (end - start), start, end)
    if unit in UNIT_TABLE:
        return Diagnostic("E103", f"the unit `{text[start:end]}` is written with spaces", where,
                          (f"write `{unit}`",))
    bits = re.fullmatch(r"([KMGT]?)(?:b|bit|bits)/s(?:ec)?", unit)  # bits: `Gb/s` is Gbps
    close = f"{bits.group(1)}bps" if bits and f"{bits.group(1)}bps" in UNIT_TABLE else \
        closest_unit(unit, _key_dims(text, start))
    return Diagnostic("E103", f"unknown unit `{unit}`", where,
                      (f"did you mean `{close}`?" if close else "rates: GB/s GiB/s Gbps …",))


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


_SCAN = re.compile(r'"(?:[^"\\\n]++|\\.)*+"|#[^\n]*+|[{}]')


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
