"""Exact placement: the Pyomo ILP (`ilp.py`) and OR-Tools CP-SAT (`cpsat.py`).

Both share the problem data (`instance.py`), the warm start and fallback (`common.py`);
the MIP back-ends and their option profiles live in `backends.py`. Nothing here imports
Pyomo or OR-Tools until a model is built.
"""
