"""A spec that `import`/`generate --cluster` writes loads in the next command, from any output
folder: the cluster file is imported (relative to the spec) when it lies inside the root that
`check`/`solve` give the spec (its git repository, else its folder), and copied in, exactly,
when that root would refuse the import (E008). The root rule itself stays as strict."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import planner

from .helpers import ROOT, invoke

CLUSTER = ROOT / "specs" / "clusters" / "small4.plan"
#: a one-layer GPT: 19 ops, generated in milliseconds
GENERATE = ["generate", "transformer", "--layers", "1", "--hidden", "64", "--heads", "2",
            "--seq", "16", "--batch", "1", "--vocab", "100"]


def _workdir(tmp_path: Path, git: bool) -> Path:
    """tmp/work (a git repository or a plain folder) with clusters/small4.plan inside it and
    a copy, x.plan, next to it (outside it)."""
    work = tmp_path / "work"
    (work / "clusters").mkdir(parents=True)
    shutil.copy(CLUSTER, work / "clusters" / "small4.plan")
    shutil.copy(CLUSTER, tmp_path / "x.plan")
    if git:
        (work / ".git").mkdir()  # what the root rule looks for
    return work


def _imports(spec: Path) -> list[str]:
    return [line for line in spec.read_text().splitlines() if line.startswith("import ")]


def _next_commands_accept(work: Path, out: str) -> None:
    """`check` and `solve` of the written spec, run from the working folder and from the
    spec's own folder, with no `--root`."""
    spec = work / out
    for cwd, path in ((work, out), (spec.parent, spec.name)):
        code, _, err = invoke(["check", path], cwd)
        assert code == 0, err
        code, stdout, err = invoke(["solve", path, "--algo", "metf"], cwd)
        assert code == 0, err
        assert "small4" in stdout
    loaded = planner.load(spec)
    assert loaded.clusters["small4"] == planner.load(CLUSTER).clusters["small4"]


@pytest.mark.parametrize("out", ["nested/deep/m.plan", "sibling/m.plan"])
def test_a_cluster_inside_the_repository_is_imported(tmp_path: Path, out: str) -> None:
    work = _workdir(tmp_path, git=True)
    (work / out).parent.mkdir(parents=True)
    code, _, err = invoke([*GENERATE, "--cluster", "clusters/small4.plan", "-o", out], work)
    assert code == 0, err
    up = "../" * out.count("/")
    assert _imports(work / out) == [f'import "{up}clusters/small4.plan"']
    assert "copied" not in err
    _next_commands_accept(work, out)


@pytest.mark.parametrize(("git", "out", "cluster"), [
    (False, "nested/deep/m.plan", "clusters/small4.plan"),  # no repository: the root is
    (False, "sibling/m.plan", "clusters/small4.plan"),  # the spec's folder
    (False, "nested/deep/m.plan", "../x.plan"),  # outside the working folder
    (True, "nested/deep/m.plan", "../x.plan"),  # outside the repository
], ids=["nested", "sibling", "parent", "outside-repository"])
def test_a_cluster_the_next_command_could_not_import_is_copied_in(
        tmp_path: Path, git: bool, out: str, cluster: str) -> None:
    work = _workdir(tmp_path, git)
    (work / out).parent.mkdir(parents=True)
    code, _, err = invoke([*GENERATE, "--cluster", cluster, "-o", out], work)
    assert code == 0, err
    assert f"copied cluster(s) `small4` from {cluster} into the spec" in err
    text = (work / out).read_text()
    assert _imports(work / out) == []
    assert f"# Copied, exactly, from {cluster}, outside this spec's root" in text
    _next_commands_accept(work, out)


def test_the_root_rule_still_refuses_an_import_from_outside(tmp_path: Path) -> None:
    """What copying avoids: the same spec written with the import is refused (E008)."""
    work = _workdir(tmp_path, git=False)
    (work / "sibling").mkdir()
    (work / "sibling" / "m.plan").write_text(
        'import "../clusters/small4.plan"\n'
        "graph g { op a { time 1 ms } }\nplan p { graph g cluster small4 }\n")
    code, _, err = invoke(["check", "sibling/m.plan"], work)
    assert code == 1 and "error[E008]" in err


def test_import_torch_to_another_folder(tmp_path: Path) -> None:
    """The issue's case: `import torch --cluster ../x.plan -o other/dir/m.plan`, then
    `solve` (run as a user runs them: in a process of their own)."""
    pytest.importorskip("torch", reason="PyTorch is not installed (the torch extra)")
    work = _workdir(tmp_path, git=False)
    shutil.copytree(ROOT / "docs" / "examples", work / "examples")
    (work / "other" / "dir").mkdir(parents=True)
    for args in (["import", "torch", "examples/torch_mlp.py:model", "--input", "32x256",
                  "--cluster", "../x.plan", "-o", "other/dir/m.plan"],
                 ["solve", "other/dir/m.plan", "--algo", "metf"]):
        proc = subprocess.run([sys.executable, "-m", "planner", *args], cwd=work,
                              capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr
    assert _imports(work / "other" / "dir" / "m.plan") == []
    assert "small4" in proc.stdout
