"""Golden diagnostics: every `broken/NAME.plan` renders exactly `broken/NAME.expected`.

Each fixture holds one mistake. The test loads it with `load_path` from inside the
fixture folder (so paths in the output are short and stable) and compares
`render_all(diagnostics, sources)` with the golden file. `UPDATE_GOLDEN=1 pytest ...`
rewrites the golden files; review the diff by eye before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from planner.errors import Diagnostic, Span, SpecError, render_all
from planner.spec.load import load_path

BROKEN = Path(__file__).resolve().parent / "broken"
FIXTURES = sorted(p.name for p in BROKEN.glob("*.plan"))
UPDATE = os.environ.get("UPDATE_GOLDEN", "") not in ("", "0")


def _sources(diags: tuple[Diagnostic, ...]) -> dict[str, str]:
    """The text of every file a diagnostic points at, as the CLI reads it."""
    out: dict[str, str] = {}
    for d in diags:
        for span in [d.span, *(s for _, s in d.notes)]:
            if span is not None and span.file not in out and Path(span.file).is_file():
                out[span.file] = Path(span.file).read_bytes().decode("utf-8", "replace")
    return out


def _rendered(name: str) -> tuple[tuple[Diagnostic, ...], str]:
    with pytest.raises(SpecError) as info:
        load_path(name)
    diags = info.value.diagnostics
    return diags, render_all(diags, _sources(diags)) + "\n"


@pytest.mark.parametrize("name", FIXTURES)
def test_golden(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rendered diagnostics of one broken fixture match its golden file."""
    monkeypatch.chdir(BROKEN)
    diags, got = _rendered(name)
    # Every diagnostic points somewhere: file:line:col, 1-based, or a path with no line (a
    # folder: `Span.of_path`)
    for d in diags:
        assert d.span is not None, d
        assert (d.span.line >= 1 and d.span.column >= 1) or d.span == Span.of_path(
            d.span.file), d
        # ... and says how to fix it, or where the clashing first one is
        assert d.hints or d.notes, d
    golden = BROKEN / (name.removesuffix(".plan") + ".expected")
    if UPDATE:
        golden.write_text(got, encoding="utf-8")
    assert golden.is_file(), f"no golden file for {name}; run with UPDATE_GOLDEN=1"
    assert got == golden.read_text(encoding="utf-8")


def test_no_orphan_golden_files() -> None:
    """Every golden file belongs to a fixture (renamed fixtures leave none behind)."""
    stems = {n.removesuffix(".plan") for n in FIXTURES}
    orphans = [p.name for p in BROKEN.glob("*.expected") if p.stem not in stems]
    assert not orphans


def test_enough_fixtures() -> None:
    """The folder covers at least 30 fixtures and 25 distinct diagnostic codes."""
    codes = set()
    for expected in BROKEN.glob("*.expected"):
        codes.update(line.split("error[", 1)[1].split("]", 1)[0]
                     for line in expected.read_text("utf-8").splitlines() if "error[" in line)
    assert len(FIXTURES) >= 30
    assert len(codes) >= 25, sorted(codes)
