"""A file is quoted only when it is what the command reads as that format (issue 40,
finding 4): README promises that a placement file's diagnostics quote it only when it is
a JSON object with `placement`. An accelerate device_map given as the placement is read
(E949 names the key or value at fault) but its lines are never shown: a file of secrets
shaped like a device map (`{"AWS_SECRET_...": 0}`) does not reach a CI log whole."""

from __future__ import annotations

import json
from pathlib import Path

from .helpers import invoke
from .runtime_support import SMALL

SECRETS = {"conv1": 0, "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG": "cuda:0",
           "ghp_16C7e42F292c6912E7710c838347Ae178B4a": "cpu"}


def test_a_device_map_given_as_the_placement_is_never_quoted(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SMALL)
    line = json.dumps(SECRETS)
    (tmp_path / "map.json").write_text(line + "\n")
    code, out, err = invoke(["simulate", "s.plan", "--placement", "map.json"], tmp_path)
    assert code == 1 and out == "", err
    # located at the key's value (the file is one line), but the line is not shown
    assert f"map.json:1:{line.index(': 0') + 3}: error[E949]" in err
    assert line not in err and " 1 | " not in err, err  # before: line 1 in full, each time
    assert "`conv1`" in err  # the message still names the key at fault


def test_a_placement_object_is_still_quoted(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SMALL)
    (tmp_path / "p.json").write_text('{"placement": {"a": "gpu7"}}\n')
    code, _, err = invoke(["simulate", "s.plan", "--placement", "p.json"], tmp_path)
    assert code == 1 and "E504" in err
    assert ' 1 | {"placement"' in err, err
