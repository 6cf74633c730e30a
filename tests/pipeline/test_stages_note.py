"""The stage-count note (`info["stages_note"]`: the candidate with the least period passed
over for a longer iteration) quotes the figures of the plans it compares as the report
prints them: the plan the user gets (`auto`'s cut moves' plan, not pipedp's split it
replaced), and never a "shorter" period, or a "longer" iteration, that prints the same;
nor does the memory note (`info["memory_note"]`) claim a faster iteration that prints the
same."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pipe_support import chain_text
from typer.testing import CliRunner

from planner.cli import app
from planner.units import format_seconds

NOTE = re.compile(r"^(\d+) stage\(s\) would have a shorter period, (\S+ \S+) against (\S+ \S+), "
                  r"but a longer (simulated iteration|estimated iteration .*?), (\S+ \S+) "
                  r"against (\S+ \S+): the split is chosen by the iteration$")


def _chain(devices: int, times_us: list[float], outputs_kb: list[int], bandwidth: str,
           settings: str) -> str:
    """A chain of tiny forward ops on `devices` alike GPUs."""
    last = devices - 1
    lines = [f"cluster c {{ device gpu[0..{last}] {{ memory 16 GiB }}",
             f"  link gpu[0..{last}] <-> gpu[0..{last}] {{ bandwidth {bandwidth} }}", "}",
             "graph g {"]
    for k, (t, out) in enumerate(zip(times_us, outputs_kb, strict=True)):
        lines.append(f"  op f{k} {{ time {t} us; output {out} KB }}")
        if k:
            lines.append(f"  f{k - 1} -> f{k}")
    lines += ["}", f"plan p {{ graph g; cluster c; objective pipeline; {settings} }}"]
    return "\n".join(lines) + "\n"


def _solve(tmp_path: Path, text: str, *args: str) -> dict:
    spec = tmp_path / "p.plan"
    spec.write_text(text)
    result = CliRunner().invoke(app, ["solve", str(spec), "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["result"]


#: `auto` keeps pipedp's candidates with their cuts moved here (6 stages, T 1.9 us, passed
#: over for 4 stages, T 2.2 us, 4.8 us); main's note quoted pipedp's split it replaced,
#: "1.2 us against 1.9 us, ... 6.1 us against 4.9 us", beside a plan of 2.2 us and 4.8 us
MOVED = _chain(4, [0.3, 0.2, 0.1, 0.8, 0.8, 0.3, 0.8], [1, 100, 10, 10, 1, 100, 100],
               "100 GB/s latency 0.1 us",
               "microbatches 2; schedule interleaved; stages_per_device 2")


def test_the_note_quotes_the_plan_auto_chose_not_the_split_it_replaced(
        tmp_path: Path) -> None:
    result = _solve(tmp_path, MOVED)
    assert result["chosen"] == "pipedp, cuts moved"
    pipeline = result["pipeline"]
    match = NOTE.match(result["stages_note"])
    assert match, result["stages_note"]
    assert match[3] == format_seconds(pipeline["period_s"]) == "2.2 us"
    assert match[6] == format_seconds(pipeline["iteration_s"]) == "4.8 us"
    # the plan's own figures in `--json` too, not pipedp's split's
    assert result["period_s"] == pytest.approx(pipeline["period_s"])
    assert result["iteration_s"] == pytest.approx(pipeline["iteration_s"])


#: main's pipedp said "4 stage(s) would have a shorter period, 1.0 us against 1.0 us" (T
#: 1.00 and 1.05 us), and "1.1 us against 1.1 us ... 2.9 us against 2.9 us"
SAME_AS_PRINTED = [
    _chain(2, [0.3, 0.25, 0.1, 0.15, 0.35, 0.05, 0.1, 0.35], [1, 1, 100, 10, 100, 100, 1, 10],
           "10 GB/s latency 0 us", "microbatches 4; schedule interleaved; stages_per_device 2"),
    _chain(2, [0.2, 0.25, 0.3, 0.35, 0.2, 0.3, 0.2], [10, 100, 10, 1, 10, 10, 100],
           "100 GB/s latency 0 us", "microbatches 2; schedule gpipe"),
]


@pytest.mark.parametrize("algo", ["pipedp", "auto"])
@pytest.mark.parametrize("text", [*SAME_AS_PRINTED, MOVED])
def test_the_note_never_compares_figures_that_print_the_same(tmp_path: Path, text: str,
                                                              algo: str) -> None:
    result = _solve(tmp_path, text, "--algo", algo)
    note = result.get("stages_note")
    if note is None:
        return
    match = NOTE.match(note)
    assert match, note
    assert match[2] != match[3] and match[5] != match[6], note
    assert match[3] == format_seconds(result["pipeline"]["period_s"])
    if match[4] == "simulated iteration":
        assert match[6] == format_seconds(result["pipeline"]["iteration_s"])


#: 4 units on 3 devices of 100 MB: main's pipedp (and auto, which keeps its split) said
#: "memory shaped this split: without the caps, 2 stage(s) would give a period of 3.6 us
#: and a simulated iteration of 11.2 us (this split: 5.6 us and 11.2 us), but need ..."
SHAPED_AS_PRINTED = chain_text(4, 3, forward_ms=[0.00026, 0.00041, 0.00043, 0.00077],
                               outputs_mb=[50, 1, 20, 1], memory="100 MB",
                               bandwidth="1 TB/s", latency="0 us", microbatches=2)


@pytest.mark.parametrize("algo", ["pipedp", "auto"])
def test_the_memory_note_never_claims_a_faster_iteration_that_prints_the_same(
        tmp_path: Path, algo: str) -> None:
    result = _solve(tmp_path, SHAPED_AS_PRINTED, "--algo", algo)
    assert "memory_note" not in result, result["memory_note"]
    assert format_seconds(result["pipeline"]["iteration_s"]) == "11.2 us"

