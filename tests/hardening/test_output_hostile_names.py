"""Every output format escapes what it did not write (issue 29): one set of hostile names,
each legal in the language (E261 keeps control characters out of specs), goes through
every format planner writes, and each format shows them as data: the terminal (rich
markup shown as written), JSON documents and the trace (round trip), HTML (entities),
GitHub annotations (`%`, CR and LF encoded as the Actions toolkit does, no workflow
command of the name's own), SARIF, CSV (no cell a spreadsheet runs), `diff`, and the
exact model's LP and MPS files (names only in comment lines)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from .helpers import invoke
from .runtime_support import strict_loads

OPS = ["<script>alert(1)</script>", "=cmd|' /C calc'!A0", "::error::forged op",
       "%0A::warning::forged%0D", "[bold red]markup[/]", "@SUM(1)+x", "-2+3"]
DEVICES = ['gpu <b>0</b> & "x"', '=HYPERLINK("http://x")']
PLAN = "+SUM(1)|x"


def _q(name: str) -> str:
    return json.dumps(name)  # a spec's quoted name takes JSON's escapes


def _spec(big: str = "1 MB") -> str:
    """The names in a spec; the op whose name holds `%0A` has an output of `big`."""
    d0, d1 = map(_q, DEVICES)
    ops = "\n".join(f"  op {_q(n)} {{ time {k + 1} ms  output {big if '%' in n else '1 MB'} }}"
                    for k, n in enumerate(OPS))
    edges = "\n".join(f"  {_q(a)} -> {_q(b)}" for a, b in zip(OPS, OPS[1:], strict=False))
    return (f'cluster "c<i>&amp;" {{\n  device {d0} {{ memory 1 GiB }}\n'
            f"  device {d1} {{ memory 1 GiB }}\n  link {d0} <-> {d1} {{ bandwidth 10 GB/s }}\n}}\n"
            f'graph "g</script>" {{\n{ops}\n{edges}\n}}\n'
            f'plan {_q(PLAN)} {{ graph "g</script>"  cluster "c<i>&amp;" }}\n')


def _forged(text: str) -> list[str]:
    """Lines a GitHub runner would read as a workflow command of a name's making."""
    return [line for line in text.splitlines()
            if line.lstrip().startswith("::") and "forged" in line.split("::", 2)[1]]


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "h.plan").write_text(_spec())
    (tmp_path / "big.plan").write_text(_spec("3 GiB"))  # an op no device holds: E301
    return tmp_path


def _no_raw(text: str) -> None:
    assert "\x1b" not in text
    assert not _forged(text), _forged(text)


def test_the_terminal_shows_names_as_written(work: Path) -> None:
    code, out, err = invoke(["solve", "h.plan", "--algo", "metf"], work)
    assert code == 0, out + err
    _no_raw(out + err)
    assert "[bold red]markup" in out  # rich markup printed, not applied


def test_json_plan_and_trace_round_trip_every_name(work: Path) -> None:
    code, out, err = invoke(["solve", "h.plan", "--algo", "metf", "--json", "--out", "p.json",
                             "--trace", "t.json"], work)
    assert code == 0, err
    doc = strict_loads(out)
    assert set(doc["result"]["placement"]) == set(OPS)
    assert set(doc["result"]["placement"].values()) <= set(DEVICES)
    assert set(strict_loads((work / "p.json").read_text())["placement"]) == set(OPS)
    trace = strict_loads((work / "t.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert set(OPS) <= {e.get("name") for e in events}


def test_html_reports_escape_every_name(work: Path) -> None:
    code, out, err = invoke(["solve", "h.plan", "--algo", "metf", "--html", "p.html"], work)
    assert code == 0, err
    code, out, err = invoke(["compare", "h.plan", "--algos", "metf,heft", "--html", "c.html",
                             "--out", "rows.csv"], work)
    assert code == 0, err
    for page in ("p.html", "c.html"):
        html = (work / page).read_text()
        assert "<script>alert" not in html and "<b>0</b>" not in html and "<i>&amp;" not in html
        assert "gpu &lt;b&gt;0&lt;/b&gt; &amp;" in html or page == "c.html"
        assert "+SUM(1)|x" in html


def test_csv_and_json_rows_cannot_run_or_break(work: Path) -> None:
    for out in ("rows.csv", "rows.json"):
        code, text, err = invoke(["compare", "h.plan", "--algos", "metf", "--out", out], work)
        assert code == 0, err
    with open(work / "rows.csv", newline="", encoding="utf-8") as f:
        cells = [c for row in csv.reader(f) for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert f"'{PLAN}" in cells
    assert {r["plan"] for r in strict_loads((work / "rows.json").read_text())} == {PLAN}


@pytest.mark.parametrize("fmt", ["github", "sarif", "json", "text"])
def test_diagnostics_in_every_format_quote_names_as_data(work: Path, fmt: str) -> None:
    code, out, err = invoke(["check", "big.plan", "--format", fmt], work)
    assert code == 1, out + err
    _no_raw(out + err)
    if fmt == "github":
        line = next(x for x in out.splitlines() if x.startswith("::error ") and "E301" in x)
        # `%` itself encoded: the runner shows `%0A`, not a line break
        assert "op `%250A::warning::forged%250D` needs" in line, line
    elif fmt in ("sarif", "json"):
        assert "op `%0A::warning::forged%0D` needs" in json.dumps(strict_loads(out))


def test_diff_shows_names_as_data(work: Path) -> None:
    code, out, err = invoke(["solve", "h.plan", "--algo", "metf", "--out", "a.json"], work)
    assert code == 0, err
    plan = strict_loads((work / "a.json").read_text())
    plan["placement"] = {op: DEVICES[1] for op in plan["placement"]}
    plan.pop("order", None)
    (work / "b.json").write_text(json.dumps(plan))
    for fmt in ("text", "github"):
        code, out, err = invoke(["diff", "a.json", "b.json", "--format", fmt], work)
        assert code == 0, out + err
        _no_raw(out + err)
        assert "<script>alert(1)</script>: gpu <b>0</b>" in out + err


@pytest.mark.slow
@pytest.mark.parametrize("ext", [".lp", ".mps"])
def test_the_exact_model_names_things_only_in_comments(work: Path, ext: str) -> None:
    code, out, err = invoke(["solve", "h.plan", "--algo", "ilp", "--emit", f"m{ext}"], work)
    assert code == 0, err
    mark = "\\" if ext == ".lp" else "*"
    lines = (work / f"m{ext}").read_text().splitlines()
    named = [x for x in lines if any(n in x for n in (*OPS, *DEVICES, PLAN))]
    assert named and all(x.startswith(mark) for x in named), named
