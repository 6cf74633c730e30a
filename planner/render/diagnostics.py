"""Diagnostics for people: the source lines a caret points at, and text safe for a terminal.

`source_texts` reads the files diagnostics point at (only files that look like what the
diagnostic is about, so a CI log never shows a stray secret); `printable` escapes control,
bidi and zero-width characters; `eprint` writes one escaped line to stderr. The command
line's guard (errors to exit codes, the `--json` envelope) is `planner.cli.guard`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from ..errors import UNSAFE_CHARS, Diagnostic, escape_char
from ..limits import active


def source_texts(diags: Iterable[Diagnostic]) -> dict[str, str]:
    """The text of the files diagnostics point at, for caret lines.

    A spec's diagnostic may point at any file an import or a symlink named
    (`.git-credentials`), and its lines must not reach a CI log: a file is shown only if
    it starts as a spec does, or, for a placement file's diagnostic (E5xx, E949 of an
    accelerate device_map given as the placement, `diff`'s E642), as a placement JSON
    object or a stages file. An importer's diagnostic (E9xx, W9xx) shows the file the user
    asked to import as that format, when it is text (no NUL, UTF-8); a file of a binary
    format is never quoted (`_of_binary_format`), whatever it holds: a `.pt2`, and a file
    the ONNX reader reports on (a protobuf is binary even where its first bytes happen to
    decode: a small or truncated model). Lone `\r` end lines, as for the parser.
    """
    # lazy: start-up (the parser's modules load Lark; `planner --help` needs neither)
    from ..io.device_map import DEVICE_MAP_CODE
    from ..spec.lex import line_ends
    from ..spec.syntax import looks_like_spec

    cap = active().file_bytes
    out: dict[str, str] = {}
    for d in diags:
        layer = d.code[1:2]
        for span in [d.span, *(s for _, s in d.notes)]:
            if span is None or span.file in out:
                continue
            p = Path(span.file)
            try:
                if not p.is_file() or p.stat().st_size > cap:
                    continue
                raw = p.read_bytes()
            except OSError:
                continue
            # show the valid prefix so a non-UTF-8 diagnostic still gets its line
            text = raw.decode("utf-8", errors="replace")
            placement = layer == "5" or d.code in (DEVICE_MAP_CODE, "E642")
            imported = layer == "9" and not placement and not _of_binary_format(d.code,
                                                                               span.file)
            if (imported and _is_text(raw)) or looks_like_spec(text) \
                    or (placement and _looks_like_placement(text)):
                out[span.file] = line_ends(text)
    return out


def _of_binary_format(code: str, file: str) -> bool:
    """Whether an importer's `code` is about a file of a binary format: ONNX's protobuf,
    or a saved torch.export program (`.pt2`, a zip archive, whichever code: E939 is also
    a Python model file's, which is quoted). A `.pt2` that is text was quoted as if its
    first line were the fault."""
    # lazy: start-up (an importer's diagnostic comes from its command, which loaded it)
    from ..io.onnx_import import ONNX_FILE_CODES

    return code in ONNX_FILE_CODES or file.endswith(".pt2")


#: how much of a file decides whether it is text
_SNIFF = 8192


def _is_text(raw: bytes) -> bool:
    """Whether a file reads as text: no NUL and valid UTF-8 in its first 8 KiB (a character
    cut at that boundary allowed)."""
    head = raw[:_SNIFF]
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        return len(raw) > _SNIFF and err.start >= len(head) - 3 and err.reason.startswith(
            "unexpected end")
    return True


def _looks_like_placement(text: str) -> bool:
    """A placement or plan object, or a `simulate --stages` file (a list of stages or an
    object holding one)."""
    head = text.lstrip()[:1]
    return (head == "{" and ('"placement"' in text or '"stages"' in text)) or (
        head == "[" and '"ops"' in text)


def printable(text: str) -> str:
    """`text` with every character of `UNSAFE_CHARS` written as `\\uXXXX` (`\\UXXXXXXXX`
    above U+FFFF): a name from a placement file cannot recolour the terminal, reorder a
    line, fake one or hide text."""
    return UNSAFE_CHARS.sub(lambda m: escape_char(m.group()), text)


def eprint(text: str) -> None:
    """Write a line to stderr (unsafe characters escaped, see `printable`)."""
    text = printable(text)
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()
