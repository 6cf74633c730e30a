"""Commands run one after another in one process (typer's CliRunner, a notebook, the Python
API) each stand alone: one's `--root` or `--limit` holds for it, its worker processes
included, and for nothing after it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from planner import limits
from planner.compare import plan_sweep, run_sweep
from planner.limits import ROOT_ENV, Limits

from .helpers import PLACED, invoke

#: PLACED on 2 GB devices: an inference pipeline's last stage holds its 8 MB output twice
#: for every micro-batch (`hybrid.returned_copies`), 1 GB at 64, over PLACED's 64 MB
SPEC = PLACED.replace("memory 64 MB", "memory 2 GB")
CLUSTER = SPEC.splitlines()[1]
#: 64 micro-batches of SPEC's 2 ops and 1 edge copy 192 of them: over a limit of 100
PIPELINE = ["--objective", "pipeline", "--microbatches", "64"]
#: the statuses of a row with a valid plan
VALID = ("optimal", "feasible")


def _rows(args: list[str], cwd: Path) -> list[tuple[str, str]]:
    code, out, err = invoke(["compare", *args, "--algos", "single", "--jobs", "1", "--json"],
                            cwd)
    assert code == 0, (out, err)
    return [(r["status"], r["reason"] or "") for r in json.loads(out)["result"]]


def _specs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A root folder, a spec in it that imports its cluster from a sibling folder (outside
    the spec's own folder: inside `--root` only), and a spec outside that root."""
    root = tmp_path / "root"
    (root / "shared").mkdir(parents=True)
    (root / "shared" / "c.plan").write_text(CLUSTER + "\n")
    (root / "a").mkdir()
    inside = root / "a" / "s.plan"
    inside.write_text('import "../shared/c.plan"\n' + SPEC.replace(CLUSTER, ""))
    (tmp_path / "other").mkdir()
    outside = tmp_path / "other" / "s.plan"
    outside.write_text(SPEC)
    return root, inside, outside


def test_each_compare_in_a_process_has_its_own_root(tmp_path: Path) -> None:
    # workers come from a forkserver started once per process, with that moment's
    # environment: the first compare's --root held in every later one (the spec outside
    # it made an `invalid` row: "leads outside the root"), and a later --root never
    # reached the workers ("import of `../shared/c.plan` leads outside the root")
    root, inside, outside = _specs(tmp_path)
    for args in ([str(outside)], [str(inside), "--root", str(root)], [str(outside)]):
        rows = _rows(args, tmp_path)
        assert [s for s, _ in rows] == ["optimal"], (args, rows)  # one device: proven


def test_a_compares_limit_reaches_its_workers_and_ends_with_it(tmp_path: Path) -> None:
    _, _, spec = _specs(tmp_path)
    assert _rows([str(spec), *PIPELINE], tmp_path)[0][0] in VALID
    [(status, reason)] = _rows([str(spec), *PIPELINE, "--limit", "pipeline_copies=100"],
                               tmp_path)
    assert status == "invalid" and "`pipeline_copies` limit (100, E016)" in reason
    assert _rows([str(spec), *PIPELINE], tmp_path)[0][0] in VALID


def test_the_limits_a_caller_puts_in_force_reach_the_sweeps_workers(tmp_path: Path) -> None:
    _, _, spec = _specs(tmp_path)

    def status() -> Any:
        points = plan_sweep([spec], "single", objectives="pipeline", microbatches="64")
        [row] = run_sweep(points, jobs=1).rows
        return row["status"]

    assert status() in VALID
    with limits.using(Limits(pipeline_copies=100)):
        assert status() == "invalid"
    assert status() in VALID


def test_a_usage_error_leaves_no_root_or_limit_behind(tmp_path: Path) -> None:
    # the option callbacks had run when a later option failed to parse, and the command's
    # context, which would have reset them, was never closed: the next command in the
    # process refused every spec outside that root
    root, _, outside = _specs(tmp_path)
    code, _, err = invoke(["check", str(outside), "--root", str(root), "--limit", "ops=1",
                           "--format", "nonsense"], tmp_path)
    assert code == 2, err
    assert ROOT_ENV not in os.environ and limits.active() == limits.DEFAULTS
    code, _, err = invoke(["check", str(outside)], tmp_path)
    assert code == 0, err


def test_a_command_inside_a_callers_limits_using_puts_them_back(tmp_path: Path) -> None:
    # the command's reset emptied the stack of `limits.using`: the caller's limits were
    # gone after the command, and its `with` block raised ValueError as it ended
    _, _, spec = _specs(tmp_path)
    mine = Limits(ops=7)
    with limits.using(mine):
        code, _, err = invoke(["check", str(spec), "--limit", "edges=9"], tmp_path)
        assert code == 0, err
        assert limits.active() == mine and limits.ENV not in os.environ
        code, _, err = invoke(["check", str(spec), "--format", "nonsense"], tmp_path)
        assert code == 2, err  # a usage error puts them back too
        assert limits.active() == mine
    assert limits.active() == limits.DEFAULTS


def test_a_command_inside_a_callers_limits_using_starts_from_them(tmp_path: Path) -> None:
    """Before: the command ran with the defaults and its own --limit, as if the caller's
    `limits.using` block were not there: a 2-op spec passed `check` under Limits(ops=1),
    which `planner.load` refuses (E011)."""
    _, _, spec = _specs(tmp_path)
    with limits.using(Limits(ops=1)):
        code, out, _ = invoke(["check", str(spec), "--format", "json"], tmp_path)
        assert code == 1 and [d["code"] for d in json.loads(out)["diagnostics"]] == ["E011"]
        # the command's own --limit goes on top of the caller's limits, and ends with it
        code, _, err = invoke(["check", str(spec), "--limit", "ops=2"], tmp_path)
        assert code == 0, err
        assert limits.active() == Limits(ops=1)
    [(status, reason)] = _rows([str(spec), *PIPELINE], tmp_path)
    assert status in VALID, reason
    with limits.using(Limits(pipeline_copies=100)):  # and reach compare's workers
        [(status, reason)] = _rows([str(spec), *PIPELINE], tmp_path)
        assert status == "invalid" and "`pipeline_copies` limit (100, E016)" in reason
