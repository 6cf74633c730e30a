"""`planner.compiled`: kernels are loaded from numba's cache or built in the background,
never compiled on a command's clock; the terminal says so once."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from planner import compiled

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("numba", reason="numba is not installed: planner uses no kernels")

KERNEL = """
from numba import njit

@njit(cache=True)
def twice(x):
    return 2 * x
"""

PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
from planner.compiled import load_cached
import kern
found = load_cached(kern.twice)
print(found, len(kern.twice.signatures))
if sys.argv[2] == "call":
    print(kern.twice(21))
print(sum(kern.twice.stats.cache_hits.values()), sum(kern.twice.stats.cache_misses.values()))
"""


FAKE_BUILD = """
import sys, pathlib
pathlib.Path(sys.argv[sys.argv.index("--lock") + 1]).unlink()
"""


def _probe(tmp_path: Path, then: str) -> list[str]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), then], env=env,
                         capture_output=True, text=True, check=True, timeout=300)
    return out.stdout.split()


@pytest.mark.slow
def test_load_cached_loads_what_the_cache_holds_and_never_compiles(tmp_path: Path) -> None:
    (tmp_path / "kern.py").write_text(KERNEL)
    # a cold cache: nothing loaded, nothing compiled
    assert _probe(tmp_path, "none") == ["False", "0", "0", "0"]
    # compile once (a normal call), which fills the cache
    assert _probe(tmp_path, "call") == ["False", "0", "42", "0", "1"]
    # now it is loaded from the cache before any call: a hit, no miss
    assert _probe(tmp_path, "call") == ["True", "1", "42", "1", "0"]
    # an edited source makes the cache stale: nothing loaded
    (tmp_path / "kern.py").write_text(KERNEL.replace("2 * x", "3 * x"))
    assert _probe(tmp_path, "none")[:2] == ["False", "0"]


def test_a_build_that_ends_before_its_pid_is_written_leaves_no_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # next to four CPU hogs a quick build ended, and removed its lock, before the parent
    # wrote the child's pid into it: writing re-created the lock, and every command for
    # STALE_S seconds after took a build to be running
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setattr(compiled, "_child", None)
    monkeypatch.setattr(compiled, "_noticed", False)
    lock = compiled._lock_path()

    class Done:  # a build that has already finished and removed its lock
        pid = 4242

        def __init__(self, command: list[str], **_: object) -> None:
            lock.unlink()

        def poll(self) -> int:
            return 0

    monkeypatch.setattr(subprocess, "Popen", Done)
    assert compiled.build_in_background("the kernel") is True
    assert not lock.exists() and not compiled.building()


def test_one_background_build_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    # a stand-in build with warm.py's contract: `--lock PATH`, removed when done
    (tmp_path / "fakebuild.py").write_text(FAKE_BUILD)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(compiled, "BUILD_MODULE", "fakebuild")
    monkeypatch.setattr(compiled, "BUILD_ARGS", ())
    monkeypatch.setattr(compiled, "_child", None)
    monkeypatch.setattr(compiled, "_noticed", False)
    lock = compiled._lock_path()
    assert lock.parent == tmp_path
    lock.write_text("")  # another process's build is running
    with caplog.at_level("INFO", logger="planner.setup"):
        assert compiled.build_in_background("the kernel") is True
        assert compiled._child is None  # none started: one runs already
        assert compiled.build_in_background("the kernel") is True
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "compiling the kernel" in said[0] and "background" in said[0]
    # a lock from a build that died long ago is taken over
    old = time.time() - compiled.STALE_S - 10
    os.utime(lock, (old, old))
    assert not compiled.building()
    assert compiled.build_in_background("the kernel") is True
    child = compiled._child
    assert child is not None
    child.wait(timeout=120)
    assert child.returncode == 0 and compiled.built_here()
    assert not lock.exists()  # the build removes its lock


@pytest.mark.slow
def test_the_cli_says_when_a_build_runs_in_the_background(tmp_path: Path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "planner", "solve",
                           str(ROOT / "specs" / "resnet.plan"), "--algo", "search",
                           "--time-limit", "1"], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    locks = list(tmp_path.glob("planner-build-*.lock"))
    try:
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.count("one-time setup: compiling") == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        # the build outlives the command, in a session of its own, named in its lock
        assert len(locks) == 1
    finally:
        for lock in locks:  # stop it: it would load the machine after this test
            with contextlib.suppress(ValueError, OSError):
                os.killpg(int(lock.read_text()), signal.SIGTERM)


def test_a_numba_that_fails_to_import_turns_every_kernel_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # numba's files are there (find_spec finds them) but importing it fails: the first
    # kernel to try says so for all three (the simulator's, the ETF engine's, the bounds':
    # each asks `compiled.numba_available`)
    from planner import bounds, fastsim

    monkeypatch.setattr(compiled, "_numba", True)
    monkeypatch.setattr(compiled, "building", lambda: False)

    def broken() -> None:
        raise ImportError("numba: a broken install")

    assert compiled.load_or_build(broken, lambda: 0.0, "a kernel") is None
    assert not compiled.numba_available() and not fastsim.numba_available()
    monkeypatch.setattr(bounds, "_passes", None)
    monkeypatch.setattr(bounds, "ENGINE", "auto")
    assert not bounds._compiled(10**9)  # a graph big enough to load the kernel for
