"""`solve --json` writes a pipeline plan's `recompute` and `replicas` as the plan file and
`simulate --json` do (`plan.layout_json`): each only where it holds something. Before,
pipeilp gave `"recompute": []` and hybrid `"replicas": {}` where the other algorithms
gave neither: one field, two shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli.helpers import invoke
from pipe_support import tight_text, two_device_text


def _solved(tmp_path: Path, text: str, algo: str) -> dict[str, object]:
    (tmp_path / "p.plan").write_text(text)
    code, out, err = invoke(["solve", "p.plan", "--algo", algo, "--json"], tmp_path)
    assert code == 0, out + err
    result: dict[str, object] = json.loads(out)["result"]
    return result


@pytest.mark.parametrize("algo", ["pipeilp", "hybrid", "pipedp", "uniform"])
def test_a_plan_that_neither_recomputes_nor_replicates_has_neither_field(
        tmp_path: Path, algo: str) -> None:
    roomy = two_device_text("1 GiB", [1, 1, 1, 1], "microbatches 4; schedule 1f1b")
    result = _solved(tmp_path, roomy, algo)
    assert "recompute" not in result and "replicas" not in result, algo


def test_a_recomputing_plan_still_lists_its_devices(tmp_path: Path) -> None:
    # 34 MB: only [f0 f1 | f2 f3] fits, d0 recomputing (28 MB with 4 x 1 MB receive buffers
    # of its output's gradient; 40 MB not recomputing), d1 33 MB (4 x 3 MB of its input);
    # 25 MB before 2026-12-07's receive buffers, where nothing fits now
    result = _solved(tmp_path, tight_text("34 MB"), "pipeilp")
    assert result["recompute"] == ["d0"] and "replicas" not in result
