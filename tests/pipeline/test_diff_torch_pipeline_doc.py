"""`planner diff` reads the JSON that `export torch --pipeline` writes as `simulate
--placement` does (`given.exported`): the split it exports; a document of replicated stages
(its `mesh`) is E502. Before: E642 'unknown format planner-torch-pipeline' for each."""

from __future__ import annotations

import json
from pathlib import Path

from cli.helpers import invoke
from pipe_support import chain_text

SPEC = chain_text(2, 2, microbatches=4, memory="1 GiB")
PLACEMENT = {"f0": "d0", "f0.bwd": "d0", "f1": "d1", "f1.bwd": "d1"}
EXPORTED = {"format": "planner-torch-pipeline", "version": 1, "plan": "p",
            "schedule": "1f1b", "ranks": 2, "placement": PLACEMENT,
            "stages": [{"stage": 0, "rank": 0, "device": "d0", "ops": ["f0"]},
                       {"stage": 1, "rank": 1, "device": "d1", "ops": ["f1"]}],
            "cost": {"period_s": 0.0}}


def _write(tmp_path: Path, name: str, doc: dict[str, object]) -> str:
    (tmp_path / name).write_text(json.dumps(doc))
    return name


def test_an_exported_document_diffs_as_its_split(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    plan = _write(tmp_path, "plan.json", {"format": "planner.plan", "version": 1,
                                          "plan": "p", "placement": PLACEMENT})
    same = _write(tmp_path, "same.json", EXPORTED)
    code, out, err = invoke(["diff", plan, same, "--spec", "s.plan", "--format", "json"],
                            tmp_path)
    assert code == 0, err
    result = json.loads(out)["result"]
    assert result["moved"] == [] and result["devices_changed"] == []
    assert result["old"]["iteration_s"] == result["new"]["iteration_s"]
    # its recompute is the plan's, read without a spec too
    again = _write(tmp_path, "again.json", {**EXPORTED, "recompute": ["d0"]})
    code, out, err = invoke(["diff", plan, again, "--format", "json"], tmp_path)
    assert code == 0 and json.loads(out)["result"]["recompute_changed"], err


def test_a_document_of_replicated_stages_is_e502(tmp_path: Path) -> None:
    plan = _write(tmp_path, "plan.json", {"placement": PLACEMENT})
    mesh = _write(tmp_path, "mesh.json", {**EXPORTED, "data_parallel": 2,
                                          "mesh": {"shape": [1, 2], "dims": ["pp", "dp"]}})
    code, _, err = invoke(["diff", plan, mesh], tmp_path)
    assert code != 0 and "mesh.json:1:12: error[E502]" in err and "replicated stages" in err
    assert "give the plan file it was exported from" in err
