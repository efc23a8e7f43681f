"""The numbers of the report's cells (report/cells.py), the same in every format: two decimals, thousands
separated and no decimals from 1,000 up, a signed deviation in percent, `-` for what is missing."""

from __future__ import annotations

import pytest

from layerbench.report.cells import fmt, pct


@pytest.mark.parametrize(("value", "digits", "text"), [
    (None, 2, "-"), (0.0, 2, "0.00"), (3.14159, 2, "3.14"), (999.994, 2, "999.99"), (1234.5, 2, "1,234"),
    (-2500.0, 2, "-2,500"), (1234.5678, 3, "1,234.568"), (1234.5, 0, "1,234"), (12.5, 0, "12"),
])
def test_numbers(value: float | None, digits: int, text: str) -> None:
    assert fmt(value, digits) == text


@pytest.mark.parametrize(("value", "text"), [(None, "-"), (0.0, "+0.00 %"), (-4.904, "-4.90 %"), (12.345, "+12.35 %")])
def test_deviations(value: float | None, text: str) -> None:
    assert pct(value) == text
