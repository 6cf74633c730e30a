"""Tests that signal their own process run in a fork of their own (`own_process`,
tests/conftest.py), so that no signal reaches pytest's runner.

Before (issue 40, finding 9): the README's `python -m pytest` stopped at 44% on a loaded
two-core machine, a KeyboardInterrupt from `planner/signals.py`'s handler: a SIGINT that a
test had sent to its own process (a `threading.Timer` in tests/exact/test_reproducible.py)
arrived after the test was over, in pytest's runner, which stops the whole session on it.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: a test file for a pytest run of its own, with this suite's conftest as a plugin
_PROBE = '''
import os, signal, threading, time
import pytest

own = pytest.mark.own_process


@own
def test_a_late_sigint():
    # fires after the test is over: in the fork, which is gone by then
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()


def test_after_it():
    time.sleep(1.5)  # where the late SIGINT arrived, without the fork


@own
def test_a_sigint_raised_in_the_body():
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)


@own
def test_a_failure_comes_back(tmp_path):
    (tmp_path / "x").write_text("fixtures work")
    assert (tmp_path / "x").read_text() == "fixtures do not"


@own
def test_a_skip_comes_back():
    pytest.skip("skipped in the fork")


@own
def test_a_process_killed_fails():
    os.kill(os.getpid(), signal.SIGKILL)


@own
def test_an_interrupt_that_escapes_the_body_fails_it_alone():
    signal.raise_signal(signal.SIGINT)
'''


@pytest.mark.slow  # a pytest of its own (about 3 s)
def test_a_signal_sent_by_an_own_process_test_never_reaches_the_runner(
        tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(_PROBE, encoding="utf-8")
    env = {"PYTHONPATH": f"{ROOT}{':'}{ROOT / 'tests'}", "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-q",
                          "-p", "no:cacheprovider", "-rfs", "test_probe.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600, check=False)
    out = run.stdout + run.stderr
    assert "!!!" not in out, out  # pytest's "!!! KeyboardInterrupt !!!" banner
    summary = out.strip().splitlines()[-1]
    assert re.search(r"3 failed, 3 passed, 1 skipped", summary), out
    assert "FAILED test_probe.py::test_a_failure_comes_back" in out
    assert "'fixtures work' == 'fixtures do not'" in out or "fixtures do not" in out
    assert "test_a_process_killed_fails: its process ended without an outcome " \
        "(killed by SIGKILL)" in out, out
    assert "FAILED test_probe.py::test_an_interrupt_that_escapes_the_body_fails_it_alone" in out
    assert "SKIPPED" in out and "skipped in the fork" in out


def _self_signals(node: ast.AST) -> bool:
    """Whether `node` holds a call that signals this process: `signal.raise_signal`,
    `os.kill(os.getpid(), ...)`, `signal.pthread_kill`, `signal.alarm`, `setitimer`."""
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        name = ast.unparse(call.func).rsplit(".", 1)[-1]
        if name in ("raise_signal", "pthread_kill", "alarm", "setitimer"):
            return True
        if name == "kill" and call.args and "getpid()" in ast.unparse(call.args[0]):
            return True
    return False


def _marked(node: ast.FunctionDef) -> bool:
    return any("own_process" in ast.unparse(d) for d in node.decorator_list)


def test_every_test_that_signals_its_own_process_runs_in_its_own() -> None:
    """A house rule: a test that signals its own process, itself or through a function of
    its module, is marked `own_process` (or its module is); a script text that a
    subprocess runs is no call, and is not counted."""
    unmarked, found = [], []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_marked = any(isinstance(n, ast.Assign) and "own_process" in ast.unparse(n)
                            and "pytestmark" in ast.unparse(n.targets[0]) for n in tree.body)
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        signalling = {name for name, f in functions.items() if _self_signals(f)}
        grown = True
        while grown:  # through the module's helpers, at any depth
            more = {name for name, f in functions.items() if name not in signalling and any(
                isinstance(c, ast.Name) and c.id in signalling for c in ast.walk(f))}
            signalling |= more
            grown = bool(more)
        for name in sorted(signalling):
            if name.startswith("test_"):
                found.append(f"{path.relative_to(ROOT)}::{name}")
                if not (module_marked or _marked(functions[name])):
                    unmarked.append(found[-1])
    assert "tests/exact/test_reproducible.py::test_ctrl_c_stops_the_search_with_its_best_" \
        "valid_plan" in found  # the rule sees through a helper (`_interrupt_after`)
    assert not unmarked, unmarked
