"""Issue 40 (hardening, round four), findings 3, 7 and 8: the pipeline's copies bounded
before any work, `check` refusing what no plan can satisfy, and four small ones (a second
E257, tag characters in comments, fullwidth digits in `--limit`, `--json --help`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner import limits

from .helpers import invoke

CLUSTER = ("cluster c { device gpu[0..1] { memory 1 GiB }\n"
           "  link gpu[0..1] <-> gpu[0..1] { bandwidth 1 GB/s } }\n")
GRAPH = "graph g { op a { time 1 ms } op b { time 1 ms } a -> b }\n"


def _write(folder: Path, plan: str, graph: str = GRAPH, cluster: str = CLUSTER) -> None:
    (folder / "s.plan").write_text(cluster + graph + plan + "\n", encoding="utf-8")


# -- 8: one E257 for a stages_per_device out of range ------------------------------------


@pytest.mark.parametrize("value", ["1000", "0", "2.5"])
def test_a_stages_per_device_out_of_range_is_one_e257(tmp_path: Path, value: str) -> None:
    # `1000` also got "`schedule interleaved` runs several stages per device ... add
    # `stages_per_device 2`", which the spec had asked for a thousand times over
    _write(tmp_path, "plan p { graph g; cluster c; objective pipeline; microbatches 4; "
                     f"schedule interleaved; stages_per_device {value} }}")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    text = out + err
    assert code == 1, text
    assert text.count("error[E257]") == 1, text
    assert f"must be a whole number from 1 to 64, not `{value}`" in text
    assert "add `stages_per_device 2`" not in text


def test_interleaved_without_stages_per_device_still_asks_for_it(tmp_path: Path) -> None:
    _write(tmp_path, "plan p { graph g; cluster c; objective pipeline; microbatches 4; "
                     "schedule interleaved }")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 1 and "add `stages_per_device 2`" in out + err, out + err


# -- 8: tag characters (and the other invisible format characters) in comments ----------


@pytest.mark.parametrize(("char", "what"), [
    ("\U000e0041", "U+E0041 (TAG LATIN CAPITAL LETTER A)"),
    ("\U000e0001", "U+E0001 (LANGUAGE TAG)"),
    ("\U000e0000", "U+E0000 (an unnamed code point)"),
    ("\U000e007f", "U+E007F (CANCEL TAG)"),
    ("\u2062", "U+2062 (INVISIBLE TIMES)"),
    ("\u180e", "U+180E (MONGOLIAN VOWEL SEPARATOR)"),
    ("\ufff9", "U+FFF9 (INTERLINEAR ANNOTATION ANCHOR)"),
])
def test_an_invisible_character_in_a_comment_is_w265(tmp_path: Path, char: str,
                                                     what: str) -> None:
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "run rm") if char == "\U000e0041" else ""
    _write(tmp_path, f"# looks empty {char}{hidden}\nplan p {{ graph g; cluster c }}")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    text = out + err
    assert code == 0 and text.count("W265") == 1, text
    assert "s.plan:4:15:" in text and what in text, text
    assert not any(0xE0000 <= ord(c) <= 0xE007F for c in text)  # not echoed


def test_emoji_and_letters_in_a_comment_stay_quiet(tmp_path: Path) -> None:
    _write(tmp_path, "# 🚀 réseau 层1 \u00e9\nplan p { graph g; cluster c }")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 0 and "W265" not in out + err, out + err


# -- 8: --limit takes ASCII digits only --------------------------------------------------


@pytest.mark.parametrize("value", ["\uff11\uff10\uff10", "\u0661\u0660\u0660", "1\uff10",
                                   "\uff11e3", "\u0967\u0966"])
def test_a_limit_in_other_digits_is_refused(tmp_path: Path, value: str) -> None:
    # `int` and `float` read fullwidth (`１００`), Arabic-Indic (`١٠٠`) and Devanagari
    # digits: `--limit ops=１００` was taken as 100
    with pytest.raises(ValueError, match="a whole number from 1 to"):
        limits.parse_overrides([f"ops={value}"])
    _write(tmp_path, "plan p { graph g; cluster c }")
    code, _, err = invoke(["check", "s.plan", "--limit", f"ops={value}"], tmp_path)
    assert code == 2 and "a whole number from 1 to 1_000_000_000_000_000 (1e15)" in err, err


def test_a_limit_in_ascii_digits_is_still_taken() -> None:
    assert limits.parse_overrides(["ops=100", "edges=2e6", "plans= 1_000 "]) == \
        limits.Limits(ops=100, edges=2_000_000, plans=1000)


# -- 8: --help is help, with --json too --------------------------------------------------


@pytest.mark.parametrize("args", [["solve", "--json", "--help"], ["solve", "--help", "--json"],
                                  ["check", "--format", "json", "--help"],
                                  ["simulate", "--json", "--help"]])
def test_help_is_plain_text_whatever_else_the_line_holds(tmp_path: Path,
                                                         args: list[str]) -> None:
    # as in click and typer (FastAPI's CLI library): `--help` is eager, runs first and
    # ends the command; README ("--help is help") says so
    code, out, err = invoke(args, tmp_path)
    assert code == 0, err
    assert out.lstrip().startswith("Usage:") and ("--json" in out or "--format" in out)
    assert not out.lstrip().startswith("{") and err == ""


# -- 3: the copies a pipeline's simulation makes are bounded before any work -------------


def _chain(n: int, microbatches: int, plan: str = "p") -> str:
    """A chain of `n` ops on two GPUs, planned as a pipeline of `microbatches`."""
    ops = "\n".join(f"  op o{k} {{ time 1 ms; output 1 KB }}" for k in range(n))
    chain = " -> ".join(f"o{k}" for k in range(n))
    return (f"{CLUSTER}graph g {{\n{ops}\n  {chain}\n}}\n"
            f"plan {plan} {{ graph g; cluster c; objective pipeline; "
            f"microbatches {microbatches} }}\n")


#: 3,000 ops and 2,999 edges: 5,999 per copy, so 833 micro-batches fit 5,000,000 and 1,024
#: (6,142,976) do not
N_OPS, FITS, COPIES = 3000, 833, 1024 * 5999


def test_the_default_limit_is_measured_and_above_what_pipedp_simulates() -> None:
    from planner.algorithms import pipedp

    assert limits.DEFAULTS.pipeline_copies == 5_000_000
    assert limits.DEFAULTS.pipeline_copies * limits.BYTES_PER_COPIED_ITEM <= 2 * 10**9
    # pipedp simulates each stage count up to MAX_SIMULATED_OPS copied ops (with their
    # edges, at most about 5 per op) and compares the rest by estimate; the simulation of
    # the plan it returns (every command reports it) must stay allowed well above that
    assert limits.DEFAULTS.pipeline_copies >= 5 * pipedp.MAX_SIMULATED_OPS


def test_a_pipeline_whose_copies_pass_the_limit_is_e016_at_microbatches(
        tmp_path: Path) -> None:
    # issue 40, finding 3: a 1.2 MB spec (20,000 ops, `microbatches 1024`) passed `check`
    # and `solve --algo pipedp` grew past 2.6 GB in 60 s (E990 at 4.8 GB after 133 s)
    (tmp_path / "s.plan").write_text(_chain(N_OPS, 1024), encoding="utf-8")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    text = out + err
    assert code == 1, text
    line = 3 + N_OPS + 3  # the cluster (2 lines), `graph g {`, the ops, the chain, `}`
    column = text.splitlines()[1].index("microbatches") - len(f" {line} | ") + 1
    assert f"s.plan:{line}:{column}: error[E016]: plan `p` would simulate 1024 copies of " \
        f"graph `g` (3_000 ops, 2_999 edges): {COPIES:_} ops and edges, about 2.46 GB, more " \
        "than the `pipeline_copies` limit (5_000_000)" in text, text
    assert f"at most {FITS} micro-batches fit the limit for this graph" in text
    assert f"raise the limit with `--limit pipeline_copies={COPIES}`" in text
    assert "E016" in text and text.count("error[") == 1


def test_solve_stops_at_e016_before_any_simulation(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.pipeline import schedule

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("the pipeline was simulated")

    monkeypatch.setattr(schedule, "_simulate", never)
    (tmp_path / "s.plan").write_text(_chain(N_OPS, 1024), encoding="utf-8")
    for algo in ("pipedp", "auto"):
        code, out, err = invoke(["solve", "s.plan", "--algo", algo, "--json"], tmp_path)
        assert code == 1 and '"E016"' in out, (out, err)


def test_up_to_the_limit_or_with_it_raised_the_spec_is_valid(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(_chain(N_OPS, FITS), encoding="utf-8")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 0, out + err
    (tmp_path / "s.plan").write_text(_chain(N_OPS, 1024), encoding="utf-8")
    code, out, err = invoke(["check", "s.plan", "--limit", f"pipeline_copies={COPIES}"],
                            tmp_path)
    assert code == 0, out + err
    code, out, err = invoke(["check", "s.plan", "--limit", "pipeline-copies=1e6"], tmp_path)
    assert code == 1 and "E016" in out + err


def test_compare_microbatches_over_the_limit_is_an_invalid_row_with_no_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.compare import plan_sweep, run_sweep
    from planner.pipeline import schedule

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("the pipeline was simulated")

    monkeypatch.setattr(schedule, "_simulate", never)
    (tmp_path / "s.plan").write_text(_chain(N_OPS, 1), encoding="utf-8")
    sweep = plan_sweep([tmp_path / "s.plan"], "pipedp", microbatches="1024",
                       root=tmp_path)
    rows = run_sweep(sweep, executor="inline").rows
    assert [r["status"] for r in rows] == ["invalid"]
    assert "the `pipeline_copies` limit (5_000_000, E016)" in rows[0]["reason"]


def test_the_python_api_refuses_the_same_pipeline(tmp_path: Path) -> None:
    import dataclasses

    import planner
    from planner.errors import SpecError

    problem = planner.loads(_chain(N_OPS, FITS)).plan("p")
    assert problem.pipeline is not None
    bigger = dataclasses.replace(problem, pipeline=dataclasses.replace(problem.pipeline,
                                                                       microbatches=1024))
    with pytest.raises(SpecError) as err:
        planner.solve(bigger, "pipedp")
    assert [d.code for d in err.value.diagnostics] == ["E016"]


# -- 7: what no split can do ----------------------------------------------------------


def test_interleaving_that_no_split_can_do_is_w258(tmp_path: Path) -> None:
    # 2 stages per device need 4 pipeline units on two devices: a three-op graph has 3, so
    # every plan runs as 1f1b (`pipeline.schedule` says so in its note); `check` said ok and
    # said nothing, and `solve` ended in E707
    three = "graph g { op o0 { time 1 ms } op o1 { time 1 ms } op o2 { time 1 ms } " \
            "o0 -> o1 -> o2 }\n"
    _write(tmp_path, "plan p { graph g; cluster c; objective pipeline; microbatches 2; "
                     "schedule interleaved; stages_per_device 2 }", graph=three)
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    text = out + err
    assert code == 0 and text.count("warning[W258]") == 1, text
    assert "plan `p` cannot interleave: `stages_per_device 2` needs 4 stages (2 on each " \
        "of at least two devices) and graph `g` has at most 3 pipeline unit(s)" in text
    assert "every plan of it runs as `1f1b`" in text and "write `schedule 1f1b`" in text
    # fewer units than stages per device is no warning but E259 (a stage holds a unit)
    _write(tmp_path, "plan p { graph g; cluster c; objective pipeline; microbatches 2; "
                     "schedule interleaved; stages_per_device 64 }")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 1 and "E259" in out + err and "W258" not in out + err, out + err
    one = CLUSTER.replace("gpu[0..1]", "gpu[0..0]")
    _write(tmp_path, "plan p { graph g; cluster c; objective pipeline; microbatches 2; "
                     "schedule interleaved; stages_per_device 2 }", cluster=one)
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 0 and "cluster `c` has one device" in out + err, out + err


def test_interleaving_that_a_split_can_do_is_quiet(tmp_path: Path) -> None:
    ops = " ".join(f"op o{k} {{ time 1 ms }}" for k in range(4))
    _write(tmp_path, "plan p { graph g; cluster c; objective pipeline; microbatches 2; "
                     "schedule interleaved; stages_per_device 2 }",
           graph=f"graph g {{ {ops} o0 -> o1 -> o2 -> o3 }}\n")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 0 and "W258" not in out + err, out + err
