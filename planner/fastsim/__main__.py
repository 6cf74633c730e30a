"""`python -m planner.fastsim`: compile the kernel into numba's cache now, say how long.

For images and CI jobs that would rather pay the one-time compile at build time than in
the first search. The compiled ETF engine of m-ETF and m-SCT has its own command, `python
-m planner.algorithms.listsched` (a layer above this one, so not imported from here).
"""

from . import numba_available, prepare

if __name__ == "__main__":
    if not numba_available():
        raise SystemExit("numba is not installed: searches use planner.simulate instead")
    print(f"fast simulator ready in {prepare():.2f} s")
