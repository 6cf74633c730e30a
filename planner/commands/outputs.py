"""Output paths are checked before any work: a sweep or a long solve must not end in a
failed write. Every command that writes a file calls `check_outputs` first."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import Diagnostic, UsageError


def _problem(path: Path) -> tuple[str, str] | None:
    """Why `path` cannot be written atomically (a temporary file beside it, renamed over
    it), with a hint; None when it can."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as err:
        return f"it cannot be reached ({err.strerror})", "give a file path you can write"
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
    parent = path.parent
    if not parent.exists():
        return f"folder `{parent}` does not exist", f"create it first: mkdir -p {parent}"
    if not parent.is_dir():
        return f"`{parent}` is not a folder", "give a path inside an existing folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return (f"folder `{parent}` is not writable",
                "give a path in a folder you can write to")
    return None


def check_outputs(paths: dict[str, Path | None]) -> None:
    """Raise `UsageError` E604 naming every option whose output path cannot be written.

    `paths` maps an option (`--out`) to its value; None (not given) is skipped.
    """
    diags = []
    for option, path in paths.items():
        if path is None:
            continue
        why = _problem(Path(path))
        if why is not None:
            diags.append(Diagnostic("E604", f"{option} `{path}`: {why[0]}", None,
                                    (why[1],)))
    if diags:
        raise UsageError(diags)
