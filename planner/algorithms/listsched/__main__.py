"""`python -m planner.algorithms.listsched`: compile the ETF engine's kernel into numba's
cache now (`etf.prepare`), say how long.

For images and CI jobs that would rather pay the one-time compile at build time than in
the first m-ETF or m-SCT run that uses it; `python -m planner.fastsim` does the same for
the fast simulator.
"""

import importlib.util

from .etf import prepare

if __name__ == "__main__":
    if importlib.util.find_spec("numba") is None:
        raise SystemExit("numba is not installed: m-ETF and m-SCT use the Python engine")
    print(f"compiled ETF engine ready in {prepare():.2f} s")
