"""`planner fmt` rewrites a spec where it lives: a hard-linked spec keeps its links (written
in place, after a backup: `files.write_text_keeping_links`), a symlinked one its link, and
either its mode. Before: the rename gave a hard-linked spec a new inode, and its other
name kept the old text."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from planner import files
from planner.errors import OutputError

from .helpers import invoke

UGLY = "cluster c { device gpu[0..1] { memory 1 GiB }   link gpu0 <-> gpu1 { bandwidth 1 GB/s } }\n"


def _formatted(tmp_path: Path) -> str:
    (tmp_path / "f.plan").write_text(UGLY)
    code, out, err = invoke(["fmt", "-", "--stdin-filename", "f.plan"], tmp_path,
                            UGLY.encode())
    assert code == 0 and out != UGLY, err
    (tmp_path / "f.plan").unlink()
    return out


def test_a_hard_linked_spec_keeps_its_links_and_mode(tmp_path: Path) -> None:
    want = _formatted(tmp_path)
    a, b = tmp_path / "a.plan", tmp_path / "b.plan"
    a.write_text(UGLY)
    os.link(a, b)
    a.chmod(0o640)
    inode = a.stat().st_ino
    code, out, err = invoke(["fmt", "a.plan"], tmp_path)
    assert code == 0 and out == "reformatted a.plan\n", err
    assert a.read_text() == want and b.read_text() == want  # before: b kept UGLY
    assert a.stat().st_ino == inode == b.stat().st_ino and a.stat().st_nlink == 2
    assert stat.S_IMODE(a.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.plan", "b.plan"]  # no backup


def test_a_symlinked_spec_is_formatted_at_its_target_and_stays_a_link(tmp_path: Path) -> None:
    want = _formatted(tmp_path)
    target, link = tmp_path / "t.plan", tmp_path / "s.plan"
    target.write_text(UGLY)
    target.chmod(0o604)
    link.symlink_to("t.plan")
    code, out, err = invoke(["fmt", "s.plan"], tmp_path)
    assert code == 0 and out == "reformatted s.plan\n", err
    assert link.is_symlink() and os.readlink(link) == "t.plan" and target.read_text() == want
    assert stat.S_IMODE(target.stat().st_mode) == 0o604


def _linked(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.plan", tmp_path / "b.plan"
    a.write_text(UGLY)
    os.link(a, b)
    return a, b


def test_a_failed_write_in_place_is_undone(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills half-way: the old text is written back, E623 says the file was left
    as it was, and the backup is gone."""
    a, b = _linked(tmp_path)
    real = files._write_through
    calls = []

    def full_once(target: Path, data: bytes) -> None:
        calls.append(data)
        if len(calls) == 1:
            with open(target, "r+b") as fh:
                fh.write(data[:10])
            raise OSError(errno.ENOSPC, "No space left on device")
        real(target, data)

    monkeypatch.setattr(files, "_write_through", full_once)
    with pytest.raises(OutputError) as info:
        files.write_text_keeping_links(a, "new text\n")
    assert info.value.diagnostics[0].code == "E623"
    assert "the disk is full; the file was left as it was" in info.value.diagnostics[0].message
    assert a.read_text() == b.read_text() == UGLY and a.stat().st_nlink == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.plan", "b.plan"]


def test_a_write_that_cannot_be_undone_keeps_and_names_the_backup(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, _ = _linked(tmp_path)

    def broken(target: Path, data: bytes) -> None:
        with open(target, "r+b") as fh:
            fh.write(b"half")
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(files, "_write_through", broken)
    with pytest.raises(OutputError) as info:
        files.write_text_keeping_links(a, "new text\n")
    diag = info.value.diagnostics[0]
    backups = [p for p in tmp_path.iterdir() if p.name.endswith(".bak")]
    assert diag.code == "E623" and len(backups) == 1 and backups[0].read_text() == UGLY
    assert f"its previous text is kept in `{backups[0]}`" in diag.message, diag
    assert "cp " in diag.hints[0]


def test_a_single_link_is_still_replaced_atomically(tmp_path: Path) -> None:
    """One name: a new file renamed over it, as every output is written (so a reader never
    sees it half-written)."""
    a = tmp_path / "a.plan"
    a.write_text(UGLY)
    inode = a.stat().st_ino
    files.write_text_keeping_links(a, "new text\n")
    assert a.read_text() == "new text\n" and a.stat().st_ino != inode
