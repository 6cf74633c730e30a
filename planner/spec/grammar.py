"""The grammar file, and what both parsers take from it.

`grammar_text` is the `.lark` file Lark builds its parser from. `grammar()` reads the same
text into its rules and terminals without Lark (whose import alone costs ~60 ms, and the
fast path must not load it), so that the keywords, the statements each block holds, the
setting keys, the punctuation and the terminals' patterns are written once, in the
grammar: `fastparse` takes its tables from here, and `syntax` the keywords. The reading
is small and partial (rules as sequences of symbols, terminals as a pattern or strings),
and tests/spec/test_spec_grammar.py checks it against Lark's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..resources import data_text

__all__ = ["KEYWORDS", "Grammar", "grammar", "grammar_text", "read_grammar",
           "split_alternatives"]


def grammar_text() -> str:
    """The grammar, from the installed wheel (`planner/_data`) or the source checkout."""
    return data_text("plan.lark", "grammar/plan.lark")


# `name.priority: body` at the start of a line; a line that starts with a blank continues
# the definition above it (`| alternative`)
_DEFINITION = re.compile(r"\??([A-Za-z_][A-Za-z0-9_]*)(?:\.(-?[0-9]+))?[ \t]*:(.*)")
# one symbol of a rule's body: a string, a regular expression, an alias arrow, a name, or
# any other character (an EBNF operator, a bracket, `|`)
_SYMBOL = re.compile(r'"(?:[^"\\]|\\.)*"i?|/(?:[^/\\]|\\.)+/[imslux]*|->|[A-Za-z_][A-Za-z0-9_]*|\S')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: a keyword terminal: its word, not followed by a name's character (`/plan(?![...])/`),
#: read as the string it matches (the fast path's lexer reads every word as a name)
_KEYWORD = re.compile(r"/([A-Za-z_][A-Za-z0-9_]*)\(\?!\[[^\]]*\]\)/")


def _unquote(literal: str) -> str:
    """The text of a grammar string (`"{"` -> `{`)."""
    return re.sub(r"\\(.)", r"\1", literal[1:literal.rindex('"')])


@dataclass(frozen=True)
class Grammar:
    """The rules and terminals of a `.lark` text, as `read_grammar` reads them."""

    #: rule -> its alternatives, each a tuple of symbols as written: names, `"strings"`,
    #: EBNF operators and brackets, and a trailing `-> alias`
    rules: dict[str, tuple[tuple[str, ...], ...]]
    #: terminal -> its definition as written (`/[0-9]+/`, `"<->" | "->"`)
    terminals: dict[str, str]
    #: terminal -> its regular expression (the text between the slashes)
    patterns: dict[str, str]
    #: terminal -> the strings it is one of (`ARROW: "<->" | "->"`)
    strings: dict[str, tuple[str, ...]]
    #: terminal -> its priority (`NAME.2:`), for those that state one
    priorities: dict[str, int]
    #: what `%ignore` names: terminals, or `/patterns/` as written
    ignored: tuple[str, ...]
    #: keyword terminal -> its word (`PIN` -> `pin`): the terminals that are one word
    keywords: dict[str, str]

    def lone_symbols(self, rule: str) -> tuple[str, ...]:
        """The alternatives of `rule` that are one symbol (`_key: NAME | GRAPH` -> both)."""
        return tuple(alt[0] for alt in self.rules.get(rule, ()) if len(alt) == 1)

    def words(self, rule: str) -> tuple[str, ...]:
        """The keywords `rule` is one of (`_key` -> `graph`, `cluster`)."""
        keywords = self.keywords
        return tuple(keywords[s] for s in self.lone_symbols(rule) if s in keywords)

    def rule_words(self, rule: str) -> tuple[str, ...]:
        """The keywords of a one-alternative `rule`, in order (`pin` -> `pin`, `to`)."""
        keywords = self.keywords
        (alternative,) = self.rules[rule]
        return tuple(keywords[s] for s in alternative if s in keywords)

    def statements(self, rule: str) -> dict[str, str]:
        """The statements a block holds, by keyword: `rule`'s repeated symbols (`x*`,
        `x+`) are its items' rules, and each of their one-rule alternatives whose every
        alternative starts with the same keyword is a statement (`cluster` -> `device`:
        `device`, `link`: `link`)."""
        keywords = self.keywords
        found: dict[str, str] = {}
        for alternative in self.rules.get(rule, ()):
            repeated = [s for s, op in zip(alternative, alternative[1:], strict=False)
                        if op in ("*", "+") and s in self.rules]
            for statement in (s for item in repeated for s in self.lone_symbols(item)):
                firsts = {alt[0] for alt in self.rules.get(statement, ()) if alt}
                if len(firsts) == 1 and (first := firsts.pop()) in keywords:
                    found[keywords[first]] = statement
        return found

    def statement_keywords(self) -> frozenset[str]:
        """The keyword terminals that start a statement, in any block (`PIN`, `DEVICE`)."""
        return frozenset(self.rules[rule][0][0] for block in self.rules
                         for rule in self.statements(block).values())

    def punctuation(self) -> tuple[str, ...]:
        """Every string of the rules and terminals that is not a word, longest first."""
        found = {_unquote(s) for alts in self.rules.values() for alt in alts for s in alt
                 if s.startswith('"')}
        found.update(s for strings in self.strings.values() for s in strings)
        return tuple(sorted((s for s in found if not _WORD.fullmatch(s)),
                            key=lambda s: (-len(s), s)))


def _definitions(text: str) -> list[str]:
    """Each definition of `text` on one line (comments and blank lines left out)."""
    found: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        if line[0] in " \t" and found:
            found[-1] += " " + stripped
        else:
            found.append(stripped)
    return found


def split_alternatives(body: str) -> tuple[tuple[str, ...], ...]:
    """A rule's body split at its top-level `|`s, each alternative a tuple of symbols."""
    alternatives: list[tuple[str, ...]] = []
    current: list[str] = []
    depth = 0
    for symbol in _SYMBOL.findall(body):
        depth += (symbol in "([") - (symbol in ")]")
        if symbol == "|" and depth == 0:
            alternatives.append(tuple(current))
            current = []
        else:
            current.append(symbol)
    alternatives.append(tuple(current))
    return tuple(alternatives)


def read_grammar(text: str) -> Grammar:
    """Read a `.lark` text: its rules (lower case) and terminals (upper case)."""
    rules: dict[str, tuple[tuple[str, ...], ...]] = {}
    terminals: dict[str, str] = {}
    patterns: dict[str, str] = {}
    strings: dict[str, tuple[str, ...]] = {}
    priorities: dict[str, int] = {}
    ignored: list[str] = []
    for definition in _definitions(text):
        if definition.startswith("%ignore"):
            ignored.append(definition.removeprefix("%ignore").strip())
            continue
        m = _DEFINITION.fullmatch(definition)
        if m is None:  # another directive (`%import`): nothing derived from it here
            continue
        name, priority, body = m.group(1), m.group(2), m.group(3).strip()
        if not name.isupper():
            rules[name] = split_alternatives(body)
            continue
        terminals[name] = body
        if priority is not None:
            priorities[name] = int(priority)
        if (word := _KEYWORD.fullmatch(body)) is not None:  # a keyword, as a whole word
            strings[name] = (word.group(1),)
        elif body.startswith("/") and body.endswith("/"):
            patterns[name] = body[1:-1]
        elif re.fullmatch(r'"(?:[^"\\]|\\.)*"(?:\s*\|\s*"(?:[^"\\]|\\.)*")*', body):
            strings[name] = tuple(_unquote(s) for s in _STRING.findall(body))
    keywords = {t: s[0] for t, s in strings.items() if len(s) == 1 and _WORD.fullmatch(s[0])}
    return Grammar(rules, terminals, patterns, strings, priorities, tuple(ignored), keywords)


@lru_cache(maxsize=1)
def grammar() -> Grammar:
    """The language's grammar, read once per process."""
    return read_grammar(grammar_text())


KEYWORDS = frozenset(grammar().keywords.values())
