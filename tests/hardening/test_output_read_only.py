"""An output the user may not write is refused, not replaced through the rename beside it.

Before: `planner fmt x.plan` of a file its owner had made read-only (`chmod 444`) in a
folder they may write said `reformatted x.plan`, exit 0, and replaced it (the rename needs
only the folder writable, where `open(x.plan, "w")` is refused); `solve --out` over such a
file was not refused up front either. Now: E622 at the write (exit 2, the file as it was),
E604 before any work. A file the user may write keeps its permission bits.

As root every file is writable (`open` too), so the cases run as an unprivileged user: the
test itself when it is one, else a forked child that drops to uid/gid 65534 (nobody), in a
folder of /tmp it may write (a pytest tmp_path's parents are closed to it).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from planner import files
from planner.errors import UsageError

from .runtime_support import invoke

UNFORMATTED = "cluster c {\n device gpu0 {memory 1 GiB flops 1 TFLOPS}\n}\n"
NOBODY = 65534


@pytest.fixture()
def folder() -> Iterator[Path]:
    """A folder the unprivileged user may write, with x.plan (unformatted, read-only, its
    own) and w.plan (unformatted, mode 0640, its own)."""
    path = Path(tempfile.mkdtemp(prefix="planner-ro-"))
    try:
        path.chmod(0o777)
        for name, mode in (("x.plan", 0o444), ("w.plan", 0o640)):
            (path / name).write_text(UNFORMATTED)
            (path / name).chmod(mode)
            if os.geteuid() == 0:
                os.chown(path / name, NOBODY, NOBODY)
        yield path
    finally:
        shutil.rmtree(path)


def _unprivileged(fn: Callable[[], Any]) -> Any:
    """`fn()` (a JSON value) run by a user who is not root."""
    if os.geteuid() != 0:
        return fn()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop root, run, send the result, never return to pytest
        code = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            with os.fdopen(write, "w") as out:
                json.dump(fn(), out)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as got:
        text = got.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return json.loads(text)


def test_fmt_refuses_a_read_only_file_and_rewrites_a_writable_one_keeping_its_mode(
        folder: Path) -> None:
    invoke(["fmt", "--check", "w.plan"], folder)  # its imports, while they can be read

    def fmt() -> list[Any]:
        return list(invoke(["fmt", "x.plan", "w.plan"], folder))

    code, out, err = _unprivileged(fmt)
    assert code == 2, err
    assert "error[E622]: `x.plan`: you may not write it (its mode is -r--r--r--)" in err
    assert "chmod u+w x.plan" in err and "Traceback" not in err
    assert "reformatted w.plan" in out and "x.plan" not in out
    assert (folder / "x.plan").read_text() == UNFORMATTED
    assert stat.S_IMODE((folder / "x.plan").stat().st_mode) == 0o444
    assert (folder / "w.plan").read_text() != UNFORMATTED
    assert stat.S_IMODE((folder / "w.plan").stat().st_mode) == 0o640
    assert sorted(p.name for p in folder.iterdir()) == ["w.plan", "x.plan"]


def test_an_output_over_a_read_only_file_is_refused_before_the_work_and_at_the_write(
        folder: Path) -> None:
    target = folder / "x.plan"

    def refusals() -> list[str]:
        said = []
        for write in (lambda: files.check_outputs({"--out": target}),
                      lambda: files.write_text_atomic(target, "{}\n")):
            try:
                write()
            except UsageError as err:
                said.append(f"{err.diagnostics[0].code} {err.diagnostics[0].message}")
        return said

    assert _unprivileged(refusals) == [
        f"E604 --out `{target}`: you may not write it (its mode is -r--r--r--)",
        f"E622 `{target}`: you may not write it (its mode is -r--r--r--); nothing was written"]
    assert target.read_text() == UNFORMATTED
