"""Every JSON document planner writes is strict JSON (no NaN or Infinity).

Before: `planner simulate --json` on a plan whose makespan/bound overflows printed
`"ratio": Infinity` and `"gap": Infinity`, which strict parsers reject. Now a non-finite
figure is `null` ("no finite value"), and `allow_nan=False` guards every writer.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import planner.render.report
from planner.strictjson import dumps, finite

from .runtime_support import SMALL, invoke, strict_loads

#: a plan whose simulated makespan (a 1 ms transfer) over its bound (2e-320 s of compute)
#: overflows a float: the ratio and gap are infinite
OVERFLOW = """
graph g { op a { time 1e-320 s  output 1 MB }  op b { time 1e-320 s }  a -> b }
cluster c { device gpu[0..1] { memory 1 GB }  link gpu[*] <-> gpu[*] { bandwidth 1 GB/s } }
plan p { graph g cluster c  place a on gpu0  place b on gpu1 }
"""

#: (command line, the file it writes or None for stdout)
COMMANDS: list[tuple[list[str], str | None]] = [
    (["check", "--json", "s.plan"], None),
    (["simulate", "--json", "s.plan"], None),
    (["solve", "--json", "s.plan", "--algo", "metf"], None),
    (["solve", "--json", "s.plan", "--algo", "heft"], None),
    (["solve", "--json", "s.plan", "--algo", "auto", "--time-limit", "1"], None),
    (["solve", "s.plan", "--algo", "heft", "--out", "p.json"], "p.json"),
    (["compare", "--json", "s.plan", "--algos", "heft,metf", "--executor", "inline"], None),
    (["compare", "s.plan", "--algos", "heft", "--executor", "inline", "--out", "r.json"],
     "r.json"),
    (["compare", "s.plan", "--algos", "heft", "--executor", "inline", "--out", "r.jsonl"],
     "r.jsonl"),
    (["export", "json", "s.plan", "-o", "e.json"], "e.json"),
    (["check", "--json", "--no-such-option"], None),
]


def _documents(text: str, name: str | None) -> list[Any]:
    if name is not None and name.endswith(".jsonl"):
        return [strict_loads(line) for line in text.splitlines() if line.strip()]
    return [strict_loads(text)]


@pytest.mark.parametrize("spec", [SMALL, OVERFLOW], ids=["small", "overflow"])
@pytest.mark.parametrize("args,written", COMMANDS, ids=lambda c: " ".join(c[:3])
                         if isinstance(c, list) else str(c))
def test_every_json_output_parses_strictly(tmp_path: Path, spec: str, args: list[str],
                                           written: str | None) -> None:
    (tmp_path / "s.plan").write_text(spec)
    code, out, err = invoke(args, tmp_path)
    assert "Traceback" not in err
    text = (tmp_path / written).read_text(encoding="utf-8") if written and code == 0 else out
    if written and code != 0:
        return  # nothing written (a diagnostic on stderr); stdout is not JSON here
    docs = _documents(text, written)
    assert docs, (code, err)


def test_an_infinite_figure_is_null_in_the_json_report(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    real = planner.render.report.report_json

    def overflowing(*args: Any) -> dict[str, Any]:
        obj = real(*args)
        obj["ratio"] = math.inf
        obj["lower_bound_s"] = -math.inf
        obj["extra"] = [math.nan, {"deep": math.inf}]
        return obj

    monkeypatch.setattr(planner.render.report, "report_json", overflowing)
    (tmp_path / "s.plan").write_text(SMALL)
    code, out, _ = invoke(["simulate", "--json", "s.plan"], tmp_path)
    doc = strict_loads(out)
    assert code == 0 and doc["ok"]
    result = doc["result"]
    assert (result["ratio"], result["lower_bound_s"]) == (None, None)
    assert result["extra"] == [None, {"deep": None}]
    assert result["makespan_s"] > 0  # the finite figures are kept


def test_the_overflowing_plan_reports_null_ratio_and_gap(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(OVERFLOW)
    code, out, _ = invoke(["simulate", "--json", "s.plan"], tmp_path)
    doc = strict_loads(out)
    if code != 0:  # the spec layer may come to refuse 1e-320 s: then a diagnostic, no result
        assert doc["diagnostics"]
        return
    assert doc["result"]["ratio"] is None and doc["result"]["gap"] is None


def test_strict_dumps_maps_non_finite_values_and_keeps_the_rest() -> None:
    obj = {"a": 1.5, "b": [math.inf, -math.inf, math.nan, 2], "c": (0.0, "x"), "d": None}
    assert strict_loads(dumps(obj)) == {"a": 1.5, "b": [None, None, None, 2],
                                        "c": [0.0, "x"], "d": None}
    assert finite(True) is True and finite(7) == 7
