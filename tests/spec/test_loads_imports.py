"""`planner.loads(text, base=...)` reads its imports as `planner.load` and the CLI read a
file's: relative to `base`, each file once however it is named, every mistake located at
its import. Before: each import was loaded apart (`load_modules` per import), so a missing
one was E001 without a place, `import ""` E002 ". is a directory", a file imported under
two names (a symlink, a hard link) E201 "defined twice", and an E008 had no place; and the
CLI read a hard-linked file twice too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import planner
from planner.errors import SpecError

CLUSTER = "cluster c2 { device d0 { memory 1 GiB } }\n"
USE = "graph g { op a { time 1 ms } }\nplan p { graph g cluster c2 }\n"


def _codes(text: str, base: Path) -> list[tuple[str, int | None, str]]:
    with pytest.raises(SpecError) as info:
        planner.loads(text, base=base, root=base)
    return [(d.code, d.span.line if d.span else None, d.message) for d in info.value.diagnostics]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.plan").write_text(CLUSTER, encoding="utf-8")
    os.symlink("c.plan", tmp_path / "sub" / "soft.plan")
    os.link(tmp_path / "sub" / "c.plan", tmp_path / "sub" / "hard.plan")
    return tmp_path


@pytest.mark.parametrize("other", ["soft.plan", "hard.plan", "./c.plan"])
def test_a_file_imported_under_two_names_is_read_once(tree: Path, other: str) -> None:
    text = f'import "sub/c.plan"\nimport "sub/{other}"\n{USE}'
    assert list(planner.loads(text, base=tree, root=tree).plans) == ["p"]
    (tree / "main.plan").write_text(text, encoding="utf-8")
    assert list(planner.load(tree / "main.plan", root=tree).plans) == ["p"]


def test_import_mistakes_are_located_at_their_import(tree: Path) -> None:
    got = _codes(f'{USE}import "sub/nope.plan"\n', tree)
    assert [(c, line) for c, line, _ in got] == [("E001", 3)]
    assert _codes('import ""\n', tree) == [("E001", 1, "an empty import path")]
    outside = _codes('\nimport "../x.plan"\n', tree / "sub")
    assert [(c, line) for c, line, _ in outside] == [("E008", 2)]


def test_a_cycle_back_through_the_files_is_e005(tree: Path) -> None:
    (tree / "a.plan").write_text('import "b.plan"\n', encoding="utf-8")
    (tree / "b.plan").write_text('import "a.plan"\n', encoding="utf-8")
    got = _codes('import "a.plan"\n', tree)
    assert [c for c, _, _ in got] == ["E005"] and "import cycle" in got[0][2]
