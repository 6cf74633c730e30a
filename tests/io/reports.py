"""What the readers' tests compare: the first report a reader raises, as a tuple."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from planner.errors import SpecError


def first_report(read: Callable[[], object]) -> tuple[str, str | None, int | None]:
    """The code, file and line of the first diagnostic `read()` raises as a `SpecError`
    (file and line None for a report with no place: a file whose content is not shown)."""
    with pytest.raises(SpecError) as err:
        read()
    d = err.value.diagnostics[0]
    return d.code, d.span.file if d.span else None, d.span.line if d.span else None
