"""Output files, checked before the work and written atomically: the one place for both.

Checking (`check_outputs`). Output paths are checked before any work: a sweep or a long
solve must not end in a failed write. Every command that writes a file calls
`check_outputs` first (E604, naming each option whose path cannot be written).

Writing (`write_text_atomic`; `write_texts_atomic` for outputs written all or nothing, but
for a rename that fails once every file is written; `atomic_file` for writers that take a
file name). Write a temporary file beside the target, then rename over it. Only a regular
file is ever replaced (or a new one created), keeping its permission bits, and only one
the user may write: the rename needs only its folder writable, so a file made read-only
(`chmod 444`) would be replaced where `open` refuses; it is E622 (E604 up front). A rename
over a device, a FIFO or a folder would replace that thing itself (`--out /dev/full` as
root used to turn the device into a JSON file), so anything else is refused (E622), also
when it became so after the command's up-front check. A symlink to a regular file is
followed: the file it names is replaced and the link kept; a symlink to nothing is refused
(it would create a file wherever it points), and so is a path whose symlinks, at any
depth, lead out of its root (`planner.roots`: `plan.json -> ~/.bashrc` planted in a pull
request). A failed write (a full disk, an I/O error) leaves the target as it was, removes
the temporary file and is reported as E623; so is standard output that cannot take a
command's output (`unwritable_stdout`).

One exception, `planner fmt`'s (`write_text_keeping_links`): a spec with several hard
links is rewritten in place, not atomically, so that all its names see the new text.

Depends only on `planner.errors` and `planner.roots`: the exact models (`--emit`), plans,
rows and reports all write through it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from .errors import Diagnostic, OutputError, UsageError
from .roots import display_path, escaped_root


def same_file(path: str | os.PathLike[str]) -> object:
    """One key for each file however it is named (`t.plan`, `./t.plan`, a folder holding
    it, a symlink, a hard link): an existing file's device and inode, else the path with
    its symlinks resolved. A file named twice is checked, formatted, compared and reported
    once, and two outputs that reach one file are refused (`check_outputs`)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # not there (yet), a symlink loop: its path
        return os.path.realpath(path)
    return (st.st_dev, st.st_ino)


def resolve_target(path: str | os.PathLike[str]) -> Path:
    """The file a write to `path` replaces: symlinks followed to a regular file or to
    nothing yet. Raises `UsageError` (E622) when it is anything else."""
    target = Path(path)
    root = escaped_root(target)
    if root is not None:
        raise _refused(path, _escape_why(root), _ESCAPE_HINT)
    real = Path(os.path.realpath(target)) if target.is_symlink() else target
    try:
        st = os.stat(real)
    except FileNotFoundError:
        if real is not target:  # a planted link would make us create a file elsewhere
            raise _refused(path, "it is a symlink to a file that does not exist") from None
        return real
    except OSError as err:
        raise _refused(path, f"it cannot be reached ({err.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise _refused(path, f"it is {kind}")
    if _may_not_write(real):
        raise _refused(path, _read_only_why(st), _read_only_hint(path))
    return real


def _refused(path: str | os.PathLike[str], why: str, hint: str = (
        "outputs only replace regular files (a temporary file is renamed over them); "
        "give a file path")) -> UsageError:
    return UsageError(Diagnostic("E622", f"`{path}`: {why}; nothing was written", None,
                                 (hint,)))


def _may_not_write(path: str | os.PathLike[str]) -> bool:
    """Whether the user may not write the existing file `path` by its permissions (a file
    system mounted read-only is E623's, said so, when the write fails)."""
    if os.access(path, os.W_OK):
        return False
    try:
        return not os.statvfs(path).f_flag & os.ST_RDONLY
    except OSError:
        return True


def _read_only_why(st: os.stat_result) -> str:
    """Why a regular file the user may not write is not replaced: the rename beside it
    could replace it (its folder is writable), but a file made read-only is kept so."""
    return f"you may not write it (its mode is {stat.filemode(st.st_mode)})"


def _read_only_hint(path: str | os.PathLike[str]) -> str:
    return (f"give another path, or make it writable first if it is to be replaced: "
            f"chmod u+w {shlex.quote(str(path))}")


#: why and what to do when an output's symlinks lead out of its root (`planner.roots`)
_ESCAPE_HINT = ("outputs are not written through a symlink that leads out of the "
                "repository holding the link (its folder when there is none); give the "
                "target's own path")


def _escape_why(root: Path) -> str:
    return f"it leads outside the root `{display_path(root)}` through a symlink"


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` (UTF-8) to `path` so readers see the old file or the new, never half.

    Raises `UsageError` (E622) when `path` is not a regular file (or a symlink to one) and
    `OutputError` (E623) when the write fails; either way the target is untouched and no
    temporary file is left.
    """
    data = text.encode("utf-8")
    with atomic_file(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def write_text_keeping_links(path: str | os.PathLike[str], text: str) -> None:
    """Rewrite the existing file `path` with `text` (UTF-8), as `write_text_atomic` does, but
    for a file with several hard links: a rename would give `path` a new file and leave its
    other names the old text, so it is written in place, through its inode, and is not
    atomic: a reader may see it half-written. Its previous text is first copied to a backup
    beside it (synced); a write that fails is undone from that text and is E623 (the file
    left as it was), or, where the undoing fails too, E623 naming the backup, which is kept.
    Links, mode and owner stay as they were. `planner fmt` rewrites specs so."""
    target = resolve_target(path)
    try:
        linked = os.stat(target).st_nlink > 1
    except FileNotFoundError:
        linked = False
    if not linked:
        write_text_atomic(path, text)
        return
    backup, old = _backed_up(path, target)
    try:
        _write_through(target, text.encode("utf-8"))
    except OSError as err:
        try:
            _write_through(target, old)
        except OSError:
            raise OutputError(Diagnostic(
                "E623", f"cannot write `{path}`: {_why(err)}; it may be incomplete: its "
                f"previous text is kept in `{backup}`", None,
                (f"copy it back (cp {shlex.quote(backup)} {shlex.quote(str(path))}), free "
                 "some space, then run the command again",))) from None
        os.unlink(backup)
        raise _failed(path, err) from None
    os.unlink(backup)


def _backed_up(path: str | os.PathLike[str], target: Path) -> tuple[str, bytes]:
    """A synced copy of `target` beside it (its name) and `target`'s bytes; E623, with
    nothing left behind, where either cannot be had."""
    backup = _staged(path, ".bak")[1]
    try:
        with open(target, "rb") as fh:
            old = fh.read()
        with open(backup, "wb") as fh:
            fh.write(old)
        _sync(backup)
    except OSError as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(backup)
        raise _failed(path, err) from None
    return backup, old


def _write_through(target: Path, data: bytes) -> None:
    """`data` written over `target`'s own bytes (its inode kept), cut to its length, synced."""
    with open(target, "r+b") as fh:
        fh.write(data)
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


def write_texts_atomic(texts: Mapping[Path, str]) -> None:
    """Write each of `texts` ({path: text}, UTF-8) as `write_text_atomic` does, all or
    nothing: every temporary file is written and synced before the first is renamed into
    place, so that a failed write (E623) or a refused target (E622) leaves every target as
    it was (`export torch`'s JSON and its `--code`). Only a failed rename, once all are
    written, could leave the first renamed and not the rest."""
    staged: list[tuple[Path, Path, str]] = []
    try:
        for path, text in texts.items():
            target, tmp = _staged(path, ".tmp")
            staged.append((path, target, tmp))
            try:
                with open(tmp, "wb") as fh:
                    fh.write(text.encode("utf-8"))
                _ready(tmp, target)
            except OSError as err:
                raise _failed(path, err) from None
        for path, target, tmp in staged:
            _commit(path, target, tmp)
    except BaseException:
        for _, _, tmp in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], suffix: str = ".tmp") -> Iterator[str]:
    """The name of a new temporary file beside `path`, for a writer that takes a file name
    (`write_text_atomic`, Pyomo's LP and MPS writer, OR-Tools' model export); `suffix` ends
    the name, for writers that choose a format by it.

    When the block ends, the file is synced, given the mode of the file it replaces (that
    of a new file, 0666 less the umask, when there is none) and renamed over `path`, under
    `resolve_target`'s rules checked again at that moment. An `OSError` in the block or in
    those steps is E623; any error leaves the target untouched and removes the temporary
    file.
    """
    target, tmp = _staged(path, suffix)
    try:
        try:
            yield tmp
            _ready(tmp, target)
        except OSError as err:
            raise _failed(path, err) from None
        _commit(path, target, tmp)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _staged(path: str | os.PathLike[str], suffix: str) -> tuple[Path, str]:
    """The file a write to `path` replaces (`resolve_target`) and a new temporary file
    beside it (E623 where none can be made)."""
    target = resolve_target(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=directory)
        os.close(fd)
    except OSError as err:
        raise _failed(path, err) from None
    return target, tmp


def _ready(tmp: str, target: Path) -> None:
    """A written temporary file synced, with the mode of the file it replaces, or, when
    there is none, the one `open` gives a new file: 0666 less the umask (the temporary file
    is created 0600)."""
    _sync(tmp)
    try:
        mode = os.stat(target).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    os.chmod(tmp, mode)


def _umask() -> int:
    """The process's umask. Reading it means setting it, restored at once; set to 077
    meanwhile, so that a file another thread creates in that instant (a solver's, in its
    private temporary folder) is at worst private, never more open."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _commit(path: str | os.PathLike[str], target: Path, tmp: str) -> None:
    """Rename `tmp` over `target`, still a regular file (or nothing) at the last moment."""
    resolve_target(target)
    try:
        os.replace(tmp, target)
    except OSError as err:
        raise _failed(path, err) from None


def _sync(name: str) -> None:
    """Flush a closed file's data to the disk before it is renamed into place."""
    fd = os.open(name, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _failed(path: str | os.PathLike[str], err: OSError) -> OutputError:
    return OutputError(Diagnostic(
        "E623", f"cannot write `{path}`: {_why(err)}; the file was left as it was", None,
        ("free some space or choose another path, then run the command again",)))


def append_failed(path: str | os.PathLike[str], err: OSError, kept: str) -> OutputError:
    """E623 for an append to `path` that failed (`err`) and was cut back off (`compare
    --resume`'s file, appended row by row): `kept` says what the file still holds."""
    return OutputError(Diagnostic(
        "E623", f"cannot append to `{path}`: {_why(err)}; {kept}", None,
        ("free some space, then run the same command again: it carries on from the rows "
         "the file holds",)))


def unwritable_stdout(err: BaseException) -> Diagnostic:
    """E623 for standard output that cannot take the command's output (a full disk, an
    I/O error, a closed descriptor): what was printed is incomplete. The command line
    reports it (`cli.guard.stdout_failed`); a reader that went away is not this, but the
    quiet exit 141."""
    full = isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)
    return Diagnostic(
        "E623", f"cannot write to standard output: {_why(err)}; the output is incomplete",
        None, ("free some space, or send the output elsewhere" if full
               else "send the output to a file or a pipe that can take it",))


def _why(err: BaseException) -> str:
    """What went wrong with a write, in words."""
    if not isinstance(err, OSError):  # a closed file object (ValueError)
        return "it is closed"
    return {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
            errno.EIO: "an input/output error", errno.EROFS: "the file system is read-only",
            errno.EACCES: "permission denied", errno.EPERM: "permission denied",
            errno.EBADF: "it is closed"}.get(err.errno or 0,
                                             err.strerror or type(err).__name__)


# -- checked before the work --------------------------------------------------------------


def _problem(path: Path) -> tuple[str, str] | None:
    """Why `path` cannot be written atomically (a temporary file beside it, renamed over
    it), with a hint; None when it can."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as err:
        return f"it cannot be reached ({err.strerror})", "give a file path you can write"
    root = escaped_root(path)
    if root is not None:
        return _escape_why(root), _ESCAPE_HINT
    if st is None and path.is_symlink():
        # following it would create a file wherever the link points
        return ("it is a symlink to a file that does not exist",
                "remove the link, or give the path of a regular file")
    if st is not None and stat.S_ISDIR(st.st_mode):
        return "it is a folder", "give a file name, e.g. `" + str(path / "out") + "`"
    if st is not None and not stat.S_ISREG(st.st_mode):
        # a rename would replace the device or pipe itself
        return ("it is not a regular file",
                "give a file path; output is written to a temporary file and renamed")
    if st is not None and _may_not_write(path):
        return _read_only_why(st), _read_only_hint(path)
    parent = path.parent
    if not parent.exists():
        return f"folder `{parent}` does not exist", f"create it first: mkdir -p {parent}"
    if not parent.is_dir():
        return f"`{parent}` is not a folder", "give a path inside an existing folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return (f"folder `{parent}` is not writable",
                "give a path in a folder you can write to")
    return None


#: an output path that means standard output to many tools, and a file named `-` here
STDOUT = "-"


class FolderPath(type(Path())):  # type: ignore[misc]  # PosixPath or WindowsPath
    """A path given with a trailing separator (`out/`), which names a folder: pathlib drops
    the separator, and the write made a file of that name (`solve --out plans/` wrote a
    file `plans`). `check_outputs` refuses it as an output (E604); the CLI's output
    options read their values with `output_path`."""


def output_path(value: str) -> Path:
    """An output option's value as a path that remembers a trailing separator
    (`FolderPath`)."""
    return FolderPath(value) if value.endswith(("/", os.sep)) else Path(value)


def _names_folder(path: str | os.PathLike[str]) -> tuple[str, str] | None:
    """Why an output given with a trailing separator cannot be written, with a hint; None
    for any other."""
    shown = os.fspath(path)
    if isinstance(path, FolderPath):
        shown += "/"
    elif not shown.endswith(("/", os.sep)):
        return None
    if Path(shown).is_dir():
        return None  # `_problem`'s "it is a folder"
    return ("it ends in `/`, so it names a folder, not a file",
            "give a file name, e.g. `" + str(Path(shown) / "out") + "`")

#: an input: the option or argument that names it, and its path (None: not given)
Input = tuple[str, str | os.PathLike[str] | None]


def check_outputs(paths: Mapping[str, str | os.PathLike[str] | None],
                  inputs: Iterable[Input] = (),
                  stdout: str | None = None) -> None:
    """Raise `UsageError` naming every option whose output path cannot be written (E604:
    `-` included, which would be a file named `-`), and E640 for two options that reach
    one file, or an output that reaches one of the command's `inputs`.

    `paths` maps an option (`--out`) to its value; None (not given) is skipped. Paths are
    compared by the file they reach (symlinks followed, hard links by their inode), as the
    write would. `stdout` says how this command prints its output on standard output
    instead (`--json`), for the hint that refuses `-`.
    """
    diags = []
    seen: dict[object, Input] = {}
    read = {same_file(path): (name, path) for name, path in inputs if path is not None}
    for option, path in paths.items():
        if path is None:
            continue
        why = _dash(stdout) if str(path) == STDOUT else (
            _names_folder(path) or _problem(Path(path)))
        if why is not None:
            given = os.fspath(path) + ("/" if isinstance(path, FolderPath) else "")
            diags.append(Diagnostic("E604", f"{option} `{given}`: {why[0]}", None,
                                    (why[1],)))
        key = same_file(path)
        first, first_path = seen.setdefault(key, (option, path))
        if first != option:  # the second write would replace the first, silently
            said = (f"{first} and {option} name the same file `{path}`"
                    if str(first_path) == str(path) else
                    f"{first} `{first_path}` and {option} `{path}` reach the same file")
            diags.append(Diagnostic("E640", said, None, ("give each output a file of its own",)))
        if key in read:  # the command would replace what it reads
            name, source = read[key]
            diags.append(Diagnostic(
                "E640", f"{option} `{path}` would overwrite the input {name} `{source}`", None,
                (f"give {option} another file; the input is read, never replaced",)))
    if diags:
        raise UsageError(diags)


def _dash(stdout: str | None) -> tuple[str, str]:
    """Why `-` is refused as an output path, and what to do instead."""
    instead = f"; {stdout}" if stdout else ""
    return ("`-` is not standard output here, it would write a file named `-`",
            f"give a file path (`./-` for a file named `-`){instead}")
