"""Files -> parsed modules (following imports) -> lowered `Spec`.

Imports are relative to the importing file; a file imported twice is read once; an import
cycle is an error at the `import` that closes it. Unreadable input (missing file, a
directory, too large, non-UTF-8 bytes) becomes a diagnostic at the `import` that names the
file; else at the path alone (`Span.of_path`: a folder, a file that cannot be read or is too
large has no line at fault), at no place for a missing file, at the bad byte for UTF-8.

Every file read stays inside a root (`--root`; by default the repository, the nearest
folder with `.git`, that holds the file given, else that file's folder): an import, or a
symlink, that leads out of it is refused (E008) before the file is opened, so a spec in a
pull request cannot make CI read `~/.git-credentials`. Files are read only up to the
`file_bytes` limit (E007) and chains of imports only `import_depth` files deep (E009).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .. import limits
from ..errors import (
    Diagnostic,
    DiagnosticSink,
    Severity,
    Span,
    SpecError,
    _one_line,
    did_you_mean,
)
from ..files import same_file
from ..model import Spec
from ..roots import default_root, display_path, escaped_root, outside_root, resolved
from . import ast
from .lower import Locations, lower
from .names import check_comments
from .parse import parse
from .syntax import looks_like_spec

#: a byte order mark, which some editors (Notepad, Excel's CSV) write at a file's start
BOM = "\ufeff"
#: how many of a spec's plans an E602 locates (the message names them all)
PLANS_LOCATED = 8


@dataclass
class Loaded:
    """A loaded spec with what diagnostics need: sources by file, declaration places."""

    spec: Spec
    locations: Locations
    sources: dict[str, str] = field(default_factory=dict)
    warnings: list[Diagnostic] = field(default_factory=list)

    def plan_places(self, name: str | None) -> PlanPlaces:
        """Where a report that plan `name` (`--plan`; None: the only plan) cannot be chosen
        points: a name the spec lacks is a mistake of the command line, with no place of
        its own, so the plans it could have named are the notes; with several plans and no
        name, the first plan is the place and the others are notes; a spec without plans is
        reported at its start. The caller, which knows the command, gives the code."""
        spans = self.locations.plans
        declared = tuple((f"plan `{p}` is declared here", spans[p])
                         for p in self.spec.plans if p in spans)[:PLANS_LOCATED]
        if not self.spec.plans:
            where = Span.start_of(self.spec.files[-1]) if self.spec.files else None
            return PlanPlaces(where, ("add a `plan NAME { graph G  cluster C }` block",))
        pick = f"pick a plan with --plan NAME, e.g. `--plan {next(iter(self.spec.plans))}`"
        if name is None and declared:
            return PlanPlaces(declared[0][1], (pick,), declared[1:])
        close = did_you_mean(name, self.spec.plans) if name is not None else ()
        return PlanPlaces(None, close or (pick,), declared)


class PlanPlaces(NamedTuple):
    """A plan-choice report's place, hints and notes (`Loaded.plan_places`)."""

    span: Span | None
    hints: tuple[str, ...]
    notes: tuple[tuple[str, Span], ...] = ()


def read_bytes(path: Path, shown: str, at: Span | None = None, kind: str = "spec") -> bytes:
    """Read any input file, a `kind` file (as messages name it: "spec", "plan", "times"),
    turning every failure into a `SpecError` (E001-E003, and E008 when a symlink leads it
    out of its root: see `planner.roots`)."""
    where = at or Span.of_path(shown)  # the file as a whole, not its line 1
    refuse_escape(path)
    cap = limits.active().file_bytes
    try:
        if path.exists() and not path.is_file() and not path.is_dir():  # /dev/zero, a FIFO
            raise SpecError(Diagnostic("E003", f"cannot read {shown}: not a regular file", where))
        with path.open("rb") as f:  # /proc files claim size 0: read at most cap + 1 bytes
            data = f.read(cap + 1)
        if len(data) > cap:
            raise SpecError(Diagnostic(
                "E007", f"{shown} is larger than the limit of {cap:,} bytes", where,
                (limits.raise_hint("file_bytes", path.stat().st_size, 2 * cap,
                                   lead="raise it with"),)))
    except FileNotFoundError:
        raise SpecError(_missing(path, shown, at)) from None
    except IsADirectoryError:
        raise SpecError(_folder(shown, where, kind)) from None
    except OSError as err:
        loop = (f"a symlink on its path leads back to itself: point it at the {kind} file",) \
            if err.errno == errno.ELOOP else ()
        raise SpecError(Diagnostic("E003", f"cannot read {shown}: {err.strerror}", where,
                                   loop)) from None
    except ValueError:  # a NUL in the path
        raise SpecError(Diagnostic("E003", f"cannot read {shown!r}: invalid path", where)) from None
    return data


def refuse_escape(path: Path) -> None:
    """E008, before the file is opened, for a `path` whose symlinks lead out of its root.
    It names the path as given, not its target, at the path alone (`Span.of_path`): a
    caret line would be read through the link, from the refused file."""
    root = escaped_root(path)
    if root is not None:
        shown = display_path(Path(os.path.abspath(path)))
        raise SpecError(Diagnostic(
            "E008", f"{shown} leads outside the root `{display_path(root)}` through a symlink",
            Span.of_path(shown), (
                "a file is not read through a symlink that leads out of the repository "
                "holding the link (its folder when there is none); give the target's own "
                "path",)))


def require_file(path: Path, shown: str, kind: str, hint: str) -> None:
    """For a `kind` file that something else opens (Python or torch loads a model): E008,
    E001, E002 (with `hint`, what to give instead of a folder) and E003, as `read_bytes`
    reports them, at the path alone."""
    refuse_escape(path)
    if not path.exists():
        raise SpecError(_missing(path, shown, None))
    if path.is_dir():
        raise SpecError(_folder(shown, Span.of_path(shown), kind, hint))
    if not path.is_file():
        raise SpecError(Diagnostic("E003", f"cannot read {shown}: not a regular file",
                                   Span.of_path(shown)))


def _folder(shown: str, where: Span, kind: str, hint: str | None = None) -> Diagnostic:
    """E002: folder `shown` given where a `kind` file is wanted."""
    return Diagnostic(
        "E002", f"{shown} is a directory, not {_article(kind)} {kind} file", where,
        (hint or ("`planner check` accepts folders; other commands want a file" if kind == "spec"
                  else f"give the {kind} file itself"),))


def _dangling(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a symlink to nothing (not a loop: that is ELOOP, E003)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return os.path.islink(path)
    except (OSError, ValueError):
        return False
    return False


def _missing(path: Path, shown: str, at: Span | None) -> Diagnostic:
    """E001: at the `import` that names the file, else (a file the command line gave) at no
    place in it, since there is none."""
    if _dangling(path):  # the link is there, what it names is not
        link, target = (_one_line(x) for x in (
            display_path(Path(os.path.abspath(path))), os.readlink(path)))
        return Diagnostic("E001", f"no such file: {link} is a symlink to `{target}`, which "
                          "does not exist", at,
                          ("point the link at a file, or remove it",))
    if at is not None:
        return Diagnostic("E001", f"no such file: {shown}", at,
                          ("check the path (imports are relative to the importing file)",))
    start = "" if path.is_absolute() else f" (it starts at the current folder, {Path.cwd()})"
    return Diagnostic("E001", f"no such file: {shown}", None, (f"check the path{start}",))


def read_source(path: Path, shown: str, at: Span | None = None, kind: str = "spec") -> str:
    """Read a text file (a spec, a placement or plan file, an importer's input: `kind`, as
    messages name it) as UTF-8, turning every failure into a `SpecError` (E001-E004).

    A leading byte order mark (`BOM`) is dropped, so that JSON and CSV readers never see
    it, except before a spec (`looks_like_spec`): there it is kept for `planner fmt` to
    see, whose canonical layout has none (the parsers, the formatter and `load` drop it)."""
    data = read_bytes(path, shown, at, kind)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise not_utf8("E004", shown, data, err, kind) from None
    if text.startswith(BOM) and not looks_like_spec(text):  # (it skips the marks)
        return text.lstrip(BOM)
    return text


def not_utf8(code: str, shown: str, data: bytes, err: UnicodeDecodeError,
             kind: str = "spec") -> SpecError:
    """`code` (E004 for a file, E641 for standard input) at the first byte of `data` that
    is not UTF-8, its column counted in characters as every other diagnostic's (what
    precedes it decodes): `é\\xff` is at column 2, not 3. Its hint names the `kind` of
    file: a binary file given to `diff` as a plan was told "spec files are UTF-8 text"."""
    head = data[: err.start].decode("utf-8")
    line, col = head.count("\n") + 1, len(head) - (head.rfind("\n") + 1) + 1
    return SpecError(Diagnostic(
        code, f"{shown} is not valid UTF-8 (byte 0x{data[err.start]:02x})",
        Span(shown, line, col, line, col + 1, len(head), len(head) + 1),
        (f"{kind} files are UTF-8 text",)))


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _parsed(text: str, shown: str, sink: DiagnosticSink) -> ast.Module | None:
    """`text` parsed, or None with its syntax error in `sink`, and W265 for its comments'
    hidden characters, which matter most beside an error (before: the error alone)."""
    try:
        return parse(text, shown)
    except SpecError as err:
        sink.items.extend(err.diagnostics)
        check_comments({shown: text}, sink)
        return None


class _Frame:
    """A file being read: its module and the imports still to follow."""

    __slots__ = ("imports", "module", "path")

    def __init__(self, path: Path, module: ast.Module) -> None:
        self.path = path
        self.module = module
        self.imports = iter([i for i in module.items if isinstance(i, ast.ImportDecl)])


class _Reader:
    """Parses a file and, depth first, everything it imports, each file once.

    Iterative (an explicit stack of frames), so a chain of imports as deep as the
    `import_depth` limit allows never meets Python's recursion limit. A class rather than
    a recursive closure: a closure that calls itself is a reference cycle (function ->
    cell -> function) that kept every parsed syntax tree alive until a full garbage
    collection, about 4M objects at 100k ops.
    """

    def __init__(self, root: Path) -> None:
        self.sources: dict[str, str] = {}
        self.modules: list[ast.Module] = []
        #: the files read, by `same_file` (a hard link is the file it links: before, read
        #: twice, each name's definitions E201 "defined twice")
        self.seen: set[object] = set()
        self.sink = DiagnosticSink()
        self.root = root

    def _open(self, p: Path, at: Span | None, shown: str = "") -> _Frame | None:
        shown = shown or display_path(p)
        try:
            text = read_source(p, shown, at).lstrip(BOM)
        except SpecError as err:
            self.sink.items.extend(err.diagnostics)
            return None
        self.sources[shown] = text
        module = _parsed(text, shown, self.sink)
        return None if module is None else _Frame(p, module)

    def run(self, first: Path, shown: str = "") -> None:
        """Read `first` (resolved, inside the root; named `shown`, the name it was given)
        and everything it imports (named by where they resolve)."""
        frame = self._open(first, None, shown)
        if frame is not None:
            self.follow(frame)

    def follow(self, frame: _Frame) -> None:
        """Read what `frame`'s module imports, depth first, each file once; its module,
        and theirs, join `modules` (each after the files it imports)."""
        depth_limit = limits.active().import_depth
        frames = [frame]
        on_stack = {frame.path}
        while frames:
            top = frames[-1]
            item = next(top.imports, None)
            if item is None:
                frames.pop()
                on_stack.discard(top.path)
                self.modules.append(top.module)
                continue
            target = self._target(top.path, item)
            if target is None:
                continue
            if target in on_stack:
                paths = [f.path for f in frames]
                chain = " -> ".join(display_path(s) for s in (*paths[paths.index(target):], target))
                self.sink.error("E005", f"import cycle: {chain}", item.path.span,
                                "remove one of these imports")
                continue
            identity = same_file(target)
            if identity in self.seen:
                continue
            if len(frames) >= depth_limit:
                self.sink.error(
                    "E009", f"`{display_path(top.path)}` imports `{display_path(target)}` "
                    f"deeper than {depth_limit} files in one chain of imports", item.path.span,
                    limits.raise_hint("import_depth", depth_limit + 1, 2 * depth_limit))
                continue
            self.seen.add(identity)
            opened = self._open(target, item.path.span)
            if opened is not None:
                frames.append(opened)
                on_stack.add(target)

    def _target(self, importer: Path, item: ast.ImportDecl) -> Path | None:
        """The resolved file an import names, or None (reported) when it is invalid or
        leads out of the root (directly or through a symlink)."""
        one_file = 'an import names one spec file, e.g. `import "clusters/dgx1.plan"`'
        if not item.path.text:  # it would resolve to the importer's own folder
            self.sink.error("E001", "an empty import path", item.path.span, one_file)
            return None
        try:
            target = resolved(importer.parent / item.path.text)
        except (OSError, ValueError):  # a NUL in the path
            self.sink.error("E001", f"invalid import path {item.path.text!r}", item.path.span)
            return None
        if outside_root(target, self.root):
            self.sink.error("E008", f"import of `{item.path.text}` leads outside the root "
                            f"`{display_path(self.root)}`", item.path.span,
                            "imports stay inside the repository (or the folder of the files "
                            "given); choose another with `--root FOLDER`")
            return None
        if target.is_dir():  # not `check`'s hint that folders are fine: not here
            self.sink.error("E002", f"import of `{item.path.text}` names a directory, not a "
                            "spec file", item.path.span, one_file)
            return None
        return target


def load_modules(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
                 ) -> tuple[list[ast.Module], dict[str, str]]:
    """Parse `path` and everything it imports, depth first, each file once; every file
    must be inside `root` (default: `default_root(path)`)."""
    try:
        first = resolved(path)
        base = resolved(root) if root is not None else default_root(path)
    except (OSError, ValueError):
        raise SpecError(Diagnostic("E003", f"cannot read {str(path)!r}: invalid path",
                                   Span.of_path(str(path)))) from None
    reader = _Reader(base)
    reader.seen.add(same_file(first))
    if os.path.isdir(path):  # Path.is_dir raised on a name too long to exist (E999)
        shown = display_path(first)
        reader.sink.error("E002", f"{shown} is a directory, not a spec file",
                          Span.of_path(shown),  # a folder has no line 1
                          "`planner check` accepts folders; other commands want a file")
    elif outside_root(first, base):  # a symlink that leads out, or --root elsewhere
        refuse_escape(Path(path))  # worded as for every file read through a link
        shown = display_path(Path(path))
        # the path alone: a caret line would be read through the link, from the refused
        # file (before: no span, so `check FOLDER --format github` named no file)
        reader.sink.error("E008", f"{shown} leads outside the root `{display_path(base)}`",
                          Span.of_path(shown), "the file, or a symlink's target, is not "
                          "read outside the root; choose another with `--root FOLDER`")
    elif _dangling(path):  # else read as the link's target, which has no such file
        shown = display_path(Path(os.path.abspath(path)))
        raise SpecError(_missing(Path(path), shown, Span.of_path(shown)))
    else:  # named as given: `link.plan`, not the `target.plan` it leads to
        reader.run(first, display_path(Path(os.path.abspath(path))))
    if reader.sink.has_errors:
        raise SpecError(reader.sink.reported(ordered=False))
    return reader.modules, reader.sources


def load_path(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
              ) -> Loaded:
    """Load a spec file with its imports into a `Loaded` (spec, places, sources)."""
    modules, sources = load_modules(path, root)
    return _lower(modules, sources)


def load_text(text: str, file: str = "<string>", base: str | os.PathLike[str] = ".",
              root: str | os.PathLike[str] | None = None) -> Loaded:
    """Load spec text; its imports are resolved relative to `base` and stay inside `root`
    (default: `default_root` of `base`); a leading byte order mark is dropped."""
    text = text.lstrip(BOM)
    sink = DiagnosticSink()
    module = _parsed(text, file, sink)
    if module is None:
        raise SpecError(sink.items)
    folder = Path(base)
    inside = Path(root).resolve() if root is not None else default_root(folder / "x")
    # its imports read as a file's are (before: each import loaded apart, so an E001 had no
    # place and the hint "from the current folder", a file imported under two names was
    # E201 "defined twice", and an import cycle back through the files went unseen)
    reader = _Reader(inside)
    reader.follow(_Frame(resolved(folder) / _TEXT, module))
    if reader.sink.has_errors:
        raise SpecError(reader.sink.reported(ordered=False))
    return _lower(reader.modules, {**reader.sources, file: text})


#: the name `load_text`'s text stands at in its `base` folder, for its imports alone (no
#: file of that name is read: `<` and `>` are never in a file name planner writes)
_TEXT = "<text>"


def _lower(modules: list[ast.Module], sources: dict[str, str]) -> Loaded:
    sink = DiagnosticSink()
    spec, loc = lower(modules, sink, sources)
    return Loaded(spec, loc, sources, sink.reported(ordered=False))


def spec_files(paths: Sequence[str | os.PathLike[str]]
               ) -> tuple[list[tuple[Path, bool]], list[Diagnostic]]:
    """(file, named explicitly) for each file named and each `*.plan` file under each folder
    named (sorted, recursively), each file once, shown by the first name given and named
    explicitly where any of its names is; `check`, `fmt` and `compare` alike. E006 when
    that is none: a CI gate over a folder that holds no spec (a mistyped path) must not pass
    having looked at nothing (`compare` said E619 "no plan found in the named specs").
    With W006 for each folder named that holds none beside others that do (the same
    mistake, half-hidden)."""
    found: list[tuple[Path, bool]] = []
    empty: list[Diagnostic] = []
    for given in paths:
        p = Path(given)
        # os.path.isdir, not Path.is_dir: a name too long to exist raised ENAMETOOLONG
        # (E999); as a file, its reader says it cannot be read (E003)
        if os.path.isdir(p):
            # a symlink that leads nowhere (dangling, a loop) is named too, for its reader
            # to say so (E001, E003): a CI gate over the folder passed it unread
            inside = sorted(x for x in p.rglob("*.plan") if x.is_file() or (
                x.is_symlink() and not os.path.isdir(x)))
            found.extend((f, False) for f in inside)
            if not inside:
                empty.append(Diagnostic(
                    "W006", f"no .plan files found in `{_one_line(display_path(p))}`: "
                    "nothing in it is read", None,
                    ("check the path, or leave it out",), Severity.WARNING))
        else:
            found.append((p, True))
    unique: dict[object, tuple[Path, bool]] = {}
    for f, explicit in found:  # the first name given is the one shown
        first, named = unique.get(same_file(f), (f, False))
        unique[same_file(f)] = (first, named or explicit)
    if not unique:
        shown = ", ".join(f"`{_one_line(display_path(Path(p)))}`" for p in paths[:3]) + (
            f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        raise SpecError(Diagnostic("E006", f"no .plan files found in {shown}", None,
                                   ("give files or folders that contain *.plan files",)))
    return list(unique.values()), empty
