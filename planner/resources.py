"""Data files that ship inside the wheel (`planner/_data/`) and live at the top of a checkout.

The grammar (`grammar/plan.lark`) and the solver profiles (`solvers/profiles.toml`) are
top-level files of the repository, copied into `planner/_data/` by the wheel build
(hatch `force-include`). An installed package reads its copy; an editable install, which
has no copy, reads the checkout's file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_text(packaged: str, checkout: str) -> str:
    """The text of `planner/_data/<packaged>` if installed, else of `<repo>/<checkout>`."""
    try:
        copy = resources.files("planner").joinpath("_data", packaged)
        if copy.is_file():
            return copy.read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):  # pragma: no cover - odd installs
        pass
    return (Path(__file__).resolve().parents[1] / checkout).read_text(encoding="utf-8")
