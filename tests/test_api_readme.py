"""The README's `## Python API` section is executable documentation: its examples run here
with `doctest`, so an example that stops working, or whose output changes, fails."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _section(text: str, title: str = "## Python API") -> tuple[str, int]:
    """The section's text and the README line it starts on."""
    start = text.index(f"\n{title}\n") + 1
    end = text.find("\n## ", start)
    return text[start:end if end >= 0 else len(text)], text.count("\n", 0, start)


def _run(section: str, line: int) -> doctest.TestResults:
    test = doctest.DocTestParser().get_doctest(section, {}, "README.md", str(ROOT / "README.md"),
                                               line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    return runner.summarize(verbose=False)


@pytest.fixture()
def readme(monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    monkeypatch.chdir(ROOT)  # examples name files relative to the repository
    return _section((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_python_api_examples_run_as_written(readme: tuple[str, int]) -> None:
    section, line = readme
    results = _run(section, line)
    assert results.attempted >= 30, "the section lost its examples"
    assert results.failed == 0, "an example of README.md's `## Python API` fails (see above)"


def test_a_changed_output_would_fail(readme: tuple[str, int]) -> None:
    section, line = readme
    broken = section.replace("{'input': 'gpu0', 'left': 'gpu1'", "{'input': 'gpu1', 'left': 'gpu1'")
    assert broken != section
    assert _run(broken, line).failed == 1
