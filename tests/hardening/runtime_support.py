"""Shared pieces of the runtime hardening tests: small specs, the CLI, a strict parser,
and process checks read from /proc (psutil is not a dependency)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from cli.helpers import invoke, runner  # noqa: F401 - the hardening tests' too

ROOT = Path(__file__).resolve().parents[2]

#: two ops on two linked devices: every command and algorithm runs on it in milliseconds
SMALL = """
cluster c { device gpu[0..1] { memory 64 MB } link gpu0 <-> gpu1 { bandwidth 10 GB/s } }
graph g {
  op a { time 1 ms  output 8 MB }
  op b { time 2 ms  output 8 MB }
  op c { time 2 ms }
  a -> b
  a -> c
}
plan p { graph g cluster c  place a, b on gpu0  place c on gpu1 }
"""

def _reject(token: str) -> Any:
    raise ValueError(f"not strict JSON: {token}")


def strict_loads(text: str) -> Any:
    """`json.loads` that refuses NaN, Infinity and -Infinity, as strict parsers do."""
    return json.loads(text, parse_constant=_reject)


def planner_argv(*args: str) -> list[str]:
    """A command line running planner under this interpreter."""
    return [sys.executable, "-m", "planner", *args]


def alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (children, grandchildren, ...), from /proc."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                    parent[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        p = frontier.pop()
        for child, ppid in parent.items():
            if ppid == p and child not in found:
                found.add(child)
                frontier.append(child)
    return {p for p in found if alive(p)}


def processes_with(marker: str) -> set[int]:
    """Live processes whose command line contains `marker`."""
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in cmd and alive(int(entry)):
            out.add(int(entry))
    return out


def layered_spec(n: int, m: int, width: int = 6) -> str:
    """A spec of `n` ops in layers of `width` (each op feeds the next layer's two
    neighbours), on `m` linked GPUs: big enough that CP-SAT keeps searching."""
    ops = [f"  op o{i} {{ time {1 + (i * 7) % 5} ms  output {4 + (i * 3) % 9} MB }}"
           for i in range(n)]
    edges = [f"  o{i} -> o{j}" for i in range(n) for j in (i + width, i + width + 1)
             if j < n and j // width == i // width + 1]
    return (f"cluster c {{ device gpu[0..{m - 1}] {{ memory 16 GB }}\n"
            "  link gpu[*] <-> gpu[*] { bandwidth 10 GB/s  latency 10 us } }\n"
            "graph g {\n" + "\n".join(ops + edges) + "\n}\n"
            "plan p { graph g cluster c  contention none }\n")


def layered_problem(n: int, m: int) -> Any:
    """The problem of `layered_spec(n, m)`."""
    import planner

    return planner.loads(layered_spec(n, m)).plan("p")
