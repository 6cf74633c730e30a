"""`python -m planner.cli.warm`: compile every numba kernel into numba's cache now.

What a command starts in the background when it meets a kernel that is not compiled yet
(`planner.compiled`), and what an image or CI job runs to pay the one-time compile at
build time: the fast simulator, the ETF engine of m-ETF and m-SCT, and the bounds' graph
passes, each timed (`--only NAME` for one). `--lock PATH`: the background build's lock
file, removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from pathlib import Path

from .. import bounds, fastsim
from ..algorithms.listsched import etf
from ..compiled import numba_available

#: the kernels, in the order they are compiled: what they are, how to prepare them
KERNELS: dict[str, tuple[str, Callable[[], float]]] = {
    "fastsim": ("fast simulator", fastsim.prepare),
    "etf": ("ETF engine", etf.prepare),
    "bounds": ("bounds passes", bounds.prepare),
}


def main(argv: list[str] | None = None) -> int:
    """Compile the kernels; print one line each; 1 when numba is missing."""
    ap = argparse.ArgumentParser(prog="python -m planner.cli.warm", description=__doc__)
    ap.add_argument("--lock", type=Path, help="a lock file to remove when done")
    ap.add_argument("--only", choices=sorted(KERNELS), action="append",
                    help="compile this kernel only (repeatable)")
    args = ap.parse_args(argv)
    try:
        if not numba_available():
            print("numba is not installed: planner uses its Python engines")
            return 1
        for key, (name, prepare) in KERNELS.items():
            if args.only is None or key in args.only:
                print(f"{name} ready in {prepare():.2f} s", flush=True)
        return 0
    finally:
        if args.lock is not None:
            with contextlib.suppress(OSError):
                args.lock.unlink()


if __name__ == "__main__":
    raise SystemExit(main())
