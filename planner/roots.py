"""Roots: the folder a path may not leave by following symlinks, for every file planner
reads or writes.

The rule, one for all of them: a path, resolved (symlinks followed at any depth), must lie
inside its root. A path's root is the nearest folder with `.git` holding it as given (the
repository a link was planted in), else its own folder. So a link in a pull request,
`times.csv -> /proc/self/environ` or `plan.json -> ~/.bashrc`, is refused before the file
is opened, while a path the user names directly (`--out /tmp/plan.json`) is taken as it is.

`--root FOLDER` (the `PLANNER_ROOT` variable, which carries it to worker processes) is a
folder links may lead into as well. Specs and their imports are held tighter: for them it
replaces the root, so that every file a spec reaches stays in that folder
(`default_root`).

Pure path arithmetic: the callers word the diagnostic (E008 for a read, E604/E622 for a
write), so this module depends on nothing but `planner.limits`.
"""

from __future__ import annotations

import os
from pathlib import Path

from .limits import ROOT_ENV


def repository_of(path: str | os.PathLike[str]) -> Path:
    """The nearest folder with `.git` holding `path` as given (not following `path` itself
    when it is a symlink), else the folder of `path` (`path` itself when it is a folder);
    resolved."""
    p = Path(os.path.abspath(path))
    start = p.parent
    try:
        start = p if p.is_dir() else p.parent
        for d in (start, *start.parents):
            if (d / ".git").exists():
                return d.resolve()
    except OSError:  # a name too long to exist: its reader says so (before: E999, OSError)
        pass
    return start.resolve()


def resolved(path: str | os.PathLike[str]) -> Path:
    """`path` absolute with its symlinks followed, as `Path.resolve()`, but a symlink loop is
    left as it is rather than raised (Python 3.11 and 3.12 raise `RuntimeError`, which
    reached users as an internal error, E999): opening it then fails with ELOOP, which the
    readers report (E003, "Too many levels of symbolic links")."""
    return Path(os.path.realpath(path))


def default_root(path: str | os.PathLike[str]) -> Path:
    """The folder a spec at `path` and its imports must stay in: `--root` when given, else
    `repository_of(path)`."""
    given = os.environ.get(ROOT_ENV)
    return Path(given).resolve() if given else repository_of(path)


def outside_root(target: Path, root: Path) -> bool:
    """Whether the resolved path `target` lies outside the folder `root`."""
    return target != root and root not in target.parents


def escaped_root(path: str | os.PathLike[str]) -> Path | None:
    """The root that `path` leaves when its symlinks are followed, or None when it stays
    inside (or is no symlink at all). A link may also lead into `--root` when it is given
    (`fmt --root ..` formats a linked spec there)."""
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):  # a NUL in the path: opening it fails and says so
        return None
    root = repository_of(path)
    given = os.environ.get(ROOT_ENV)
    if given and not outside_root(real, Path(given).resolve()):
        return None
    return root if outside_root(real, root) else None


def display_path(path: Path) -> str:
    """The path as shown in diagnostics: relative to the working directory when inside it,
    else as given (`/data/m.plan`, not `../../data/m.plan`)."""
    try:
        shown = os.path.relpath(path)
    except ValueError:  # pragma: no cover - another drive on Windows
        return str(path)
    return str(path) if shown == os.pardir or shown.startswith(os.pardir + os.sep) else shown
