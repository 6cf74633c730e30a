"""The fuzz target (fuzz/target.py) in CI: every seed once, then a few seconds of
coverage-guided fuzzing with atheris when it is installed."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .runtime_support import ROOT

sys.path.insert(0, str(ROOT / "fuzz"))
import target
from target import KNOWN_ISSUES, Harness, seeds


def test_every_seed_goes_through_the_pipeline_without_a_finding() -> None:
    harness = Harness(slack=10.0)  # a shared CI machine: only hangs should trip the bound
    try:
        found = seeds()
        assert len(found) >= 20  # specs/, tests/spec/broken/ and the small valid specs
        for path in found:
            harness.one_input(path.read_bytes())
    finally:
        harness.close()
    assert harness.findings == {}, harness.summary()
    outcomes = harness.summary()["outcomes"]
    assert outcomes.get("solved", 0) >= 5 and outcomes.get("load: diagnostics", 0) >= 20


def test_an_unexpected_exception_is_a_finding_and_a_known_issue_is_counted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import planner.simulate

    harness = Harness()
    seed = (ROOT / "tests" / "algorithms" / "specs" / "chain.plan").read_bytes()

    def broken(*_: object) -> None:
        raise KeyError("boom")

    try:
        monkeypatch.setattr(planner.simulate, "simulate", broken)
        harness.one_input(seed)
        assert [f.kind for f in harness.findings.values()] == ["KeyError"]

        def overflow(*_: object) -> None:
            raise OverflowError("int too large")

        # none is listed today: a made-up known issue shows that one is counted apart
        monkeypatch.setattr(target, "KNOWN_ISSUES", (("OverflowError", r".", "example"),))
        monkeypatch.setattr(planner.simulate, "simulate", overflow)
        harness.one_input(seed)
        assert sum(harness.known.values()) == 1 and len(harness.findings) == 1
    finally:
        harness.close()
    assert all(len(k) == 3 for k in KNOWN_ISSUES)


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None,
                    reason="atheris is not installed (pip install -e '.[fuzz]')")
def test_a_few_seconds_of_coverage_guided_fuzzing_find_nothing_new(tmp_path: Path) -> None:
    last_run = ROOT / "fuzz" / "findings" / "last-run.json"
    last_run.unlink(missing_ok=True)  # an older run's figures must not pass for this one's
    # a corpus of its own, from the seeds: fuzz/.corpus grows with every run, and libFuzzer
    # runs all of it before it fuzzes, inside the time given (745 inputs: 25 s, no fuzzing)
    proc = subprocess.run([sys.executable, str(ROOT / "fuzz" / "run.py"), "--minutes", "0.1",
                           "--slack", "10", "--corpus", str(tmp_path / "corpus")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert last_run.exists(), proc.stderr[-2000:]  # saved as it runs: libFuzzer ends it
    figures = json.loads(last_run.read_text())
    assert figures["executions"] > 100, proc.stderr[-2000:]
    assert figures["findings"] == [], figures
    assert proc.returncode == 0, proc.stderr[-2000:]
