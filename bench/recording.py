"""The headline figures a benchmark records for README's Performance table (`--record`).

A benchmark run with `--record` writes `bench/results/<its name>.json` (atomically, so a
run cut short leaves the last good file): its figures as it computed them, each with its
unit and a line saying what it is, the date and time, the machine's facts (CPUs, memory,
Python, load average before and after) and the command line. `bench/readme_table.py`
renders README's table from these files; nothing in them is typed by hand.

A figure is one measured value (`{"value": 0.16, "unit": "s"}`, a median unless its
`what` says otherwise) or a spread of values (`{"min": .., "max": .., "values": [..]}`:
the repeated medians of `--rounds`, or one median per mode), with its target when it has
one (`"at_most"` or `"at_least"`).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.files import write_text_atomic

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "bench" / "results"
#: bumped when the files' layout changes, so that the renderer can refuse old ones
FORMAT = 1

Figure = dict[str, Any]


def value(number: float, unit: str, what: str, *, at_most: float | None = None,
          at_least: float | None = None, **extra: Any) -> Figure:
    """One measured figure (a median, a count, a ratio: `what` says which)."""
    return _with_target({"value": number, "unit": unit, "what": what, **extra},
                        at_most, at_least)


def spread(values: Sequence[float] | Mapping[str, float], unit: str, what: str, *,
           at_most: float | None = None, at_least: float | None = None) -> Figure:
    """The lowest and highest of several figures (a mapping keeps each one's label)."""
    numbers = list(values.values()) if isinstance(values, Mapping) else list(values)
    if not numbers:
        raise ValueError(f"no values for {what!r}")
    listed = dict(values) if isinstance(values, Mapping) else numbers
    return _with_target({"min": min(numbers), "max": max(numbers), "values": listed,
                         "unit": unit, "what": what}, at_most, at_least)


def _with_target(figure: Figure, at_most: float | None, at_least: float | None) -> Figure:
    if at_most is not None:
        figure["at_most"] = at_most
    if at_least is not None:
        figure["at_least"] = at_least
    return figure


def _rounded(data: Any) -> Any:
    """`data` with every float to 6 significant digits (past any figure's noise)."""
    if isinstance(data, float):
        return float(f"{data:.6g}")
    if isinstance(data, dict):
        return {k: _rounded(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_rounded(v) for v in data]
    return data


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3, 1)
    except (ValueError, OSError, AttributeError):
        return None


def shown_path(path: str | Path) -> str:
    """`path` from the repository's root when it lies inside it, else as given."""
    resolved = Path(path).resolve()
    return resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else str(path)


@dataclass
class Recording:
    """One benchmark run's figures, collected while it runs and written at its end."""

    script: str  # as run from the repository, e.g. "bench/saga/compare_saga.py"
    quick: bool
    command: str
    started: datetime.datetime
    load_before: list[float] | None
    figures: dict[str, Figure] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def start(cls, script: str, quick: bool, args: Sequence[str] | None = None) -> Recording:
        """Note the time, the load and the command line (`script`, the benchmark's
        `__file__`, run with `args`, else this process's); call it before measuring."""
        shown = shown_path(script)
        args = sys.argv[1:] if args is None else args
        return cls(shown, quick, shlex.join(["python", shown, *args]),
                   datetime.datetime.now(datetime.UTC).replace(microsecond=0),
                   _load_average())

    @property
    def name(self) -> str:
        """The results file's name without `.json`: the script's, e.g. `compare_saga`."""
        return Path(self.script).stem

    def add(self, name: str, figure: Figure) -> None:
        if name in self.figures:
            raise ValueError(f"figure {name!r} recorded twice")
        self.figures[name] = figure

    def as_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "benchmark": self.script,
            "command": self.command,
            "quick": self.quick,
            "date": self.started.date().isoformat(),
            "started_utc": self.started.isoformat().replace("+00:00", "Z"),
            "machine": {
                "cpus": os.cpu_count(),
                "memory_gib": _memory_gib(),
                "python": platform.python_version(),
                "implementation": platform.python_implementation(),
                "system": f"{platform.system()} {platform.machine()}",
                "load_average_before": self.load_before,
                "load_average_after": _load_average(),
            },
            "context": _rounded(self.context),
            "figures": _rounded(self.figures),
        }

    def write(self, directory: Path = RESULTS_DIR) -> Path:
        """Write `directory/<name>.json` atomically; say where on stdout."""
        if not self.figures:
            raise ValueError(f"{self.script}: no figures to record")
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.name}.json"
        write_text_atomic(path, json.dumps(self.as_json(), indent=2, ensure_ascii=False)
                          + "\n")
        print(f"recorded {len(self.figures)} figures in {shown_path(path)}")
        return path
