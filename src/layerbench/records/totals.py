"""What sysbench reported for a run, as the store keeps it in columns: the totals of the measured window and
one rate record per report interval. sysbench/output.py makes them (from the live run's hook records, or from
sysbench's human text for an imported log); records/stored.py RunRecord writes them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """One report interval: rates per second over that interval."""

    time: float
    threads: int
    tps: float
    qps: float
    reads_ps: float
    writes_ps: float
    other_ps: float
    latency_pct_ms: float | None
    errors_ps: float
    reconnects_ps: float


@dataclass(frozen=True)
class Totals:
    """The whole measured run."""

    duration: float
    transactions: int
    queries: int
    reads: int
    writes: int
    other: int
    tps: float
    qps: float
    errors: int
    reconnects: int
    events: int
    latency_min_ms: float | None = None
    latency_avg_ms: float | None = None
    latency_max_ms: float | None = None
    latency_pct_ms: float | None = None
    latency_sum_ms: float | None = None
