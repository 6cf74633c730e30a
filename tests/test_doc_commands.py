"""Every fenced shell block of README.md and docs/*.md is run by a test: the ones no other
test runs are run here, as written, in a copy of the checkout's specs; the others are named
below with the test file that runs them, and that file must read their page. Install
commands (`pip install`, `python -m venv`) and the test command itself are CI's: `.ci/run`
installs the package and runs the README's test command on a fresh machine."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```(?:bash|sh|shell|console)\n(.*?)```", re.DOTALL)

#: (page, the block's first command, up to its first space after `planner X`) -> the test
#: file that runs the block (slow: a 24-layer model, or torch)
ELSEWHERE = {
    ("README.md", "planner generate transformer --layers 24 --hidden 1024 --heads 16 --seq 512 "
     "--batch 4 --vocab 50257 --training --name gpt24 --cluster specs/clusters/small4.plan"):
        "tests/pipeline/test_real_graphs.py",
    ("README.md", "planner generate transformer --layers 24 --hidden 1024 --heads 16 --seq 512 "
     "--batch 4 --vocab 50257 --training --name gpt24 --cluster specs/clusters/two-nodes.plan"):
        "tests/pipeline/test_hybrid.py",
    ("docs/pytorch.md", "planner import torch docs/examples/torch_mlp.py:model --input 32x256"):
        "tests/io/test_torch_readme.py",
    ("docs/pytorch.md", "planner import torch docs/examples/hf_gpt2.py:model"):
        "tests/io/test_torch_readme.py",
    ("docs/pytorch.md", "planner import torch docs/examples/torch_mlp.py:model --input 8x256"):
        "tests/io/test_torch_pipeline.py",
}
#: what CI runs itself on a fresh machine (`.ci/run`), never a test
CI_ONLY = re.compile(r"^(python3\.11 -m venv|\. \.venv/bin/activate|pip install|python -m pytest)")


def _blocks() -> list[tuple[str, list[str]]]:
    """(page, its commands) per fenced shell block; `a && b` is two commands."""
    out = []
    for page in PAGES:
        for block in BLOCK.findall((ROOT / page).read_text(encoding="utf-8")):
            lines = [ln.strip() for ln in block.splitlines()
                     if ln.strip() and not ln.strip().startswith("#")]
            out.append((page, [c.strip() for ln in lines for c in ln.split(" && ")]))
    return out


def _elsewhere(page: str, commands: list[str]) -> str | None:
    return next((test for (p, first), test in ELSEWHERE.items()
                 if p == page and commands[0].startswith(first)), None)


def _ours() -> list[tuple[str, list[str]]]:
    """The blocks this file runs: neither elsewhere nor CI's alone."""
    out = []
    for page, commands in _blocks():
        mine = [c for c in commands if not CI_ONLY.match(c)]
        if mine and _elsewhere(page, commands) is None:
            out.append((page, mine))
    return out


def test_every_block_is_run_here_elsewhere_or_by_ci() -> None:
    blocks = _blocks()
    assert len(blocks) >= 9, "the pages lost their examples"
    for page, commands in blocks:
        test = _elsewhere(page, commands)
        if test is not None:
            source = (ROOT / test).read_text(encoding="utf-8")
            assert page.removeprefix("docs/") in source, (page, test)
        else:
            assert all(CI_ONLY.match(c) or c.startswith(("planner ", "printf ", "python docs/"))
                       for c in commands), (page, commands)
    # every entry of ELSEWHERE still names a block: a rewritten example cannot drop out
    found = {(p, first) for (p, first) in ELSEWHERE
             if any(p == page and cs[0].startswith(first) for page, cs in blocks)}
    assert found == set(ELSEWHERE)


@pytest.mark.slow
@pytest.mark.parametrize(("page", "commands"), _ours(),
                         ids=[f"{p}:{c[0][:40]}" for p, c in _ours()])
def test_the_block_runs_as_written(page: str, commands: list[str], tmp_path: Path) -> None:
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    (tmp_path / ".git").mkdir()  # the root of the specs' imports, as in a checkout
    planner = f"{shlex.quote(sys.executable)} -m planner"
    for command in commands:
        line = planner + command.removeprefix("planner") if command.startswith("planner ") \
            else command
        proc = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True,
                              text=True, check=False, env={**os.environ, "COLUMNS": "140"})
        assert proc.returncode == 0, (page, command, proc.stderr[-2000:])
    # the files the block names as outputs exist (a trace, a table, a spec)
    for command in commands:
        for out in re.findall(r"(?:--trace|--out|-o) (\S+)", command):
            assert (tmp_path / out).is_file(), (page, command, out)
