"""The documentation holds together: README.md is the user's manual and `docs/*.md` the
reference, one page per subject. Every relative link of those pages leads to a file that
exists, and every `#anchor` to a heading of its page (as GitHub names headings); every page
of `docs/` is reachable from the README; and the README stays a manual, not a reference.

The pages' commands and examples are run by the tests of what they show (docs/contributing.md,
"Documentation", lists them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import planner

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
#: the manual's length: what a user reads through; the reference goes to docs/
README_MAX_LINES = 600
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """`text` without its fenced blocks, whose brackets are code, not links."""
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _prose(path.read_text(encoding="utf-8")),
                              flags=re.MULTILINE):
        slug, n = _slug(heading), 1
        while slug in found:  # GitHub numbers a repeated heading
            slug = f"{_slug(heading)}-{n}"
            n += 1
        found.add(slug)
    return found


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in LINK.findall(_prose(path.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not checked offline
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    return broken


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_leads_somewhere(path: Path) -> None:
    assert broken_links(path) == []


def test_the_slugs_are_githubs() -> None:
    assert _slug("Out to torch.distributed.pipelining") == "out-to-torchdistributedpipelining"
    assert _slug("Real-world specs (`specs/`) and importers") == \
        "real-world-specs-specs-and-importers"
    assert _slug("Reading the report, from 10 to 100,000 ops") == \
        "reading-the-report-from-10-to-100000-ops"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [no](#nowhere)\n"
                    "```\n[code](not-a-link.md)\n```\n", encoding="utf-8")
    assert broken_links(page) == ["missing.md: no such file",
                                  "#nowhere: no heading #nowhere in page.md"]


def test_every_page_of_docs_is_linked_from_the_readme() -> None:
    linked = {target.split("#")[0] for target in LINK.findall(README.read_text("utf-8"))}
    missing = [p.name for p in PAGES[1:] if f"docs/{p.name}" not in linked]
    assert not missing, "link each page from the README's `## Where to read more`"


def test_the_readme_is_a_manual() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, "move reference material to a page of docs/"


@pytest.mark.parametrize("path", sorted((ROOT / "docs" / "examples").glob("*.plan")),
                         ids=lambda p: p.name)
def test_every_example_spec_loads_as_shipped(path: Path) -> None:
    """Before: mlp_pipeline.plan imported mlp_train.plan, which only a command of the docs
    wrote, so that `planner solve docs/examples/mlp_pipeline.plan` was E001 on a fresh
    clone."""
    planner.load(path)
