"""`planner --version` and shell completion (typer's, on the root command only)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from planner.cli import app

runner = CliRunner()
#: run the console entry point under the name `planner`, as the installed script does
AS_PLANNER = "import sys; sys.argv[0] = 'planner'; from planner.cli import main; main()"


def test_version_comes_from_the_installed_metadata() -> None:
    res = runner.invoke(app, ["--version"])
    assert (res.exit_code, res.stdout) == (0, f"planner {version('planner')}\n")


def test_show_completion_prints_the_script_of_the_calling_shell() -> None:
    # typer finds the shell among the process's parents (shellingham; a shell name after the
    # option is ignored), so the test runs planner from bash as a user would, whatever shell
    # runs pytest (`exit $?` keeps bash from exec'ing python: bash stays its parent)
    proc = subprocess.run(["bash", "-c", '"$1" -c "$2" --show-completion; exit $?', "bash",
                           sys.executable, AS_PLANNER], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "_PLANNER_COMPLETE=complete_bash" in proc.stdout
    assert "complete -o default -F _planner_completion planner" in proc.stdout


def test_completion_is_on_the_root_only() -> None:
    res = runner.invoke(app, ["check", "--help"], prog_name="planner")
    assert res.exit_code == 0 and "--install-completion" not in res.stdout


def _complete(words: str) -> list[str]:
    """What bash completion gets back for the command line `words` (cursor at its end)."""
    env = {**os.environ, "_PLANNER_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split(" ")) - 1)}
    out = subprocess.run([sys.executable, "-c", AS_PLANNER], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return out.split()


@pytest.mark.slow
def test_the_script_completes_commands_and_format_names() -> None:
    assert _complete("planner ch") == ["check"]
    assert _complete("planner co") == ["compare"]  # lazily imported commands too
    assert _complete("planner di") == ["diff"]
    assert _complete("planner check --format ") == ["text", "json", "github", "sarif"]
