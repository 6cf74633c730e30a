"""Limits (`planner/limits.py`): each is a located diagnostic before the work or memory it
bounds is spent, and `--limit NAME=VALUE` raises it.

Before: no limit at all (a 10 MB unterminated string took 3 GB; 200,000 unknown ops in a
placement file printed 49 MB of diagnostics; a 3,000-deep import chain said "input too
deeply nested" with no file).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from planner import limits
from planner.errors import SpecError
from planner.generate.builder import Builder
from planner.limits import Limits
from planner.spec.load import load_path, load_text

from .helpers import invoke

CLUSTER = ("cluster c {\n  device d[0..1] { memory 1 GiB }\n"
           "  link d[*] <-> d[*] { bandwidth 1 GB/s }\n}\n")


def _diags(text: str, lim: Limits, base: Path | None = None) -> list[tuple[str, int]]:
    with limits.using(lim), pytest.raises(SpecError) as info:
        load_text(text, "l.plan", base=base or Path("."))
    return [(d.code, d.span.line if d.span else 0) for d in info.value.diagnostics]


def test_limits_live_in_one_frozen_table_with_documented_defaults() -> None:
    d = limits.DEFAULTS
    assert (d.file_bytes, d.ops, d.edges, d.devices, d.link_pairs, d.plans, d.import_depth,
            d.diagnostics) == (32 * 2**20, 500_000, 2_000_000, 1024, 4 * 2**20, 10_000, 64, 100)
    with pytest.raises(AttributeError):
        d.ops = 1  # type: ignore[misc]
    assert set(limits.DESCRIPTIONS) == set(Limits.__slots__)


def test_ops_edges_and_plans_are_counted_before_the_model_is_built() -> None:
    ops = "graph g {\n" + "".join(f"  op o{i} {{ time 1 ms }}\n" for i in range(4)) + "}\n"
    assert _diags(ops, Limits(ops=3)) == [("E011", 5)]  # at the fourth op
    edges = "graph g {\n  op a { time 1 ms }\n  op b { time 1 ms }\n  a -> b\n  a -> b -> a\n}"
    assert _diags(edges, Limits(edges=2)) == [("E012", 5)]
    plans = CLUSTER + "graph g { op a { time 1 ms } }\n" + "".join(
        f"plan p{i} {{ graph g  cluster c }}\n" for i in range(3))
    assert _diags(plans, Limits(plans=2)) == [("E014", 8)]


def test_devices_and_link_pairs_are_bounded_before_expansion() -> None:
    assert _diags("cluster c { device d[0..4] { memory 1 GiB } }", Limits(devices=4)) == [
        ("E246", 1)]
    # 20 x `d[*]` on each side over 4 devices: 4 x 4 x 2 = 32 directed pairs once deduped
    side = ", ".join(["d[*]"] * 20)
    text = (f"cluster c {{\n  device d[0..3] {{ memory 1 GiB }}\n"
            f"  link {side} <-> {side} {{ bandwidth 1 GB/s }}\n}}\n")
    with limits.using(Limits(link_pairs=32)):
        assert len(load_text(text, "l.plan").spec.clusters["c"].links) == 12
    assert _diags(text, Limits(link_pairs=31)) == [("E013", 3)]


def test_devices_and_link_pairs_are_counted_across_the_clusters_of_a_load() -> None:
    # per cluster, 200 clusters of `gpu[0..1023]` (10 KB) asked for 200k devices
    three = "".join(f"cluster c{k} {{ device d[0..1] {{ memory 1 GiB }}  link d0 <-> d1 "
                    "{ bandwidth 1 GB/s } }\n" for k in range(3))
    with limits.using(Limits(devices=5)), pytest.raises(SpecError) as info:
        load_text(three, "l.plan")
    (d,) = info.value.diagnostics
    assert (d.code, d.span.line if d.span else 0) == ("E246", 3)
    assert "the clusters of this load would have more than 5 devices" in d.message
    meshes = "".join(f"cluster c{k} {{\n  device d[0..3] {{ memory 1 GiB }}\n"
                     f"  link d[*] <-> d[*] {{ bandwidth 1 GB/s }}\n}}\n" for k in range(3))
    # 4 x 4 x 2 = 32 pairs a cluster: the third goes past 90, the first two stay within it
    with limits.using(Limits(link_pairs=90)), pytest.raises(SpecError) as info:
        load_text(meshes, "l.plan")
    (d,) = info.value.diagnostics
    assert (d.code, d.span.line if d.span else 0) == ("E013", 11)
    assert "the links of the clusters of this load name more than 90" in d.message
    with limits.using(Limits(link_pairs=96)):
        assert len(load_text(meshes, "l.plan").spec.clusters) == 3


def test_glob_work_is_bounded_across_patterns() -> None:
    # 20k ops and 2k patterns `*_{i}` took 7.7 s: each scans every name
    ops = "".join(f"  op o{i}_x {{ time 1 ms }}\n" for i in range(100))
    # `*o{i}_x` tests all 100 names (no literal prefix) and selects one op: 101 each
    cols = "".join(f'  colocate "*o{i}_x", o{i + 1}_x\n' for i in range(0, 98, 2))
    text = CLUSTER + "graph g {\n" + ops + cols + "}\n"
    with limits.using(Limits(glob_names=101 * 10)), pytest.raises(SpecError) as info:
        load_text(text, "l.plan")
    (d,) = info.value.diagnostics  # said once, at the 11th pattern (line 5 + 100 + 11)
    assert (d.code, d.span.line if d.span else 0) == ("E015", 116)
    assert "glob_names=2020" in d.hints[0]
    with limits.using(Limits(glob_names=101 * 49)):
        assert len(load_text(text, "l.plan").spec.graphs["g"].colocations) == 49
    # a literal prefix keeps a pattern's work to the names that start with it
    prefixed = CLUSTER + "graph g {\n" + ops + "".join(
        f'  colocate "o{i}_*", o{i + 1}_x\n' for i in range(10, 98, 2)) + "}\n"
    with limits.using(Limits(glob_names=101 * 10)):
        assert len(load_text(prefixed, "l.plan").spec.graphs["g"].colocations) == 44


def test_file_size_is_checked_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.plan"
    big.write_text('graph g { op "' + "x" * 5000)  # an unterminated string
    with limits.using(Limits(file_bytes=4096)), pytest.raises(SpecError) as info:
        load_path(big)
    (d,) = info.value.diagnostics
    assert d.code == "E007" and "4,096" in d.message
    # one hint, not one per character of it (a bare string was rendered letter by letter)
    assert d.hints == ("raise it with `--limit file_bytes=8192`",)


def test_import_depth_names_the_file(tmp_path: Path) -> None:
    for i in range(100):
        (tmp_path / f"f{i}.plan").write_text(f'import "f{i + 1}.plan"\n')
    (tmp_path / "f100.plan").write_text("graph g { op a { time 1 ms } }\n")
    with pytest.raises(SpecError) as info:
        load_path(tmp_path / "f0.plan")
    (d,) = info.value.diagnostics
    assert d.code == "E009" and d.span is not None
    assert d.span.file.endswith("f63.plan") and "f64.plan" in d.message
    with limits.using(Limits(import_depth=200)):
        assert "g" in load_path(tmp_path / "f0.plan").spec.graphs


def test_diagnostics_are_capped_and_the_rest_counted() -> None:
    text = "graph g {\n" + "".join(f"  op o{i} {{ tiem 1 ms }}\n" for i in range(30)) + "}"
    found = _diags(text, Limits(diagnostics=5))
    assert len(found) == 6 and found[-1] == ("E000", 0)


def test_the_count_of_errors_is_theirs_not_the_shown_ones(tmp_path: Path) -> None:
    # before: "checked 1 file(s) (s.plan): 6 error(s)" and `"errors": 6` for 30 errors:
    # the 5 shown and E000, which says how many more there are, counted as one more
    (tmp_path / "s.plan").write_text(
        "graph g {\n" + "".join(f"  op o{i} {{ tiem 1 ms }}\n" for i in range(30)) + "}\n")
    code, _, err = invoke(["check", "s.plan", "--limit", "diagnostics=5"], tmp_path)
    assert code == 1 and "25 more diagnostic(s) not shown" in err
    assert err.endswith("checked 1 file(s) (s.plan): 30 error(s)\n")
    code, out, _ = invoke(["check", "s.plan", "--limit", "diagnostics=5", "--json"], tmp_path)
    doc = json.loads(out)
    assert (doc["errors"], doc["warnings"], len(doc["diagnostics"])) == (30, 0, 6)
    assert doc["result"]["errors"] == 30


def _warned(ops: int, last: str = "") -> str:
    """A spec with one W236 (a colocation group of one op) per op, then `last`."""
    return (CLUSTER + "graph g {\n" + "".join(f"  op o{i} {{ time 1 ms }}\n  colocate o{i}\n"
                                         for i in range(ops)) + last + "}\n"
            "plan p { graph g  cluster c }\n")


def test_an_error_past_the_limit_of_warnings_is_shown_and_fails(tmp_path: Path) -> None:
    # before: 101 warnings, then an unknown op: the error was only counted, and no one
    # asked for the count: `check` said ok (exit 0), `solve` ran, `planner.load` passed
    (tmp_path / "s.plan").write_text(_warned(101, "  colocate o0, nosuch\n"))
    code, _, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 1 and "error[E203]: unknown op `nosuch`" in err
    assert "2 more diagnostic(s) not shown" in err  # the warnings it displaced
    code, _, _ = invoke(["solve", "s.plan"], tmp_path)
    assert code == 1
    with pytest.raises(SpecError, match="E203"):
        load_path(tmp_path / "s.plan")
    code, out, _ = invoke(["check", "s.plan", "--json"], tmp_path)
    doc = json.loads(out)
    assert (doc["errors"], doc["warnings"], doc["exit_code"]) == (1, 101, 1)


def test_warnings_past_the_limit_are_counted(tmp_path: Path) -> None:
    # before: 150 warnings were 100 (`"warnings": 100`), the rest without an E000
    (tmp_path / "s.plan").write_text(_warned(150))
    code, out, _ = invoke(["check", "s.plan", "--json"], tmp_path)
    doc = json.loads(out)
    assert (code, doc["errors"], doc["warnings"]) == (0, 0, 150)
    assert doc["diagnostics"][-1]["code"] == "W000"
    assert doc["diagnostics"][-1]["severity"] == "warning"


def test_the_command_line_raises_a_limit_and_rejects_a_bad_one(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(
        CLUSTER + "graph g {\n" + "".join(f"  op o{i} {{ time 1 ms }}\n" for i in range(3))
        + "}\nplan p { graph g  cluster c }\n")
    code, _, err = invoke(["check", "s.plan", "--limit", "ops=2"], tmp_path)
    assert code == 1 and "E011" in err and "--limit ops=4" in err
    code, _, err = invoke(["check", "s.plan", "--limit", "ops=3", "--limit", "edges=9"],
                          tmp_path)
    assert code == 0, err
    code, out, _ = invoke(["check", "s.plan", "--json", "--limit", "opz=3"], tmp_path)
    doc = json.loads(out)
    assert code == 2 and doc["diagnostics"][0]["code"] == "E606"
    # the next command runs with the defaults again
    assert limits.active() == limits.DEFAULTS


@pytest.mark.parametrize(("limit", "code", "needed"), [
    ("ops=20", "E011", "--limit ops=33"),  # 2 layers: 33 ops, 40 edges
    ("edges=39", "E012", "--limit edges=40"),
    ("file-bytes=1000", "E007", "--limit file-bytes="),
])
def test_a_spec_made_over_a_limit_is_refused_before_it_is_written(
        tmp_path: Path, limit: str, code: str, needed: str) -> None:
    """Before: `generate transformer --layers 30000 --training` (840,009 ops) ran for 2 min
    40 s, then refused with "this is a bug in planner's importer" (E932)."""
    args = ["generate", "transformer", "--layers", "2", "-o", "g.plan"]
    err_code, _, err = invoke([*args, "--limit", limit], tmp_path)
    assert err_code == 1 and f"error[{code}]: the spec would hold a " in err, err
    assert needed in err and "bug" not in err and not (tmp_path / "g.plan").exists()
    # the `--limit` the hint names lets it through, here and in the commands that load it
    raised = err.split("`--limit ")[1].split("`")[0]
    assert invoke([*args, "--limit", raised], tmp_path)[0] == 0
    assert f"--limit {raised} -o g.plan" in (tmp_path / "g.plan").read_text()  # the header
    assert invoke(["check", "g.plan", "--limit", limit], tmp_path)[0] == 1
    assert invoke(["check", "g.plan", "--limit", raised], tmp_path)[0] == 0
    assert limits.active() == limits.DEFAULTS


def _no_op(*_: object, **__: object) -> str:
    """`Builder.op` where no op may be built: it ends the command with exit 99."""
    raise SystemExit(99)


@pytest.mark.parametrize(("args", "code", "count"), [
    (["transformer", "--layers", "1000000", "--hidden", "64", "--heads", "1", "--seq", "8",
      "--batch", "1", "--vocab", "100"], "E011", "14_000_005 ops"),
    (["gnmt", "--layers", "2", "--seq", "100000"], "E011", "1_700_012 ops"),
    (["transformer", "--arch", "encdec", "--layers", "2", "--training", "--limit",
      "edges=200"], "E012", "a graph of 284 edges"),
    (["gnmt", "--layers", "2", "--seq", "3", "--limit", "ops=50"], "E011", "63 ops"),
])
def test_generate_refuses_a_graph_over_a_limit_before_building_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], code: str,
        count: str) -> None:
    """Before: the generator built the whole graph, then `_finish` counted it:
    `generate gnmt --layers 2 --seq 100000` ran 32.8 s and peaked at 1.56 GB before E011,
    and `generate transformer --layers 1000000 ...` under `ulimit -v 3000000` died of a
    MemoryError after 70 s, never reaching E011. Now E011/E012 from the options' count,
    with no op built (an op built here ends the command: exit 99)."""
    monkeypatch.setattr(Builder, "op", _no_op)
    err_code, _, err = invoke(["generate", *args, "-o", "g.plan"], tmp_path)
    assert err_code == 1 and f"error[{code}]: the spec would hold a graph of " in err, err
    assert count in err and not (tmp_path / "g.plan").exists()


def test_generate_checks_every_option_before_the_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad option of a graph over the limit is E930 (exit 2), as for a small one, with no
    op built: the size is counted once the options are known good, the optimizer included
    (before: an unknown `--optimizer` was found once the forward graph was built)."""
    monkeypatch.setattr(Builder, "op", _no_op)
    huge = ["generate", "transformer", "--layers", "1000000", "-o", "g.plan"]
    for bad, said in ((["--heads", "5"], "not a multiple of --heads"),
                      (["--dtype", "int8"], "unknown dtype"),
                      (["--training", "--optimizer", "lion"], "unknown optimizer `lion`")):
        err_code, _, err = invoke([*huge, *bad], tmp_path)
        assert err_code == 2 and "E930" in err and said in err, err


def test_a_placement_file_of_unknown_ops_prints_a_bounded_report(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(
        CLUSTER + "graph g { op a { time 1 ms } }\nplan p { graph g  cluster c }\n")
    (tmp_path / "p.json").write_text(json.dumps(
        {"placement": {f"unknown{i}": "d0" for i in range(20_000)}}))
    code, _, err = invoke(["simulate", "s.plan", "--placement", "p.json"], tmp_path)
    assert code == 1
    assert err.count("error[E503]") == 100 and "19900 more diagnostic(s)" in err
    assert len(err) < 40_000


def test_an_unterminated_string_costs_no_memory_per_byte() -> None:
    """A 2 MB unterminated string: the string terminal is possessive, so a failed match
    keeps no backtracking state (before: 300 bytes per byte, 3 GB for 10 MB)."""
    import tracemalloc

    from planner.spec.parse import parse

    text = 'graph g { op "' + "x" * 2_000_000
    tracemalloc.start()
    try:
        with pytest.raises(SpecError) as info:
            parse(text, "s.plan")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.diagnostics[0].code == "E104"
    assert peak < 40 * 2**20, peak  # the text itself is 2 MB; before: 600 MB


@pytest.mark.parametrize("limit", ["ops", "edges"])
def test_the_limit_e011_and_e012_hint_at_lets_the_spec_through(tmp_path: Path,
                                                               limit: str) -> None:
    # the hint was twice the limit: `--limit ops=1` on 10 ops hinted ops=2, which failed
    # again (then 4, 8, 16); it is now at least the count of ops (hops) the graph writes
    (tmp_path / "s.plan").write_text(
        CLUSTER + "graph g {\n" + "".join(f"  op o{i} {{ time 1 ms }}\n" for i in range(10))
        + "  " + " -> ".join(f"o{i}" for i in range(10)) + "\n}\nplan p { graph g  cluster c }\n")
    code, _, err = invoke(["check", "s.plan", "--limit", f"{limit}=1"], tmp_path)
    assert code == 1 and ("E011" if limit == "ops" else "E012") in err, err
    hinted = re.search(rf"--limit ({limit}=\d+)", err)
    assert hinted, err
    code, _, err = invoke(["check", "s.plan", "--limit", hinted.group(1)], tmp_path)
    assert code == 0, err


def test_plans_and_devices_hints_name_a_limit_that_lets_the_spec_through() -> None:
    """E014 and E246 hinted twice the limit whatever the spec wrote: 30 plans over
    `--limit plans=2` hinted plans=4 (then 8, 16, 32), now 30; 5 clusters of 2 devices
    over `devices=2` hinted devices=4, now 10 (E011/E012 already said the count)."""
    plans = CLUSTER + "graph g { op a { time 1 ms } }\n" + "".join(
        f"plan p{i} {{ graph g  cluster c }}\n" for i in range(30))
    with limits.using(Limits(plans=2)), pytest.raises(SpecError) as info:
        load_text(plans, "l.plan")
    assert {d.hints for d in info.value.diagnostics} == {
        ("raise the limit with `--limit plans=30`",)}
    clusters = "".join(f"cluster c{k} {{ device d[0..1] {{ memory 1 GiB }}  link d0 <-> d1 "
                       "{ bandwidth 1 GB/s } }\n" for k in range(5))
    with limits.using(Limits(devices=2)), pytest.raises(SpecError) as info:
        load_text(clusters, "l.plan")
    (d,) = info.value.diagnostics
    assert (d.code, d.hints) == ("E246", ("raise the limit with `--limit devices=10`",))
    with limits.using(Limits(devices=10, plans=30)):  # the hinted values let them through
        assert len(load_text(clusters, "l.plan").spec.clusters) == 5
        assert len(load_text(plans, "l.plan").spec.plans) == 30


def test_one_files_warnings_do_not_hide_anothers_error(tmp_path: Path) -> None:
    # `check a.plan b.plan`: 120 warnings in a, an error in b. Before: the 100 shown were
    # a's warnings, b's error only "error[E000]: 2 more diagnostic(s)" (a's last 20 warnings
    # not counted at all)
    (tmp_path / "a.plan").write_text(_warned(120))
    (tmp_path / "b.plan").write_text(_warned(1, "  colocate o0, nosuch\n"))
    code, _, err = invoke(["check", "a.plan", "b.plan"], tmp_path)
    assert code == 1 and "b.plan:8:16: error[E203]: unknown op `nosuch`" in err
    assert "warning[W000]: 22 more diagnostic(s) not shown" in err
