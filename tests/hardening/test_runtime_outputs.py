"""Outputs replace only regular files, and a failed write leaves the target untouched.

Before: `planner solve small.plan --out /dev/full` (as root) was refused up front, but the
writer itself renamed over whatever the path was when it wrote (a device, a FIFO), and a
symlink to a regular file was replaced by a plain file.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner import files
from planner.errors import OutputError, UsageError

from .runtime_support import SMALL, invoke

#: every command that writes a file, with the option that names it
WRITERS = [
    ["solve", "s.plan", "--algo", "heft", "--out"],
    ["solve", "s.plan", "--algo", "heft", "--html"],
    ["solve", "s.plan", "--algo", "heft", "--trace"],
    ["solve", "s.plan", "--algo", "ilp", "--emit"],
    ["compare", "s.plan", "--algos", "heft", "--executor", "inline", "--out"],
    ["compare", "s.plan", "--algos", "heft", "--executor", "inline", "--html"],
    ["export", "json", "s.plan", "-o"],
    ["generate", "gnmt", "--layers", "1", "--seq", "2", "-o"],
    ["import", "json", "s.plan", "-o"],
]


@pytest.fixture()
def spec_dir(tmp_path: Path) -> Path:
    (tmp_path / "s.plan").write_text(SMALL)
    return tmp_path


@pytest.mark.parametrize("how", ["fifo", "symlink to a fifo", "symlink to a folder",
                                 "symlink to nothing"])
@pytest.mark.parametrize("args", WRITERS, ids=lambda a: " ".join(a[:2]) + " " + a[-1])
def test_a_non_regular_output_is_a_usage_error_and_stays_what_it_was(
        spec_dir: Path, args: list[str], how: str) -> None:
    os.mkfifo(spec_dir / "pipe")
    (spec_dir / "folder").mkdir()
    target = spec_dir / "out"
    if how == "fifo":
        target = spec_dir / "pipe"
    elif how == "symlink to nothing":
        target.symlink_to("elsewhere/created.json")
        (spec_dir / "elsewhere").mkdir()
    else:
        target.symlink_to("pipe" if "fifo" in how else "folder")
    code, _, err = invoke([*args, target.name], spec_dir)
    assert code == 2, err
    assert "error[E604]" in err, err  # not the option parser's own, without code or hint
    assert stat.S_ISFIFO(os.stat(spec_dir / "pipe").st_mode)
    assert (spec_dir / "folder").is_dir() and not any((spec_dir / "folder").iterdir())
    assert not (spec_dir / "elsewhere" / "created.json").exists()
    assert not [p for p in spec_dir.iterdir() if p.name.endswith(".tmp")]


def test_the_writer_itself_refuses_what_became_non_regular_after_the_check(
        tmp_path: Path) -> None:
    fifo = tmp_path / "late"
    os.mkfifo(fifo)
    with pytest.raises(UsageError) as err:
        files.write_text_atomic(fifo, "{}\n")
    assert err.value.diagnostics[0].code == "E622"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["late"]


def test_a_symlink_to_a_regular_file_is_written_through_and_kept(spec_dir: Path) -> None:
    (spec_dir / "real.json").write_text("old\n")
    (spec_dir / "link.json").symlink_to("real.json")
    code, _, err = invoke(["solve", "s.plan", "--algo", "heft", "--out", "link.json"],
                          spec_dir)
    assert code == 0, err
    assert (spec_dir / "link.json").is_symlink()
    assert '"placement"' in (spec_dir / "real.json").read_text()


#: a file each writer writes, by its option; the exact models' writers take a file name
#: (Pyomo's, OR-Tools') and write through `files.atomic_file` as the others do
OUTPUTS = [
    (["solve", "s.plan", "--algo", "heft", "--out"], "p.json"),
    (["solve", "s.plan", "--algo", "heft", "--html"], "p.html"),
    (["solve", "s.plan", "--algo", "heft", "--trace"], "p.trace.json"),
    (["solve", "s.plan", "--algo", "ilp", "--time-limit", "5", "--emit"], "m.lp"),
    (["solve", "s.plan", "--algo", "ilp", "--time-limit", "5", "--emit"], "m.mps"),
    (["solve", "s.plan", "--algo", "cpsat", "--time-limit", "5", "--emit"], "m.pbtxt"),
]


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EIO])
@pytest.mark.parametrize(("args", "name"), OUTPUTS, ids=[name for _, name in OUTPUTS])
def test_a_failed_write_is_a_diagnostic_and_leaves_the_target_and_no_temp_file(
        spec_dir: Path, monkeypatch: pytest.MonkeyPatch, number: int, args: list[str],
        name: str) -> None:
    (spec_dir / name).write_text("old\n")

    def full(fd: int) -> None:
        raise OSError(number, os.strerror(number))

    monkeypatch.setattr(files.os, "fsync", full)
    code, _, err = invoke([*args, name], spec_dir)
    assert code == 4, err
    assert "error[E623]" in err and "Traceback" not in err
    assert (spec_dir / name).read_text() == "old\n"
    assert sorted(p.name for p in spec_dir.iterdir()) == sorted([name, "s.plan"])


@pytest.fixture(params=[0o022, 0o077, 0o002], ids=["umask022", "umask077", "umask002"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The process's umask set to the parameter for the test, then restored."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


@pytest.mark.parametrize(("args", "name"), OUTPUTS, ids=[name for _, name in OUTPUTS])
def test_a_new_output_has_the_umask_s_mode_and_a_replaced_one_keeps_its_own(
        spec_dir: Path, args: list[str], name: str, umask: int) -> None:
    # the temporary file is created private (0600); the rename must not make the output so
    # under umask 022, nor readable by others under 077 (before: 0644 whatever the umask)
    code, _, err = invoke([*args, name], spec_dir)
    assert code == 0, err
    assert stat.S_IMODE(os.stat(spec_dir / name).st_mode) == 0o666 & ~umask
    os.chmod(spec_dir / name, 0o640)
    code, _, err = invoke([*args, name], spec_dir)
    assert code == 0, err
    assert stat.S_IMODE(os.stat(spec_dir / name).st_mode) == 0o640
    assert sorted(p.name for p in spec_dir.iterdir()) == sorted([name, "s.plan"])


@pytest.mark.parametrize("args", [
    ["generate", "gnmt", "--layers", "2", "--seq", "2", "-o", "g.plan"],
    ["export", "json", "s.plan", "-o", "g.plan"],
    ["compare", "s.plan", "--algos", "heft", "--executor", "inline", "--out", "g.plan.csv"],
], ids=lambda a: " ".join(a[:2]))
def test_every_writer_gives_a_new_file_the_umask_s_mode(spec_dir: Path, args: list[str],
                                                        umask: int) -> None:
    code, _, err = invoke(args, spec_dir)
    assert code == 0, err
    new = [p for p in spec_dir.iterdir() if p.name.startswith("g.plan")]
    assert [stat.S_IMODE(os.stat(p).st_mode) for p in new] == [0o666 & ~umask]


def test_outputs_written_together_get_the_umask_s_mode(tmp_path: Path, umask: int) -> None:
    files.write_texts_atomic({tmp_path / "a.json": "{}", tmp_path / "a.py": "pass\n"})
    assert {stat.S_IMODE(os.stat(p).st_mode) for p in tmp_path.iterdir()} == {0o666 & ~umask}


def test_a_write_error_from_the_library_is_an_output_error(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "replace", failing)
    with pytest.raises(OutputError) as err:
        files.write_text_atomic(tmp_path / "x.txt", "data")
    assert "disk is full" in err.value.diagnostics[0].message
    assert list(tmp_path.iterdir()) == []


def test_the_writer_refuses_a_symlink_to_nothing(tmp_path: Path) -> None:
    (tmp_path / "out.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(UsageError) as err:
        files.write_text_atomic(tmp_path / "out.json", "{}\n")
    assert err.value.diagnostics[0].code == "E622"
    assert not (tmp_path / "elsewhere.json").exists()
