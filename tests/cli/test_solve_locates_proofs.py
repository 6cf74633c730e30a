"""`solve` says where a proof that no plan exists is, as `check` does: at the op, the pin
or the plan (it printed `error[E301]: op `d` needs ...` with no file:line:col and no source
line, where `check` pointed at `d`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import invoke

SPEC = """cluster c {
  device gpu[0..1] { memory 16 GiB }
  link gpu[*] <-> gpu[*] { bandwidth 50 GB/s }
}
graph g {
  op a { time 1 ms  output 1 MiB }
  op d { time 3 ms  params 17 GiB  output 1 MiB }
  a -> d
}
plan p { graph g  cluster c%s }
"""


@pytest.mark.parametrize("settings", ["", "  objective pipeline"])
def test_solve_locates_a_proof_where_check_does(tmp_path: Path, settings: str) -> None:
    (tmp_path / "big.plan").write_text(SPEC % settings, encoding="utf-8")
    code, out, err = invoke(["solve", "big.plan"], tmp_path)
    assert code == 3
    assert err.startswith("big.plan:7:6: error[E301]: op `d` needs at least 17.00 GiB"), err
    assert "op d { time 3 ms  params 17 GiB" in err
    code, out, _ = invoke(["solve", "big.plan", "--json"], tmp_path)
    where = [(d["code"], d["file"], d["line"], d["column"])
             for d in json.loads(out)["diagnostics"]]
    assert code == 3 and where == [("E301", "big.plan", 7, 6)]
    code, out, _ = invoke(["check", "big.plan", "--format", "json"], tmp_path)
    assert [(d["code"], d["file"], d["line"], d["column"])
            for d in json.loads(out)["diagnostics"]] == where
