"""The grammar file and the language's keywords, shared by both parsers."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

KEYWORDS = frozenset(["import", "cluster", "device", "link", "graph", "op", "colocate", "plan",
                      "pin", "place", "to", "on"])


def grammar_text() -> str:
    """The grammar, from the installed wheel (`planner/_data`) or the source checkout."""
    try:
        packaged = resources.files("planner").joinpath("_data/plan.lark")
        if packaged.is_file():
            return packaged.read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):  # pragma: no cover - odd installs
        pass
    return (Path(__file__).resolve().parents[2] / "grammar" / "plan.lark").read_text("utf-8")
