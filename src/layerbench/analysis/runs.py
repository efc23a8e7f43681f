"""Per run: the steady window of its interval series (after the warm-up, minus the MSER-5 transient), the
values the statistics use (mean TPS and QPS over that window; latency and totals as sysbench reported them),
and the analysis' row of a stored run (RunRow) with the latency percentiles the runs report."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from layerbench.analysis.metrics import Metric
from layerbench.analysis.steady_state import SteadyState, is_unstable, mser5, swing_ratio
from layerbench.records import RunHeader, RunMetrics, StoredFacts, StoredInterval, StoredRun
from layerbench.sysbench.histogram import percentile_key

MIN_INTERVALS_FOR_WINDOW = 3
# metric key -> (label, higher is better)
METRICS: dict[str, tuple[str, bool]] = {m: (m.label, m.higher_is_better) for m in Metric}
MEASURED = ("ok", "replaced")  # a replaced run measured, its numbers are shown, the statistics leave it out


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


@dataclass(frozen=True)
class RunRow(RunHeader):
    """A stored run as the analysis reads it: its header (records/stored.py) and the values it contributes."""

    values: dict[str, float | None]
    facts: StoredFacts = field(default_factory=StoredFacts, compare=False)
    window: Window | None = None
    series: tuple[tuple[float, float, bool], ...] = ()  # (time, tps, warm-up) per interval
    transactions: int | None = None  # of the measured part (after the warm-up)
    latency: dict[float, float] = field(default_factory=dict, compare=False)  # percentile -> ms (schema 2 runs)
    percentile: float | None = None  # which percentile values[Metric.LAT_PCT] is (imported logs may differ)


def latency_metric(percentile: float) -> str:
    """The metric key of a recorded percentile: lat_p99_ms, lat_p99.9_ms, lat_max_ms."""
    return f"lat_{percentile_key(percentile)}_ms"


def latency_label(metric: str) -> str:
    return f"{metric.removeprefix('lat_').removesuffix('_ms')} latency (ms)"


def run_row(r: StoredRun, unstable_ratio: float) -> RunRow:
    window = steady_window(r.intervals, unstable_ratio) if r.status in MEASURED else None
    values = run_values(r.metrics, window) if window else {m: r.metrics.value(m) for m in METRICS}
    values |= {latency_metric(p): v for p, v in r.latency.items()}
    return RunRow(r.id, r.idx, r.round, r.variant, r.workload, r.threads, r.repetition, r.status, r.error, values,
                  r.facts, window, tuple((i.time, i.tps, i.warmup) for i in r.intervals), r.metrics.transactions,
                  r.latency, r.percentile)


def label_number(value: float) -> int | float:
    """95 for 95.0 (labels read p95), 99.9 stays 99.9."""
    return int(value) if float(value).is_integer() else float(value)


def ordinal(percentile: float) -> str:
    return f"{label_number(percentile)}th"


def percentiles_of(runs: list[RunRow]) -> dict[str, tuple[float, ...]]:
    """Per variant, the latency percentiles its successful runs report (imported logs may each say another)."""
    out: dict[str, dict[float, None]] = {}
    for r in runs:
        if r.status == "ok" and r.percentile is not None and r.values.get(Metric.LAT_PCT) is not None:
            out.setdefault(r.variant, {})[r.percentile] = None
    return {v: tuple(found) for v, found in out.items()}


def mixed_percentiles(runs: list[RunRow]) -> tuple[float, ...]:
    """The percentiles the runs report when they are more than one (then their latencies are not compared)."""
    found = tuple(sorted({p for ps in percentiles_of(runs).values() for p in ps}))
    return found if len(found) > 1 else ()
