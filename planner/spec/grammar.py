"""The grammar file and the language's keywords, shared by both parsers."""

from __future__ import annotations

from ..resources import data_text

KEYWORDS = frozenset(["import", "cluster", "device", "link", "graph", "op", "colocate", "plan",
                      "pin", "place", "to", "on"])


def grammar_text() -> str:
    """The grammar, from the installed wheel (`planner/_data`) or the source checkout."""
    return data_text("plan.lark", "grammar/plan.lark")
