"""The Python API's documentation is executable: the examples of docs/python-api.md and of
the README's `## Python API` section run here with `doctest`, so an example that stops
working, or whose output changes, fails."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "python-api.md"


def _section(text: str, title: str = "## Python API") -> tuple[str, int]:
    """The section's text and the line it starts on."""
    start = text.index(f"\n{title}\n") + 1
    end = text.find("\n## ", start)
    return text[start:end if end >= 0 else len(text)], text.count("\n", 0, start)


def _run(section: str, line: int, path: Path = GUIDE) -> doctest.TestResults:
    test = doctest.DocTestParser().get_doctest(section, {}, path.name, str(path), line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    return runner.summarize(verbose=False)


@pytest.fixture()
def guide(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(ROOT)  # examples name files relative to the repository
    return GUIDE.read_text(encoding="utf-8")


def test_the_python_api_examples_run_as_written(guide: str) -> None:
    results = _run(guide, 0)
    assert results.attempted >= 30, "the guide lost its examples"
    assert results.failed == 0, "an example of docs/python-api.md fails (see above)"


def test_the_readmes_example_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    readme = ROOT / "README.md"
    section, line = _section(readme.read_text(encoding="utf-8"))
    results = _run(section, line, readme)
    assert results.attempted >= 3, "the README's `## Python API` lost its example"
    assert results.failed == 0, "the example of README.md's `## Python API` fails (see above)"


def test_a_changed_output_would_fail(guide: str) -> None:
    broken = guide.replace("{'input': 'gpu0', 'left': 'gpu1'", "{'input': 'gpu1', 'left': 'gpu1'")
    assert broken != guide
    assert _run(broken, 0).failed == 1
