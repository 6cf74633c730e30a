"""`simulate --placement` of the JSON that `export torch --pipeline` writes runs the split as
exported (its `placement`, regrouped by `--ranks`, and `recompute`), as a plan file of that
placement runs; a document of replicated stages (its `mesh`) is E502 with a hint that says
how to check it. Before: E502 'unsupported plan format' for every such document."""

from __future__ import annotations

import json
from pathlib import Path

from cli.helpers import invoke
from pipe_support import chain_text

SPEC = chain_text(2, 2, microbatches=4, memory="1 GiB")
PLACEMENT = {"f0": "d0", "f0.bwd": "d0", "f1": "d1", "f1.bwd": "d1"}


def _pipeline(tmp_path: Path, doc: dict[str, object]) -> dict[str, object]:
    (tmp_path / "f.json").write_text(json.dumps(doc))
    code, out, err = invoke(["simulate", "s.plan", "--placement", "f.json", "--json"],
                            tmp_path)
    assert code == 0, err
    return json.loads(out)["result"]["pipeline"]


def test_an_exported_pipeline_document_simulates_as_its_placement(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    plain = _pipeline(tmp_path, {"placement": PLACEMENT})
    exported = {"format": "planner-torch-pipeline", "version": 1, "plan": "p",
                "schedule": "1f1b", "ranks": 2, "placement": PLACEMENT,
                "stages": [{"stage": 0, "rank": 0, "device": "d0", "ops": ["f0"]},
                           {"stage": 1, "rank": 1, "device": "d1", "ops": ["f1"]}],
                "cost": {"period_s": 0.0}}
    assert _pipeline(tmp_path, exported) == plain
    # its recompute is the plan's
    again = _pipeline(tmp_path, {**exported, "recompute": ["d0"]})
    assert again == _pipeline(tmp_path, {"placement": PLACEMENT, "recompute": ["d0"]})
    assert again != plain


def test_a_document_of_replicated_stages_is_e502_with_a_way_to_check_it(
        tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    doc = {"format": "planner-torch-pipeline", "version": 1, "plan": "p",
           "placement": {op: "d0" for op in PLACEMENT}, "data_parallel": 2,
           "mesh": {"shape": [1, 2], "dims": ["pp", "dp"]}}
    (tmp_path / "f.json").write_text(json.dumps(doc))
    code, _, err = invoke(["simulate", "s.plan", "--placement", "f.json"], tmp_path)
    assert code != 0 and "E502" in err and "replicated stages" in err
    assert "give the plan file it was exported from" in err
