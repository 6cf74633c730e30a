"""`python -m planner.bounds`: compile the bounds' graph passes into numba's cache now
(`bounds.prepare`), say how long.

For images and CI jobs that would rather pay the one-time compile at build time than in
the first large `solve`; `python -m planner.fastsim` and `python -m
planner.algorithms.listsched` do the same for the fast simulator and the ETF engine.
"""

import importlib.util

from . import prepare

if __name__ == "__main__":
    if importlib.util.find_spec("numba") is None:
        raise SystemExit("numba is not installed: the bounds use numpy's passes")
    print(f"compiled bounds passes ready in {prepare():.2f} s")
