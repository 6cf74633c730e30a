"""Exact placement: the Pyomo ILP (`ilp.py`, its model `ilp_model.py`) and OR-Tools CP-SAT
(`cpsat.py`, its model `cpsat_model.py`).

Both share the problem data (`instance.py`), the constraint families as back-end-neutral
data (`families.py`: each back-end translates it, one function per family), the warm start
and fallback (`common.py`) and the judgement of a plan (`verdict.py`); the MIP back-ends and
their option profiles live in `backends.py` (child processes in `children.py`; HiGHS gets
a model's rows in bulk from `highs_load.py`; `model_file.py` writes a Pyomo model for
`--emit`), CP-SAT's work budget in `budget.py`;
both solve in a worker thread the main thread watches (`watched.py`). Nothing here imports
Pyomo or OR-Tools until a model is built.
"""
