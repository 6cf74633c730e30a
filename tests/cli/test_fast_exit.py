"""After a big model, the CLI ends its process without tearing the model down object by
object (`planner.cli.fastexit`), and without losing anything a normal exit gives: the
output, the exit status, the `atexit` handlers, and a thread that is not a daemon."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESNET = ROOT / "specs" / "resnet.plan"
# two `planner` processes per test
pytestmark = pytest.mark.slow

# `BIG_MODEL_OBJECTS` decides what counts as big; an object whose finaliser says when the
# interpreter tears the process down (in a module of its own: the teardown clears every
# module in sys.modules), an atexit handler, and optionally a thread that outlives the
# command; the finaliser and the handler write to fd 2. The thread waits for an event that
# is set only once `fastexit.finish` has returned, so it is running when `finish` decides,
# however long the command takes (a fixed sleep raced the command); a `finish` that ends
# the process then never says "finish-returned" and the witness is not torn down
PROBE = """
import atexit, os, sys, threading, types
import planner.cli as cli
from planner.cli import fastexit
cli.BIG_MODEL_OBJECTS = int(sys.argv[1])
class Witness:
    def __del__(self, write=os.write):
        write(2, b"torn-down\\n")
witnessed = types.ModuleType("witnessed")
witnessed.witness = Witness()
sys.modules["witnessed"] = witnessed
del witnessed
atexit.register(lambda: os.write(2, b"atexit-ran\\n"))
if sys.argv[2] == "thread":
    done = threading.Event()
    threading.Thread(target=done.wait, args=(300.0,)).start()
    finish = fastexit.finish
    def finish_then_release(code):
        finish(code)
        os.write(2, b"finish-returned\\n")
        done.set()
    fastexit.finish = finish_then_release
sys.argv = ["planner", *sys.argv[3:]]
cli.main()
"""


def _run(big: int, *args: str, thread: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, str(big),
                           "thread" if thread else "-", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def _timeless(text: str) -> str:
    """The output without the lines and fields that report how long planning took."""
    return "\n".join(line for line in text.splitlines()
                     if "planning" not in line and not line.strip().startswith('"msct"'))


def test_a_big_model_ends_without_teardown_and_keeps_output_and_handlers() -> None:
    fast = _run(0, "solve", str(RESNET), "--algo", "metf")
    normal = _run(10**9, "solve", str(RESNET), "--algo", "metf")
    assert fast.returncode == normal.returncode == 0
    assert "makespan" in fast.stdout and _timeless(fast.stdout) == _timeless(normal.stdout)
    assert "atexit-ran" in fast.stderr and "atexit-ran" in normal.stderr
    assert "torn-down" not in fast.stderr
    assert "torn-down" in normal.stderr  # the witness would tell


@pytest.mark.parametrize("args", [
    ("check", "tests/spec/broken/bare_number_memory.plan"),
    ("solve", str(RESNET), "--algo", "no-such-algorithm"),
    ("solve", str(RESNET), "--algo", "metf", "--json"),
    ("solve", str(RESNET), "--algo", "metf", "--format", "sarif"),
])
def test_the_exit_status_and_streams_are_a_normal_exit_s(args: tuple[str, ...]) -> None:
    fast, normal = _run(0, *args), _run(10**9, *args)
    assert fast.returncode == normal.returncode
    assert _timeless(fast.stdout) == _timeless(normal.stdout)
    assert fast.stderr.replace("torn-down\n", "") == normal.stderr.replace("torn-down\n", "")


def test_a_thread_still_running_gets_a_normal_exit() -> None:
    """A thread that is not a daemon is waited for, as a normal exit does."""
    run = _run(0, "solve", str(RESNET), "--algo", "metf", thread=True)
    assert run.returncode == 0, run.stderr
    assert "makespan" in run.stdout
    assert "finish-returned" in run.stderr  # `finish` saw the thread and left the exit alone
    assert "torn-down" in run.stderr and "atexit-ran" in run.stderr
