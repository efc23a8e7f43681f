"""The cells of the report's tables as text, the same in every format and in the terminal: numbers,
deviations, a run's steady window, a run's numbers (the Markdown table writer is report/markdown.py's)."""

from __future__ import annotations

import math

from layerbench.analysis.metrics import Metric
from layerbench.analysis.runs import RunRow, label_number


def fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000 and digits <= 2:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f} %"


def window_text(r: RunRow) -> str:
    w = r.window
    if w is None or w.steady is None:
        return "-"
    flags = ("" if w.steady.steady else " no steady state") + (f" unstable {swing_cell(w.swing)}" if w.unstable else "")
    return f"{w.steady.kept} of {w.steady.n} s" + flags


def run_numbers(r: RunRow, tagged: bool = False) -> list[str]:
    """A run's total queries, QPS, TPS, avg and percentile latency as the run tables show them; `tagged`: the
    latency with the percentile it is (`34.95 (p100)`), for campaigns whose runs report different ones."""
    v = r.values
    latency = fmt(v[Metric.LAT_PCT])
    if tagged and r.percentile is not None and v[Metric.LAT_PCT] is not None:
        latency += f" (p{label_number(r.percentile)})"
    return [fmt(v[Metric.QUERIES], 0), fmt(v[Metric.QPS]), fmt(v[Metric.TPS]), fmt(v[Metric.LAT_AVG]), latency]


def swing_cell(swing: float) -> str:
    """`1.62x`, or `to 0` for a run with an interval of no transaction (an infinite max / min)."""
    return f"{swing:.2f}x" if math.isfinite(swing) else "to 0"
