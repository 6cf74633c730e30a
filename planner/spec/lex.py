"""The fast path's lexer (`fastparse.py` reads its tokens), and the line-ending rule that
every reader of a spec's text shares (`line_ends`: both parsers, the formatter, the
diagnostics' excerpts).

One regular expression, built from the grammar's terminals and punctuation, yields every
token with its offset, streamed (a token list for a 100,000-op spec would take ~400 MB);
`line_res` are the pieces the reader's one-line forms match without it, from the same
terminals. Any character no token takes raises `Bail`: the fast path gives up and Lark
reads the text.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from functools import lru_cache

from .grammar import Grammar, grammar

__all__ = ["TOK_COMMENT", "TOK_END", "TOK_NAME", "TOK_NL", "TOK_NUMBER", "TOK_PUNCT",
           "TOK_QUANTITY", "TOK_STRING", "LEXED", "Bail", "Tok", "lex", "line_ends", "line_res",
           "name_terminals", "token_re"]

#: token kinds: the group of `token_re` that matched (TOK_END: the end of the text)
TOK_END, TOK_NL, TOK_COMMENT, TOK_QUANTITY, TOK_NUMBER = 0, 1, 2, 3, 4
TOK_NAME, TOK_STRING, TOK_PUNCT, TOK_JUNK = 5, 6, 7, 8
Tok = tuple[int, str, int, int, int]  # kind, text, offset, line, column
#: The terminals the lexer takes from the grammar by name, each a token kind of its own;
#: the other terminals of `name` are lexed as NAMEs (before NAME, by priority), keywords
#: as NAMEs and the grammar's strings as punctuation.
LEXED = ("COMMENT", "QUANTITY", "NUMBER", "NAME", "STRING")


class Bail(Exception):
    """The fast path cannot read this text; Lark will."""


def name_terminals(g: Grammar) -> list[str]:
    """The terminals of a bare name (`_word`, which `name` and a device range take) lexed
    as NAMEs: its patterns, highest priority first (NAME last)."""
    found = [s for s in g.lone_symbols("_word") if s in g.patterns]
    return sorted(found, key=lambda t: -g.priorities.get(t, 0))


@lru_cache(maxsize=1)
def token_re() -> re.Pattern[str]:
    """All tokens, each preceded by blanks; the terminals and the punctuation are read
    from the grammar (the terminals of `name` as one kind, NAME last).

    The last alternative takes any one character, so the expression matches at every
    position: `finditer` then never searches ahead after a failed attempt, which made
    20,000 blanks or digits before a stray character cost 20,000 attempts of 20,000 steps
    each. The blanks are possessive (`*+`) for the same reason.
    """
    g = grammar()
    terms = g.patterns
    names = "|".join(terms[t] for t in name_terminals(g))
    punctuation = g.punctuation()  # longest first: `<->` before `->`
    singles = "".join(re.escape(p) for p in punctuation if len(p) == 1)
    punct = "|".join([*(re.escape(p) for p in punctuation if len(p) > 1), f"[{singles}]"])
    return re.compile(
        r"[ \t\r\f]*+(?:(\n)|(" + terms["COMMENT"] + ")|(" + terms["QUANTITY"] + ")|("
        + terms["NUMBER"] + ")|(" + names + ")|(" + terms["STRING"] + ")|(" + punct
        + r")|([\s\S]))"
    )


@lru_cache(maxsize=1)
def line_res() -> tuple[re.Pattern[str], ...]:
    """The pieces of the one-line forms `_Reader.line_*` reads without the lexer: a name,
    `-> name`, `{`, `key[selector] value` with a number or quantity, and `}`.

    Built from the same terminals and blanks as `token_re`, so each piece matches exactly
    the tokens the lexer would yield there; none crosses a line or a comment. An
    attribute's groups: key, selector, a quantity's number and unit, or a number. The key
    is atomic (`(?>...)`): the lexer takes the longest NAME, so `time1ms` is one name
    without a value, never `time` and `1ms` (a NAME's characters include digits and `-`).
    """
    terms = grammar().patterns
    blank, name = r"[ \t\r\f]*+", "(" + terms["NAME"] + "|" + terms["STRING"] + ")"
    # a quantity's number and unit as groups of their own: the number, the blanks between
    # (the one `[ \t]*` of the terminal), the unit
    number, between, unit = terms["QUANTITY"].partition("[ \\t]*")
    assert between and "[ \\t]*" not in unit, terms["QUANTITY"]
    unit = between + "(" + unit + ")"
    return (re.compile(blank + name), re.compile(blank + "->" + blank + name),
            re.compile(blank + r"\{"),
            re.compile(blank + "((?>" + terms["NAME"] + "))(?:" + blank + r"\[" + blank + name
                       + blank + r"\])?" + blank + "(?:(" + number + ")" + unit + "|("
                       + terms["NUMBER"] + "))"),
            re.compile(blank + r"\}"))


def lex(text: str, comments: list[Tok]
            ) -> Generator[Tok, int | tuple[int, int, int] | None, None]:
    """The tokens of `text`, then `TOK_END`; comments go to `comments`. `Bail` on junk.

    `send(pos)` instead of `next()`: the reader has read the text up to offset `pos`
    itself (`_Reader.line_*`), on the line of the token last yielded; lexing resumes
    there. `send((pos, line, line_start))`: it has read whole lines (`_Reader.lines`), and
    `pos` is on line `line`, which starts at offset `line_start`.
    """
    line, line_start, pos = 1, 0, 0
    regex = token_re()
    matches = regex.finditer(text)
    while True:
        for m in matches:
            k = m.lastindex
            if k == TOK_JUNK or m.start() != pos:  # a character no token takes
                raise Bail
            pos = m.end()
            if k == TOK_NL:
                line += 1
                line_start = pos
                continue
            assert k is not None
            s = m.start(k)
            if k == TOK_COMMENT:
                comments.append((k, m.group(k), s, line, s - line_start + 1))
                continue
            jump = yield (k, m.group(k), s, line, s - line_start + 1)
            if jump is not None:
                if isinstance(jump, tuple):  # on a later line
                    pos, line, line_start = jump
                else:
                    pos = jump
                matches = regex.finditer(text, pos)
                break
        else:
            break
    if text[pos:].strip(" \t\r\f"):
        raise Bail
    yield (TOK_END, "", len(text), line, len(text) - line_start + 1)


_LONE_CR = re.compile(r"\r(?!\n)")


def line_ends(text: str) -> str:
    """`text` with every lone `\r` read as `\n`: `\r`, `\r\n` and `\n` all end a line
    (a comment ends there too), and offsets stay those of the file. A byte order mark
    (U+FEFF) that starts the text is dropped, for both parsers, the formatter (whose
    output has none) and the diagnostics' excerpts: offsets and columns are then those
    of the text after it, as an editor shows them. Every mark that starts the text is
    dropped, not one: each layer that reads the text drops them (`load`, then the
    parser), and a file that starts with two (two tools each added one) had one dropped
    by the formatter and the second by its parser, whose offsets were then one off (E999)."""
    if text[:1] == "\ufeff":
        text = text.lstrip("\ufeff")
    return _LONE_CR.sub("\n", text) if "\r" in text else text
