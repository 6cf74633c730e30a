"""Sweep settings: parsing option values and applying them to a problem."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import planner
from planner.compare.settings import (
    Setting,
    SettingError,
    apply_setting,
    grid,
    parse_bandwidths,
    parse_devices,
    parse_memories,
    setting_key,
)

from .helpers import FIXTURES, assert_names_the_option


def _chain() -> planner.Problem:
    return planner.load(FIXTURES / "chain.plan").plan("chain_on_quad")


def test_labels_are_canonical_and_deduplicated() -> None:
    assert parse_bandwidths("1GB/s, 1 GB/s,10Gbps,0.5x,2X") == ("1 GB/s", "1.25 GB/s",
                                                                  "0.5x", "2x")
    assert parse_memories("50%,0.75x,8GiB,50 %") == ("50%", "75%", "8 GiB")
    assert parse_devices("2,4,all,2") == ("2", "4", "all")
    assert (parse_bandwidths(None), parse_memories(""), parse_devices(None)) == (
        ("1x",), ("100%",), ("all",))
    # values named apart stay apart: the label is the value applied (`:g` made these one
    # point, run at 80% and 100.001%)
    assert parse_memories("80.00001%,80.000012%,1.00001x") == (
        "80.00001%", "80.000012%", "100.001%")
    assert parse_bandwidths("1.0000001x,1.0000002x") == ("1.0000001x", "1.0000002x")


def test_a_memory_size_is_whole_bytes_from_its_digits() -> None:
    """Before: `1.001KB` read as its float, 1000.9999999999999 B, cut to 1000: the row's
    label said `1 KB` and its devices held 1000 B. A fraction of a byte rounds down, as a
    spec's `memory` does."""
    assert parse_memories("1.001KB,1.5B,2.9999999999999999999KB") == (
        "1001 B", "1 B", "2999 B")


@pytest.mark.parametrize(("parse", "option", "value"), [
    *((parse_bandwidths, "--bandwidth", v) for v in ("fast", "3 parsecs", "0GB/s", "-2x",
                                                      "1e-320x", "1e16x")),
    # factors that take every cap past 1 PiB or below 1 B (an OverflowError in each row)
    *((parse_memories, "--memory", v) for v in ("0%", "lots", "5 GB/s", "1e30GiB",
                                                  "1e308x", "1e30%", "1e-16x")),
    *((parse_devices, "--devices", v) for v in ("zero", "0")),
])
def test_bad_values_name_the_option(parse: Callable[[str], object], option: str,
                                    value: str) -> None:
    assert_names_the_option(parse, option, value)


def test_grid_order_and_sort_key() -> None:
    settings = grid(("10 GB/s", "1 GB/s"), ("100%", "50%"), ("all", "2"))
    assert len(settings) == 8
    ordered = sorted(settings, key=setting_key)
    assert ordered[0] == Setting("1 GB/s", "50%", "2")
    assert ordered[-1] == Setting("10 GB/s", "100%", "all")


def test_bandwidth_sets_or_scales_every_link_and_keeps_latency() -> None:
    problem = _chain()
    fixed, warnings = apply_setting(problem, Setting(bandwidth="10 GB/s"))
    assert warnings == []
    assert {lk.bandwidth_Bps for lk in fixed.cluster.links} == {1e10}
    assert [lk.latency_s for lk in fixed.cluster.links] == [
        lk.latency_s for lk in problem.cluster.links]
    halved, _ = apply_setting(problem, Setting(bandwidth="0.5x"))
    assert [lk.bandwidth_Bps for lk in halved.cluster.links] == [
        lk.bandwidth_Bps * 0.5 for lk in problem.cluster.links]
    # the input is untouched (frozen dataclasses are replaced, not mutated)
    assert {lk.bandwidth_Bps for lk in problem.cluster.links} == {20e9, 5e9}


def test_memory_scales_or_sets_every_cap() -> None:
    problem = _chain()
    half, _ = apply_setting(problem, Setting(memory="50%"))
    assert [d.memory_bytes for d in half.cluster.devices] == [64 * 1024**2] * 4
    fixed, _ = apply_setting(problem, Setting(memory="8 MiB"))
    assert [d.memory_bytes for d in fixed.cluster.devices] == [8 * 1024**2] * 4
    assert [d.memory_bytes for d in problem.cluster.devices] == [128 * 1024**2] * 4


def test_devices_keeps_the_first_n_and_drops_pins_to_removed_ones() -> None:
    problem = _chain()
    small, warnings = apply_setting(problem, Setting(devices="2"))
    assert [d.name for d in small.cluster.devices] == ["gpu0", "gpu1"]
    assert all(lk.src < 2 and lk.dst < 2 for lk in small.cluster.links)
    assert len(small.cluster.links) == 2  # gpu0 <-> gpu1
    ops = problem.graph.op_index
    assert dict(small.pins) == {ops["embed"]: 0}
    assert warnings == ["dropped 1 pin(s) to removed devices: head→gpu3"]
    assert len(problem.pins) == 2


def test_more_devices_than_the_cluster_has_is_a_setting_error() -> None:
    with pytest.raises(SettingError, match="has only 4 devices"):
        apply_setting(_chain(), Setting(devices="5"))


def test_fewer_devices_than_the_plans_pipelines_is_said_so_not_a_memory_failure() -> None:
    """`--devices 2` of a `data_parallel 4` plan: the row said "no hybrid layout ... fits
    the devices' memory" (helper), where `check` says E257 of such a spec."""
    import dataclasses

    from planner.model import Pipeline

    chain = _chain()
    four = dataclasses.replace(chain, pipeline=Pipeline(microbatches=4, data_parallel=4))
    for devices in ("2", "3"):
        with pytest.raises(SettingError) as err:
            apply_setting(four, Setting(devices=devices))
        assert str(err.value) == (f"--devices {devices}: plan `chain_on_quad`'s "
                                  "`data_parallel 4` runs 4 pipelines, which need at least "
                                  "4 devices")
    assert len(apply_setting(four, Setting(devices="4"))[0].cluster.devices) == 4
    auto = dataclasses.replace(four, pipeline=Pipeline(microbatches=4, data_parallel="auto"))
    assert len(apply_setting(auto, Setting(devices="2"))[0].cluster.devices) == 2


@pytest.mark.parametrize(("setting", "words"), [
    (Setting(memory="1e+12%"), "--memory 1e+12%: makes `gpu0` of cluster `quad`"),
    (Setting(memory="1e-10%"), "--memory 1e-10%: makes `gpu0` of cluster `quad` 0 B"),
    (Setting(bandwidth="1e-14x"), "--bandwidth 1e-14x: makes `gpu0 -> gpu1`"),
])
def test_a_factor_that_takes_this_spec_out_of_range_is_a_setting_error(
        setting: Setting, words: str) -> None:
    """A factor within the parse-time range can still take one spec's caps past 1 PiB,
    below 1 B, or a link below 1 B/s: the row says which, as a spec's own value out of
    range is refused (it was a 610-billion-MiB cap, or a makespan of 1e14 s, or an
    OverflowError)."""
    with pytest.raises(SettingError) as err:
        apply_setting(_chain(), setting)
    assert str(err.value).startswith(words) and "outside 1 B" in str(err.value)


def test_a_factor_that_meets_a_bound_but_for_rounding_is_in_range_as_in_a_spec() -> None:
    """`--bandwidth` judges a scaled link by the language's rule (`units.range_side`), which
    takes a value a rounding above a bound (`bandwidth 1000000.0000000001 GB/s` loads):
    1000000000000000.1 B/s made by a factor was a setting error, the same value written in a
    spec is not."""
    text = ("cluster c { device d[0..1] { memory 1 GiB } link d0 <-> d1 { bandwidth %s } }\n"
            "graph g { op a { time 1 ms  output 1 MB } op b { time 1 ms } a -> b }\n"
            "plan p { graph g  cluster c }\n")
    scaled, _ = apply_setting(planner.loads(text % "7 GB/s").plan(),
                              Setting(bandwidth="142857.14285714287x"))
    written = planner.loads(text % "1000000.0000000001 GB/s").plan()
    assert scaled.cluster.links[0].bandwidth_Bps == written.cluster.links[0].bandwidth_Bps > 1e15
