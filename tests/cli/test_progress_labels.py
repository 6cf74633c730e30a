"""What `solve` and `compare` print for people carries labels in words: no raw keys such as
`objective_s` or `bound_s` (those belong to `--json`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from planner.render.terminal import INFO_LABELS, fmt_info, info_label

from .helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
FORK = ROOT / "tests" / "compare" / "fixtures" / "fork.plan"
#: a snake_case key with a unit suffix: what the JSON says, not what people read
RAW_KEY = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*_(?:s|bytes|Bps)\b")


@pytest.mark.parametrize("algo", ["auto", "cpsat", "search", "metf",
                                  pytest.param("ilp", marks=pytest.mark.slow)])
def test_solve_prints_no_raw_keys(algo: str) -> None:
    limit = [] if algo == "metf" else ["--time-limit", "2"]
    code, out, err = invoke(["solve", str(FORK), "--algo", algo, *limit], ROOT)
    assert code == 0, err
    assert "makespan (simulated)" in out
    assert not RAW_KEY.findall(out + err), out + err


@pytest.mark.slow
def test_compare_prints_no_raw_keys() -> None:
    code, out, err = invoke(["compare", str(FORK), "--algos", "auto,cpsat,metf,single",
                             "--memory", "10%,100%", "--time-limit", "2", "--jobs", "1"], ROOT)
    assert code == 0, err
    assert "×bound" in out
    assert not RAW_KEY.findall(out + err), out + err


def test_every_info_key_reads_as_words() -> None:
    info = {"objective_s": 0.0123, "bound_s": 0.01, "solver": "highs", "time_limit_s": 2.0}
    shown = fmt_info(info, list(info))
    assert list(shown) == ["solver's objective", "proven bound", "solver", "time limit"]
    assert shown["solver's objective"] == "12.300 ms"
    assert not any(RAW_KEY.search(label) for label in (*INFO_LABELS.values(),
                                                       info_label("peak_memory_bytes")))
