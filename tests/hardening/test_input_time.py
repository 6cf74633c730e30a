"""Small inputs cannot ask for hours: each phase is near-linear in the input.

Before (main, `planner check`): 20,000 blanks then `$` took 33 s in the fast lexer
(quadratic); a 365-byte `link` of 20 x `gpu[*]` a side over 1,024 devices ran past
120 s; 3,000 edges to unknown ops computed 3,000 did-you-mean hints (120 s CPU); 200
one-line plans on a 20,000-op graph derived the placement facts 200 times (24 s). The
timing bounds here are 10-50x the expected time, to catch a hang, not to benchmark
(`bench/bench_process.py` does that).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from planner import limits
from planner.errors import SpecError
from planner.limits import Limits
from planner.spec import checks
from planner.spec.fastparse import _fast_parse
from planner.spec.load import load_path, load_text
from planner.spec.lower import attrs

from .helpers import invoke


@pytest.mark.parametrize("run", [" " * 200_000, "1" * 200_000 + "x", "\t \f" * 70_000])
def test_the_fast_lexer_is_linear_before_a_stray_character(run: str) -> None:
    t = time.process_time()
    assert _fast_parse("graph g {" + run + "$ }", "t.plan") is None  # Lark reports it
    assert time.process_time() - t < 5  # ~0.05 s; quadratic, it took hours


def test_a_stray_character_after_many_blanks_is_reported_quickly() -> None:
    t = time.process_time()
    with pytest.raises(SpecError) as info:
        load_text("graph g {" + " " * 100_000 + "$ }", "t.plan")
    assert info.value.diagnostics[0].code == "E106"
    assert time.process_time() - t < 20  # ~1 s


@pytest.mark.slow
def test_a_short_link_over_many_devices_is_expanded_once(tmp_path: Path) -> None:
    side = ", ".join(["gpu[*]"] * 20)
    (tmp_path / "l.plan").write_text(
        "cluster c {\n device gpu[0..1023] { memory 1 GiB }\n"
        f" link {side} <-> {side} {{ bandwidth 1 GB/s }}\n}}\n")
    assert (tmp_path / "l.plan").stat().st_size < 500
    t = time.process_time()
    cluster = load_path(tmp_path / "l.plan").spec.clusters["c"]
    assert len(cluster.links) == 1024 * 1023
    assert time.process_time() - t < 60  # ~3 s, a full mesh of 1,024 devices


def test_hints_stop_at_the_diagnostics_limit(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = attrs.did_you_mean  # behind `hints`, which every unknown name's message asks
    monkeypatch.setattr(attrs, "did_you_mean", lambda *a: calls.append(1) or real(*a))
    ops = "".join(f" op layer{i}_conv {{ time 1 ms }}\n" for i in range(3000))
    edges = "".join(f" lyr{i}_cnv -> layer{i}_conv\n" for i in range(3000))
    (tmp_path / "u.plan").write_text("graph g {\n" + ops + edges + "}\n")
    t = time.process_time()
    code, _, err = invoke(["check", "u.plan"], tmp_path)
    assert code == 1 and "2900 more diagnostic(s) not shown" in err
    assert len(calls) == 100
    assert time.process_time() - t < 30  # ~0.5 s; 120 s with a hint per unknown op


def test_plans_that_differ_only_by_name_are_checked_once(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    calls = []
    real = checks.proofs
    monkeypatch.setattr(checks, "proofs", lambda p: calls.append(p.name) or real(p))
    ops = "".join(f" op o{i} {{ time 1 ms }}\n" for i in range(2000))
    chain = " " + " -> ".join(f"o{i}" for i in range(2000)) + "\n"
    plans = "".join(f"plan p{i} {{ graph g; cluster c }}\n" for i in range(200))
    (tmp_path / "p.plan").write_text(
        "cluster c { device gpu[0..1] { memory 1 TiB } link gpu[*] <-> gpu[*] "
        "{ bandwidth 1 GB/s } }\ngraph g {\n" + ops + chain + "}\n" + plans
        + "plan pinned { graph g; cluster c; pin o0 to gpu1 }\n")
    code, _, err = invoke(["check", "p.plan"], tmp_path)
    assert code == 0, err
    assert calls == ["p0", "pinned"]  # the pinned plan is no twin of the others


def test_devices_without_links_are_counted_not_listed() -> None:
    """A cluster of 1,024 devices and no link misses a million pairs: E244 counts them
    instead of listing each (before: 0.17 s of CPU per 53-byte cluster, so 10 KB of such
    clusters took 35 s)."""
    text = "".join(f"cluster c{k} {{ device gpu[0..1023] {{ memory 1 GiB }} }}\n"
                   for k in range(100))
    t = time.process_time()
    # the devices limit counts per load: raised here so that every cluster is expanded
    with limits.using(Limits(devices=100 * 1024)), pytest.raises(SpecError) as info:
        load_text(text, "d.plan")
    took = time.process_time() - t
    (d,) = info.value.diagnostics  # the first cluster's; the others would repeat it
    assert d.code == "E244" and "gpu0 -> gpu1, gpu0 -> gpu2" in d.message
    assert d.message.endswith(f"and {1024 * 1023 - 4} more")
    assert took < 8, took  # ~1 s; listing the pairs took ~17 s
