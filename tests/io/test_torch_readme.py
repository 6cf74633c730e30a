"""The README's "From PyTorch and back" example runs as written, and shows what it prints."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed (pip install 'planner[torch]')")

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## From PyTorch and back")
    return text[start:text.index("\n## ", start + 1)]


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", _section(), re.DOTALL)


def test_the_readme_example_runs(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "docs" / "examples", tmp_path / "docs" / "examples")
    (commands,) = _blocks("sh")
    outputs = []
    for line in commands.strip().splitlines():
        words = shlex.split(line)
        if words[0] == "planner":
            words = [sys.executable, "-m", "planner", *words[1:]]
        else:
            assert words[0] == "python"
            words[0] = sys.executable
        result = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True,
                                timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                check=False)
        assert result.returncode == 0, f"{line}\n{result.stderr}"
        outputs.append(result.stdout)
    assert "outputs equal eager: True" in outputs[-1]
    assert "copies [('3', 'gpu1')]" in outputs[-1] and '# [("3", "gpu1")]' in _section()
    placed = (tmp_path / "placed.py").read_text()
    shown = next(b for b in _blocks("python") if b.startswith("def forward"))
    for line in shown.splitlines():
        if line.strip() != "...":
            assert line in placed.splitlines()
