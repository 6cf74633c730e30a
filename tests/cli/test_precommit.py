"""The pre-commit hooks, run by the real pre-commit on a repository of specs: the README's
`.pre-commit-config.yaml` snippet as written (a `repo: local` configuration that runs the
installed planner), and `.pre-commit-hooks.yaml` through `try-repo`, as a configuration
naming this repository would (pre-commit installs planner into a virtual environment of its
own and runs the hooks through the console script)."""

from __future__ import annotations

import importlib.util
import os
import re
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
@pytest.mark.slow
def test_hooks_check_and_format_specs(tmp_path: Path) -> None:
    repo = _specs_repo(tmp_path)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           **_quick_install_env()}
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT),
                           "--all-files"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=900, check=False)
    _hooks_did_their_work(repo, proc)


def _quick_install_env() -> dict[str, str]:
    """Settings that make try-repo's install of planner and its dependencies cheaper, not
    different: pip skips byte-compiling them (20 s of CPU; Python compiles what the hooks
    import), and the throw-away store (its own temporary folder, ~600 MB) lives in memory
    where there is room (writing and removing it on a busy disk takes minutes)."""
    # PIP_COMPILE=0, not PIP_NO_COMPILE=1: pip reads the latter as `compile = True`
    env = {"PIP_COMPILE": "0"}
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 4 << 30:
        env["TMPDIR"] = str(shm)
    return env


def _specs_repo(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    """A git repository holding a spec to format, one that does not parse, a file that is
    no spec, and `files`, all committed."""
    repo = tmp_path / "specs-repo"
    repo.mkdir()
    (repo / "ugly.plan").write_text(UGLY)  # valid, not in the canonical layout
    (repo / "bad.plan").write_text(BAD)  # does not parse
    (repo / "notes.txt").write_text("graph {\n")  # not a spec: no hook looks at it
    for name, text in (files or {}).items():
        (repo / name).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "specs")
    return repo


def _hooks_did_their_work(repo: Path, proc: subprocess.CompletedProcess[str]) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    check, fmt = out.split("planner check", 1)[1].split("planner fmt", 1)
    assert "Failed" in check and "bad.plan:2:25: error[E101]" in check
    assert "notes.txt" not in out
    assert "Failed" in fmt and "files were modified by this hook" in fmt
    assert "reformatted ugly.plan" in fmt
    assert (repo / "ugly.plan").read_text() == format_source(UGLY, "ugly.plan")
    assert (repo / "bad.plan").read_text() == BAD


def _readme_precommit_config() -> str:
    """The `.pre-commit-config.yaml` that docs/ci.md gives, as written there."""
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    section = page.split("**pre-commit.**", 1)[1]
    found = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert found is not None, "the pre-commit section of docs/ci.md has no yaml snippet"
    return found.group(1)


def test_readme_snippet_names_no_tag_or_placeholder() -> None:
    config = _readme_precommit_config()
    assert "rev:" not in config and "OWNER" not in config  # nothing a user must fill in
    hooks = re.findall(r"- id: (\S+)", config)
    shipped = re.findall(r"^- id: (\S+)", (ROOT / ".pre-commit-hooks.yaml").read_text(),
                         re.MULTILINE)
    assert hooks == shipped == ["planner-check", "planner-fmt"]


@pytest.mark.skipif(importlib.util.find_spec("pre_commit") is None,
                    reason="pre-commit is not installed (pip install -e '.[test]')")
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_readme_snippet_works_as_written(tmp_path: Path) -> None:
    # `language: system` runs the `planner` on PATH: this interpreter's own console script
    scripts = Path(sys.executable).parent
    if not (scripts / "planner").exists() and not (scripts / "planner.exe").exists():
        pytest.skip(f"no `planner` console script next to {sys.executable} (pip install -e .)")
    repo = _specs_repo(tmp_path, {".pre-commit-config.yaml": _readme_precommit_config()})
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "PATH": os.pathsep.join([str(scripts), os.environ.get("PATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    _hooks_did_their_work(repo, proc)
