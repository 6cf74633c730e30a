"""A model file that exits (`sys.exit`) while planner loads it is E939 with its status, not
a silent exit 0 with nothing written (issue 29, finding 10); an `--example` that exits is
E943."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app

pytest.importorskip("torch", reason="PyTorch is not installed (pip install 'planner[torch]')")

EXITING = '''
import sys
import torch

def model():
    return torch.nn.Linear(4, 4)

sys.exit(0)  # a script's ending, run when the file is loaded
'''
FACTORY = '''
import sys
import torch

def model():
    sys.exit("no weights here")
'''


@pytest.mark.parametrize(("source", "target", "extra", "code", "said"), [
    (EXITING, "m.py:model", [], "E939", "exited (status 0) while it was loaded"),
    (FACTORY, "m.py:model", [], "E939", "`model()` exited ('no weights here')"),
    ("import torch\nmodel = torch.nn.Linear(4, 4)\n", "m.py:model",
     ["--example", "exit(2)"], "E943", "exited (status 2)"),
])
def test_a_model_file_that_exits_is_a_diagnostic(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 source: str, target: str, extra: list[str],
                                                 code: str, said: str) -> None:
    (tmp_path / "m.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    inputs = extra or ["--input", "2x4"]
    result = CliRunner().invoke(app, ["import", "torch", target, *inputs, "-o", "m.plan"])
    assert result.exit_code != 0 and code in result.output and said in result.output, \
        result.output
    assert "Traceback" not in result.output and not (tmp_path / "m.plan").exists()
