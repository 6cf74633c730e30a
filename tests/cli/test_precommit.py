"""`.pre-commit-hooks.yaml`, run by the real pre-commit (`try-repo`) on a repository of
specs, as a user's hook configuration would: pre-commit installs planner into a virtual
environment of its own and runs the hooks through the console script."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from planner.spec.format import format_source

ROOT = Path(__file__).resolve().parents[2]
UGLY = "graph g {op a {time 1 ms}\n  op b { time 2 ms } a -> b }\n"
BAD = "graph g {\n  op a { time 1 ms junk }\n}\n"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
                   cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.mark.skipif(importlib.util.find_spec("pre_commit") is None,
                    reason="pre-commit is not installed (pip install -e '.[test]')")
@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
@pytest.mark.skipif(not (ROOT / ".git").exists(),
                    reason="try-repo needs this checkout to be a git repository")
def test_hooks_check_and_format_specs(tmp_path: Path) -> None:
    repo = tmp_path / "specs-repo"
    repo.mkdir()
    (repo / "ugly.plan").write_text(UGLY)  # valid, not in the canonical layout
    (repo / "bad.plan").write_text(BAD)  # does not parse
    (repo / "notes.txt").write_text("graph {\n")  # not a spec: no hook looks at it
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "specs")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT),
                           "--all-files"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=900, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    check, fmt = out.split("planner check", 1)[1].split("planner fmt", 1)
    assert "Failed" in check and "bad.plan:2:25: error[E101]" in check
    assert "notes.txt" not in out
    assert "Failed" in fmt and "files were modified by this hook" in fmt
    assert "reformatted ugly.plan" in fmt
    assert (repo / "ugly.plan").read_text() == format_source(UGLY, "ugly.plan")
    assert (repo / "bad.plan").read_text() == BAD
