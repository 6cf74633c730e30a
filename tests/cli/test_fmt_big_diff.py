"""`fmt --check` and `fmt --diff` on a big spec whose lines all move a little: the 10,000
ops of bench_parse's spec, one attribute a line and unaligned (76,784 lines, 23,906 of them
realigned by `fmt`), ran for over 10 minutes (difflib's matcher is quadratic where every
match is short) where formatting takes 0.8 s. `planner.cli.linediff` anchors difflib on
the lines each side holds once."""

from __future__ import annotations

import difflib
import importlib.util
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from planner.cli import linediff
from planner.spec.format import format_source

ROOT = Path(__file__).resolve().parents[2]


def _one_attribute_a_line(n_ops: int) -> str:
    """bench_parse's generated spec, each op's attributes one a line, unaligned."""
    sys.path.insert(0, str(ROOT / "bench"))  # bench_parse imports its sibling `recording`
    try:
        spec = importlib.util.spec_from_file_location("bench_parse",
                                                      ROOT / "bench" / "bench_parse.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    out = []
    for line in module.generate(n_ops).splitlines():
        op = re.fullmatch(r"  op (\S+) \{ (.*) \}", line)
        if op:
            out += [f"  op {op.group(1)} {{", *(f"    {a}" for a in op.group(2).split("  ")),
                    "  }"]
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def _patch(old: list[str], diff: list[str]) -> list[str]:
    """`old` with the unified diff `diff` applied, checking every context and removed line."""
    new: list[str] = []
    at = 0
    k = 2
    while k < len(diff):
        start = int(re.match(r"@@ -(\d+)", diff[k]).group(1))  # type: ignore[union-attr]
        start = start - 1 if start else 0
        new += old[at:start]
        at = start
        k += 1
        while k < len(diff) and not diff[k].startswith("@@"):
            sign, line = diff[k][0], diff[k][1:]
            if sign in " -":
                assert old[at] == line, (at, line)
                at += 1
            if sign in " +":
                new.append(line)
            k += 1
    return new + old[at:]


@pytest.mark.slow
def test_check_and_diff_of_a_big_realigned_spec_finish_and_patch_makes_the_format(
        tmp_path: Path) -> None:
    text = _one_attribute_a_line(10_000)
    spec = tmp_path / "big.plan"
    spec.write_text(text, encoding="utf-8")
    formatted = format_source(text, "big.plan")
    changed = sum(a != b for a, b in zip(text.splitlines(), formatted.splitlines(), strict=True))
    assert changed > 20_000
    run = [sys.executable, "-m", "planner", "fmt", "--root", str(tmp_path)]
    check = subprocess.run([*run, "--check", "--json", "big.plan"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120, check=False)
    assert check.returncode == 5, check.stderr
    assert '"line": 16' in check.stdout  # the first op's first realigned attribute
    diff = subprocess.run([*run, "--diff", "big.plan"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert diff.returncode == 5, diff.stderr
    lines = diff.stdout.splitlines(keepends=True)
    assert lines[:2] == ["--- big.plan\n", "+++ big.plan\n"]
    assert "".join(_patch(text.splitlines(keepends=True), lines)) == formatted


def test_small_inputs_get_difflibs_own_diff() -> None:
    rng = random.Random(7)
    for _ in range(300):
        old = [f"{rng.randint(0, 5)}\n" for _ in range(rng.randint(0, 40))]
        new = [x for x in old if rng.random() < 0.8] + [f"{rng.randint(0, 9)}\n"
                                                         for _ in range(rng.randint(0, 5))]
        if rng.random() < 0.2:
            rng.shuffle(new)
        assert list(linediff.unified_diff(old, new, "f")) == list(
            difflib.unified_diff(old, new, "f", "f"))


def test_big_inputs_get_a_diff_that_patches_old_into_new() -> None:
    rng = random.Random(11)
    for _ in range(20):
        old = [f"{rng.randint(0, 3000)}\n" if rng.random() < 0.7 else "}\n"
               for _ in range(rng.randint(linediff.SMALL // 2, linediff.SMALL * 2))]
        new = [x if rng.random() < 0.9 else f"{x.strip()}x\n" for x in old if rng.random() < 0.95]
        diff = list(linediff.unified_diff(old, new, "f"))
        assert _patch(old, diff) == new
        ops = linediff.Matcher(old, new).get_opcodes()
        assert all(old[i1:i2] == new[j1:j2] for tag, i1, i2, j1, j2 in ops if tag == "equal")
        assert sum(i2 - i1 for _, i1, i2, _, _ in ops) == len(old)
        assert sum(j2 - j1 for _, _, _, j1, j2 in ops) == len(new)
