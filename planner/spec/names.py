"""Names a person can trust: no invisible, reordering or look-alike characters.

A quoted name may hold any Unicode text, so without rules a spec could declare `gpu0` and
`gрu0` (Cyrillic `р`) as two devices, or name an op with a newline and a fake "checked
1 file(s): ok" line, or reverse the rest of a terminal line with U+202E. The rules, each
a located error:

- E261: not empty; no control character (tab and newline included), format character (bidi
  controls, zero-width joiners), line separator, unassigned, private-use or surrogate
  code point, and no space but U+0020;
- E264: the name is in NFKC form (`ﬁ` is written `fi`, full-width `ｇ` as `g`), so one
  name has one spelling;
- E262: Latin letters do not mix with Cyrillic or Greek ones in one name;
- E263: a name whose Latin look-alike skeleton (Cyrillic and Greek letters that look
  Latin, mapped to those) equals another name of the spec must equal it.

Comments may hold any text, but one holding a control, bidi or zero-width character is
W265 (as compilers warn about "Trojan Source"): such a character can make a line read
differently in review than the parser reads it.

Letters of any script remain valid (`"aé"`, `"层1"`). Bare names are ASCII by the grammar,
so only quoted names with non-ASCII or non-printable characters are looked at, and a
file of plain ASCII without escapes is not walked at all.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence

from ..errors import DiagnosticSink, Span
from . import ast

#: Cyrillic and Greek letters that look like Latin ones, to the Latin letter (the
#: single-letter cases of Unicode's confusables.txt for these scripts, a subset)
_LOOKALIKE = str.maketrans(
    "аВсеһіјКкМНОорԛѕТԝхуЅІЈАЕРСХУԁɡ"
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοικνρτυχ",
    "aBcehijKkMHOopqsTwxySIJAEPCXYdg"
    "ABEZHIKMNOPTYXoikvptux",
)
_MIXED = ("CYRILLIC", "GREEK")
_ALLOWED_SPACE = " "
_NOWHERE = Span("<name>")


def check_names(modules: Sequence[ast.Module], sink: DiagnosticSink,
                sources: Mapping[str, str] | None = None) -> None:
    """Report every quoted name of `modules` that breaks a rule of the module docstring.

    `sources` (file -> text), when it holds every module's text, spares the walk over
    the names of a file of plain ASCII without escapes: no name of it can break a rule.
    """
    every = modules
    if sources is not None:
        check_comments(sources, sink)
        modules = [m for m in modules if not _plain_file(sources.get(m.file))]
    odd = [n for m in modules for n in _names(m) if n.quoted and not _plain(n.text)]
    if not odd:
        return
    plain = {n.text for m in every for n in _names(m)}  # names with no look-alike
    plain = {t for t in plain if t.translate(_LOOKALIKE) == t}
    reported: set[str] = set()
    for n in odd:
        twin = n.text.translate(_LOOKALIKE)
        if twin == n.text or twin not in plain:
            _check_one(n, sink)
        elif n.text not in reported:  # E263 says what E262 would, and which name is meant
            reported.add(n.text)
            sink.error("E263", f"name `{_shown(n.text)}` looks like `{_shown(twin)}` but is a "
                       "different name", n.span, f"its look-alike letters: {_odd_letters(n.text)}",
                       f"write `{_shown(twin)}` if that is meant")


#: what a comment may not hold unwarned: C0 and C1 controls but tab, bidi and zero-width
#: formatting, line and paragraph separators, the other invisible format characters
#: (Mongolian vowel separator, invisible operators, interlinear annotation) and the tag
#: block U+E0000-U+E007F (invisible copies of ASCII: text a reviewer cannot see, the
#: "ASCII smuggling" of prompts)
_HIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f"
                     "\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]")
#: a line end, as the parser counts them (`\r\n`, a lone `\r`, `\n`)
_LINE_BREAK = re.compile("\r\n|\r|\n")
#: on one line: a quoted name (to its closing quote, else the line's end) or a `#`
_QUOTED_OR_HASH = re.compile(r'"(?:[^"\\\r\n]|\\.)*"?|#')


def _in_comment(head: str) -> bool:
    """Whether a line that starts with `head` is in a comment after it: a `#` outside
    quoted names (`op "a#b"` starts none)."""
    return any(m.group() == "#" for m in _QUOTED_OR_HASH.finditer(head))


def check_comments(sources: Mapping[str, str], sink: DiagnosticSink) -> None:
    """W265 at the first hidden character of each comment line of each file (a character
    after a `#` on its line; in a name it is E261 already). Linear in the text."""
    for file, text in sources.items():
        line_no, start, warned = 1, 0, 0
        breaks = _LINE_BREAK.finditer(text)
        next_break = next(breaks, None)
        for found in _HIDDEN.finditer(text):
            at = found.start()
            if at == 0 and found.group() == "\ufeff":
                continue  # a byte order mark
            while next_break is not None and next_break.end() <= at:
                line_no, start = line_no + 1, next_break.end()
                next_break = next(breaks, None)
            if warned == line_no or not _in_comment(text[start:at]):
                continue
            warned = line_no
            column = at - start + 1
            sink.warning("W265", f"a comment holds U+{ord(found.group()):04X} "
                         f"({_char_name(found.group())})",
                         Span(file, line_no, column, line_no, column + 1),
                         "such characters can make a line read differently in review than "
                         "planner reads it; remove it")


def _char_name(char: str) -> str:
    """A character's Unicode name, or what it is when it has none (a control character,
    an unassigned code point such as U+E0000)."""
    if name := unicodedata.name(char, ""):
        return name
    return "a control character" if unicodedata.category(char) == "Cc" else "an unnamed code point"


def valid_name(text: str) -> bool:
    """Whether `text` keeps the rules that concern one name alone (E261, E264, E262)."""
    return name_problem(text) is None


def name_problem(text: str) -> tuple[str, tuple[str, ...]] | None:
    """The first rule that concerns one name alone (E261, E264, E262) that `text` breaks,
    as its message and hints (an importer reports it at its own input), or None."""
    found = name_rule(text)
    return (found[1], found[2]) if found is not None else None


def name_rule(text: str) -> tuple[str, str, tuple[str, ...]] | None:
    """`name_problem` with the rule's code first: (code, message, hints), or None."""
    if _plain(text):
        return None
    sink = DiagnosticSink()
    _check_one(ast.Name(text, True, _NOWHERE), sink)
    return (sink.items[0].code, sink.items[0].message, sink.items[0].hints) \
        if sink.items else None


def skeleton(text: str) -> str:
    """`text` with its Cyrillic and Greek look-alikes of Latin letters made Latin (E263)."""
    return text.translate(_LOOKALIKE)


def _plain_file(text: str | None) -> bool:
    return (text is not None and text.isascii() and "\\" not in text and "\x7f" not in text
            and '""' not in text)


def _plain(text: str) -> bool:
    return text.isascii() and text.isprintable() and text != ""


def _check_one(n: ast.Name, sink: DiagnosticSink) -> None:
    text = n.text
    if not text:  # it would print as nothing: an empty CSV cell, ``, a blank row
        sink.error("E261", "a name may not be empty", n.span,
                   "give it a name of one character or more, quoted as `\"a\"` or bare")
        return
    for ch in text:
        if not _valid_char(ch):
            sink.error("E261", f"name `{_shown(text)}` contains {_describe(ch)}", n.span,
                       "names may not hold control, formatting (bidi, zero-width) or "
                       "invisible characters")
            return
    if not unicodedata.is_normalized("NFKC", text):
        sink.error("E264", f"name `{_shown(text)}` is not in Unicode NFKC form", n.span,
                   f"write it `{_shown(unicodedata.normalize('NFKC', text))}`")
        return
    scripts = {_script(ch) for ch in text if ch.isalpha()}
    if "LATIN" in scripts and scripts & set(_MIXED):
        sink.error("E262", f"name `{_shown(text)}` mixes Latin with "
                   f"{' and '.join(s.title() for s in _MIXED if s in scripts)} letters", n.span,
                   f"the non-Latin letters: {_odd_letters(text)}",
                   "write every letter of a name in one script")


def _valid_char(ch: str) -> bool:
    cat = unicodedata.category(ch)
    if cat[0] == "C" or cat in ("Zl", "Zp"):  # Cc Cf Cs Co Cn, line separators
        return False
    return cat != "Zs" or ch == _ALLOWED_SPACE


def _script(ch: str) -> str:
    return unicodedata.name(ch, "?").split(" ", 1)[0]


def _describe(ch: str) -> str:
    return f"U+{ord(ch):04X} ({unicodedata.name(ch, unicodedata.category(ch))})"


def _odd_letters(text: str) -> str:
    return ", ".join(_describe(ch) for ch in dict.fromkeys(text)
                     if ch.isalpha() and _script(ch) != "LATIN")


def _shown(text: str) -> str:
    """A name as a message quotes it: every character that is not plain printable is
    written `\\uXXXX`, so the message itself is safe to print."""
    return "".join(ch if ch.isprintable() and _valid_char(ch) else f"\\u{ord(ch):04x}"
                   for ch in text) if not _plain(text) else text


def _names(module: ast.Module) -> Iterator[ast.Name]:
    """Every name of a module: declared, referenced, selectors and name values."""
    for item in module.items:
        if isinstance(item, ast.ImportDecl):
            continue
        yield item.name
        if isinstance(item, ast.ClusterDecl):
            for d in item.devices:
                yield d.ref.name
                yield from _attr_names(d.attrs)
            for lk in item.links:
                for r in (*lk.srcs, *lk.dsts):
                    yield r.name
        elif isinstance(item, ast.GraphDecl):
            for g in item.items:
                if isinstance(g, ast.OpDecl):
                    yield g.name
                    if g.attrs:
                        yield from _attr_names(g.attrs)
                elif isinstance(g, ast.ChainDecl):
                    yield from g.names
                else:
                    yield from g.ops
                    if isinstance(g, ast.TieDecl):  # its `weight`, a name as any other
                        yield from _attr_names(g.attrs)
        else:
            for p in item.items:
                if isinstance(p, ast.PinDecl):
                    yield from p.ops
                    yield p.device
                elif p.value.name is not None:
                    yield p.value.name


def _attr_names(attrs: Sequence[ast.Attr]) -> Iterator[ast.Name]:
    for a in attrs:
        if a.selector is not None:
            yield a.selector
        if a.value.name is not None:
            yield a.value.name
