"""The Python API beyond loading specs: problems built by name (`ProblemBuilder`), checked
like specs (`check_problem`), and `Result`, what `planner.solve` returns.

Imported on first use by `planner` (`planner.ProblemBuilder`), so `import planner` stays
cheap.
"""

from __future__ import annotations

from .builder import ProblemBuilder
from .checks import check_problem
from .result import Result, ScheduledOp, read_plan

__all__ = ["ProblemBuilder", "Result", "ScheduledOp", "check_problem", "read_plan"]
