"""Helpers of the torch export tests: the CLI in-process where it must succeed, a
generated script loaded as a module, and pipeline scripts' steps run in processes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from planner.cli import app


def planner_ok(*args: str | Path) -> str:
    """`planner ARGS` in-process, which must exit 0: its output."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def load_script(path: Path) -> Any:
    """The generated script as a module (its functions, not its main)."""
    spec = importlib.util.spec_from_file_location(f"_script_{path.parent.name}_{path.stem}",
                                                  path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_jobs(root: Path, jobs: list[dict[str, Any]]) -> None:
    """The steps of pipeline scripts (`torch_pipeline_runner.py`'s JOBS, written to
    ROOT/jobs.json) in one set of processes, which must succeed."""
    (root / "jobs.json").write_text(json.dumps(jobs))
    runner = Path(__file__).with_name("torch_pipeline_runner.py")
    result = subprocess.run([sys.executable, str(runner), str(root / "jobs.json")],
                            capture_output=True, text=True, timeout=900, check=False,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-4000:]


def command_job(root: Path, name: str, script: Path, argv: list[str], cwd: Path
                ) -> dict[str, Any]:
    """`torch_pipeline_runner.py`'s job of the command `python SCRIPT ARGV` from CWD (a
    pipeline script's `--spawn ...`), its result to ROOT/command_NAME.json."""
    return {"main": str(script), "argv": argv, "cwd": str(cwd),
            "out": str(root / f"command_{name}.json")}


def command_result(job: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """What the command of `job` (`command_job`), once run, returned and printed."""
    ran = json.loads(Path(job["out"]).read_text())
    return subprocess.CompletedProcess([job["main"], *job["argv"]], ran["returncode"],
                                       ran["stdout"], ran["stderr"])


def run_commands(root: Path, commands: dict[str, tuple[Path, list[str], Path]]
                 ) -> dict[str, subprocess.CompletedProcess[str]]:
    """Each `python SCRIPT ARGV` from CWD (`commands`: a name -> (SCRIPT, ARGV, CWD)) of a
    pipeline script (`--spawn ...`), one after the other, all ranks in one set of processes
    (`torch_pipeline_runner.py`'s command jobs): what each command returned and printed."""
    jobs = {name: command_job(root, name, *command) for name, command in commands.items()}
    run_jobs(root, list(jobs.values()))
    return {name: command_result(job) for name, job in jobs.items()}
