"""Helpers of the torch export tests: the CLI in-process where it must succeed, a
generated script loaded as a module, and pipeline scripts' steps run in processes."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import re
import select
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from planner.cli import app


def planner_ok(*args: str | Path) -> str:
    """`planner ARGS` in-process, which must exit 0: its output."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def gpu_spec(root: Path, imported: str, name: str, count: int, memory: str,
             settings: str) -> Path:
    """ROOT/NAME.plan: the graph of ROOT/IMPORTED (an imported model's plan file) on
    `count` GPUs of `memory` on fast links, plan `p` a pipeline with `settings`."""
    graph = re.search(r"^graph (\S+) \{", (root / imported).read_text(), re.M)
    assert graph is not None
    spec = root / f"{name}.plan"
    last = count - 1
    spec.write_text(
        f'import "{imported}"\ncluster c {{\n'
        f"  device gpu[0..{last}] {{ kind gpu  memory {memory}  flops 10 TFLOPS }}\n"
        f"  link gpu[0..{last}] <-> gpu[0..{last}] {{ bandwidth 1 TB/s }}\n}}\n"
        f"plan p {{ graph {graph.group(1)}  cluster c  objective pipeline  {settings} }}\n")
    return spec


def load_script(path: Path) -> Any:
    """The generated script as a module (its functions, not its main)."""
    spec = importlib.util.spec_from_file_location(f"_script_{path.parent.name}_{path.stem}",
                                                  path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Runner:
    """`torch_pipeline_runner.py --serve`, started at the first run and kept until this
    process ends (its input then ends, and so does it): every test file of this process
    runs its jobs on the same ranks' processes, which import torch (and transformers) and
    warm torch.export up once, not once per file. What it prints goes to a file."""

    def __init__(self) -> None:
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - open while the runner is
        runner = Path(__file__).with_name("torch_pipeline_runner.py")
        self.process = subprocess.Popen(
            [sys.executable, str(runner), "--serve"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.log, text=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"})
        atexit.register(self.close)

    def run(self, path: Path, timeout: float = 900) -> str | None:
        """The jobs of `path` run: None, or what failed and the runner's last output."""
        start = self.log.seek(0, os.SEEK_END)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{path}\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        answer = self.process.stdout.readline() if ready else ""
        if answer:
            error = json.loads(answer)["error"]
            if error is None:
                return None
        else:  # timed out, or the runner ended: the next run starts another
            self.process.kill()
            error = (f"the runner gave no answer in {timeout} s" if not ready else
                     f"the runner ended (exit status {self.process.wait()})")
        self.log.seek(start)
        said = self.log.read().decode(errors="replace")
        return f"{error}\n{said[-4000:]}"

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


_RUNNER: list[_Runner] = []


def close_runner() -> None:
    """End this process's runner, if it has one, and wait for it."""
    for runner in _RUNNER:
        runner.close()
    _RUNNER.clear()


def run_jobs(root: Path, jobs: list[dict[str, Any]]) -> None:
    """The steps of pipeline scripts (`torch_pipeline_runner.py`'s JOBS, written to
    ROOT/jobs.json) on this process's runner, which must succeed."""
    (root / "jobs.json").write_text(json.dumps(jobs))
    if not _RUNNER or _RUNNER[0].process.poll() is not None:
        _RUNNER[:] = [_Runner()]
    failed = _RUNNER[0].run(root / "jobs.json")
    assert failed is None, failed


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
