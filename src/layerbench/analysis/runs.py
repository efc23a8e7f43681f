"""Per run: the steady window of its interval series (after the warm-up, minus the MSER-5 transient) and the
values the statistics use: mean TPS and QPS over that window; latency and totals as sysbench reported them."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from layerbench.analysis.metrics import Metric
from layerbench.analysis.steady_state import SteadyState, is_unstable, mser5, swing_ratio
from layerbench.records import RunMetrics, StoredInterval

MIN_INTERVALS_FOR_WINDOW = 3


@dataclass(frozen=True)
class Window:
    """What the analysis kept of one run's interval series."""

    warmup_intervals: int  # marked warm-up by the run itself (before its counters were reset)
    steady: SteadyState | None  # MSER-5 over the measured intervals
    tps: float | None  # mean interval TPS over the steady window
    qps: float | None
    swing: float | None  # max / min interval TPS in the steady window
    unstable: bool


def steady_window(intervals: tuple[StoredInterval, ...] | list[StoredInterval], unstable_ratio: float) -> Window:
    """intervals: the run's samples in time order."""
    warm = sum(1 for i in intervals if i.warmup)
    measured = [i for i in intervals if not i.warmup]
    if len(measured) < MIN_INTERVALS_FOR_WINDOW:
        return Window(warm, None, None, None, None, False)
    tps = [i.tps for i in measured]
    state = mser5(tps)
    kept = measured[state.cut:]
    kept_tps = [i.tps for i in kept]
    return Window(warm, state, statistics.fmean(kept_tps), statistics.fmean(i.qps for i in kept),
                  swing_ratio(kept_tps), is_unstable(kept_tps, unstable_ratio))


def run_values(metrics: RunMetrics, window: Window) -> dict[str, float | None]:
    """The values a run contributes to the statistics."""
    return {
        Metric.QUERIES: metrics.value(Metric.QUERIES),
        Metric.QPS: window.qps if window.qps is not None else metrics.value(Metric.QPS),
        Metric.TPS: window.tps if window.tps is not None else metrics.value(Metric.TPS),
        Metric.LAT_AVG: metrics.value(Metric.LAT_AVG),
        Metric.LAT_PCT: metrics.value(Metric.LAT_PCT),
    }
