"""The rows of a store: a run as it is written (RunRecord), and as the analysis and the commands read them: a
campaign with its typed definition, its schedule, its runs (numbers, facts, latency distribution) and their
interval samples."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from layerbench.records.campaign import CampaignRecord
from layerbench.records.run import RunFacts, StoredFacts
from layerbench.records.totals import Interval, Totals


@dataclass(frozen=True)
class StoredCampaign:
    id: int
    name: str
    status: str  # running | finished | finished with failures | interrupted | failed | imported
    started_at: float
    finished_at: float | None
    definition: CampaignRecord
    source_path: str | None
    output_dir: str
    baseline: str
    message: str | None


@dataclass(frozen=True)
class CampaignListing:
    """A campaign with its run counts, for `list` and `resume`."""

    campaign: StoredCampaign
    ok_runs: int
    failed_runs: int
    planned_runs: int

    @property
    def unfinished(self) -> bool:
        return (self.campaign.status in ("running", "interrupted", "failed")
                and self.ok_runs + self.failed_runs < self.planned_runs)


@dataclass(frozen=True)
class ScheduledRun:
    idx: int
    round: int
    variant: str
    workload: str
    threads: int
    repetition: int


@dataclass(frozen=True)
class StoredInterval:
    time: float
    tps: float
    qps: float
    warmup: bool


@dataclass(frozen=True)
class RunMetrics:
    """The run's totals as sysbench reported them for the measured part (None: not recorded or failed)."""

    duration: float | None = None
    transactions: int | None = None
    queries: float | None = None
    tps: float | None = None
    qps: float | None = None
    lat_avg_ms: float | None = None
    lat_pct_ms: float | None = None

    def value(self, metric: str) -> float | None:
        """A metric the statistics use by its key (queries, qps, tps, lat_avg_ms, lat_pct_ms)."""
        found = {"queries": self.queries, "qps": self.qps, "tps": self.tps, "lat_avg_ms": self.lat_avg_ms,
                 "lat_pct_ms": self.lat_pct_ms}[metric]
        return None if found is None else float(found)


@dataclass(frozen=True)
class RunHeader:
    """What every view of a stored run starts with: which run, its place in the schedule, and how it ended (the
    stored run below, and the analysis' row of it, analysis/runs.py RunRow)."""

    id: int
    idx: int | None
    round: int | None
    variant: str
    workload: str
    threads: int | None
    repetition: int
    status: str  # ok | failed | replaced (busy: rerun; facts.busy says why)
    error: str | None


@dataclass(frozen=True)
class StoredRun(RunHeader):
    started_at: float | None
    metrics: RunMetrics
    percentile: float | None
    facts: StoredFacts = field(default_factory=StoredFacts)
    intervals: tuple[StoredInterval, ...] = ()
    latency: dict[float, float] = field(default_factory=dict)  # percentile -> ms of the measured window
    finished_at: float | None = None  # when the run ended, its cleanup done (None: not recorded)


RUN_METRIC_COLUMNS = (
    "duration", "transactions", "queries", "reads", "writes", "other", "tps", "qps",
    "lat_min_ms", "lat_avg_ms", "lat_max_ms", "lat_pct_ms", "errors", "reconnects",
)


@dataclass
class RunRecord:
    """One finished (or failed) run, as it is written."""

    campaign_id: int
    variant: str
    workload: str
    threads: int | None
    repetition: int
    idx: int | None = None
    round: int | None = None
    status: str = "ok"
    error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    totals: Totals | None = None
    percentile: float | None = None  # which latency percentile totals.latency_pct_ms is (95, 99, 99.9, 100)
    run_dir: str | None = None
    intervals: list[Interval] = field(default_factory=list)
    warmup_seconds: float = 0.0
    facts: RunFacts = field(default_factory=RunFacts)
    imported: dict[str, float] | None = None  # metric column -> value, for results measured elsewhere
    latency: dict[float, float] = field(default_factory=dict)  # percentile -> ms of the measured window

    def metric_values(self) -> list[Any]:
        if self.imported is not None:
            return [self.imported.get(column) for column in RUN_METRIC_COLUMNS]
        return _totals_values(self.totals)


def _totals_values(totals: Totals | None) -> list[Any]:
    if totals is None:
        return [None] * len(RUN_METRIC_COLUMNS)
    t = totals
    return [t.duration, t.transactions, t.queries, t.reads, t.writes, t.other, t.tps, t.qps,
            t.latency_min_ms, t.latency_avg_ms, t.latency_max_ms, t.latency_pct_ms, t.errors, t.reconnects]
