"""Files -> parsed modules (following imports) -> lowered `Spec`.

Imports are relative to the importing file; a file imported twice is read once; an import
cycle is an error at the `import` that closes it. Unreadable input (missing file, a
directory, non-UTF-8 bytes) becomes a diagnostic at line 1, column 1 or better.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Diagnostic, DiagnosticSink, Span, SpecError
from ..model import Spec
from . import ast
from .lower import Locations, lower
from .parse import parse


@dataclass
class Loaded:
    """A loaded spec with what diagnostics need: sources by file, declaration places."""

    spec: Spec
    locations: Locations
    sources: dict[str, str] = field(default_factory=dict)
    warnings: list[Diagnostic] = field(default_factory=list)


def display_path(path: Path) -> str:
    """The path as shown in diagnostics: relative to the working directory when inside it."""
    try:
        return os.path.relpath(path)
    except ValueError:  # pragma: no cover - another drive on Windows
        return str(path)


def read_bytes(path: Path, shown: str, at: Span | None = None) -> bytes:
    """Read any input file, turning every failure into a `SpecError` (E001-E003)."""
    where = at or Span.start_of(shown)
    try:
        if path.exists() and not path.is_file() and not path.is_dir():  # /dev/zero, a FIFO
            raise SpecError(Diagnostic("E003", f"cannot read {shown}: not a regular file", where))
        data = path.read_bytes()
    except FileNotFoundError:
        raise SpecError(Diagnostic("E001", f"no such file: {shown}", where,
                                   ("check the path (imports are relative to the importing file)",)
                                   )) from None
    except IsADirectoryError:
        raise SpecError(Diagnostic("E002", f"{shown} is a directory, not a spec file", where,
                                   ("`planner check` accepts folders; other commands want a file",)
                                   )) from None
    except OSError as err:
        raise SpecError(Diagnostic("E003", f"cannot read {shown}: {err.strerror}", where)) from None
    except ValueError:  # a NUL in the path
        raise SpecError(Diagnostic("E003", f"cannot read {shown!r}: invalid path", where)) from None
    return data


def read_source(path: Path, shown: str, at: Span | None = None) -> str:
    """Read a spec file as UTF-8, turning every failure into a `SpecError` (E001-E004)."""
    data = read_bytes(path, shown, at)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        head = data[: err.start]
        line = head.count(b"\n") + 1
        col = err.start - (head.rfind(b"\n") + 1) + 1
        raise SpecError(Diagnostic(
            "E004", f"{shown} is not valid UTF-8 (byte 0x{data[err.start]:02x})",
            Span(shown, line, col, line, col + 1, err.start, err.start + 1),
            ("spec files are UTF-8 text",))) from None


class _Reader:
    """Parses a file and, depth first, everything it imports, each file once.

    A class rather than a recursive closure: a closure that calls itself is a reference
    cycle (function -> cell -> function) that kept every parsed syntax tree alive until a
    full garbage collection, about 4M objects at 100k ops.
    """

    def __init__(self) -> None:
        self.sources: dict[str, str] = {}
        self.modules: list[ast.Module] = []
        self.seen: set[Path] = set()
        self.sink = DiagnosticSink()

    def visit(self, p: Path, stack: tuple[Path, ...], at: Span | None) -> None:
        shown = display_path(p)
        sink = self.sink
        try:
            text = read_source(p, shown, at)
        except SpecError as err:
            sink.items.extend(err.diagnostics)
            return
        self.sources[shown] = text
        try:
            module = parse(text, shown)
        except SpecError as err:
            sink.items.extend(err.diagnostics)
            return
        for item in module.items:
            if not isinstance(item, ast.ImportDecl):
                continue
            try:
                target = (p.parent / item.path.text).resolve()
            except (OSError, ValueError):  # a NUL in the path, a symlink loop
                sink.error("E001", f"invalid import path {item.path.text!r}", item.path.span)
                continue
            if target in stack:
                chain = " -> ".join(display_path(s) for s in (*stack[stack.index(target):], target))
                sink.error("E005", f"import cycle: {chain}", item.path.span,
                           "remove one of these imports")
                continue
            if target not in self.seen:
                self.seen.add(target)
                self.visit(target, (*stack, target), item.path.span)
        self.modules.append(module)


def load_modules(path: str | os.PathLike[str]) -> tuple[list[ast.Module], dict[str, str]]:
    """Parse `path` and everything it imports, depth first, each file once."""
    reader = _Reader()
    try:
        root = Path(path).resolve()
    except (OSError, ValueError):
        raise SpecError(Diagnostic("E003", f"cannot read {str(path)!r}: invalid path",
                                   Span.start_of(str(path)))) from None
    reader.seen.add(root)
    if Path(path).is_dir():
        shown = display_path(root)
        reader.sink.error("E002", f"{shown} is a directory, not a spec file",
                          Span.start_of(shown),
                          "`planner check` accepts folders; other commands want a file")
    else:
        reader.visit(root, (root,), None)
    if reader.sink.has_errors:
        raise SpecError(reader.sink.items)
    return reader.modules, reader.sources


def load_path(path: str | os.PathLike[str]) -> Loaded:
    """Load a spec file with its imports into a `Loaded` (spec, places, sources)."""
    modules, sources = load_modules(path)
    return _lower(modules, sources)


def load_text(text: str, file: str = "<string>", base: str | os.PathLike[str] = ".") -> Loaded:
    """Load spec text; its imports are resolved relative to `base`."""
    module = parse(text, file)
    modules: list[ast.Module] = []
    sources = {file: text}
    for item in module.items:
        if isinstance(item, ast.ImportDecl):
            sub, subsrc = load_modules(Path(base) / item.path.text)
            sources.update(subsrc)
            for m in sub:
                if m.file not in {x.file for x in modules}:
                    modules.append(m)
    modules.append(module)
    return _lower(modules, sources)


def _lower(modules: list[ast.Module], sources: dict[str, str]) -> Loaded:
    sink = DiagnosticSink()
    spec, loc = lower(modules, sink)
    return Loaded(spec, loc, sources, [d for d in sink.items])
