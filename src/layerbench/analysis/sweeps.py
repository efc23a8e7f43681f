"""Thread sweeps: per thread count of a workload measured at more than one, the baseline's and a variant's TPS,
the deltas and the TPS verdict (the reports' "Thread sweep" section)."""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.analysis.aggregate import Analysis
from layerbench.analysis.metrics import Metric
from layerbench.analysis.stats import Comparison


@dataclass(frozen=True)
class SweepRow:
    threads: int
    baseline_tps: float | None
    variant_tps: float | None
    tps_delta_pct: float | None
    latency_delta_pct: float | None  # of the percentile latency
    verdict: str = "-"  # the TPS verdict at this thread count
    verdict_text: str = ""
    comparison: Comparison | None = None  # the TPS comparison: its evidence for the reports


def sweep_table(analysis: Analysis, workload: str, variant: str) -> list[SweepRow]:
    """Per thread count of a workload: baseline and variant TPS and the deltas (a thread sweep)."""
    rows = []
    for point in (p for p in analysis.points if p.workload == workload and p.threads is not None):
        base = next((v for v in point.variants if v.variant == analysis.baseline), None)
        mine = next((v for v in point.variants if v.variant == variant), None)
        if base is None or mine is None:
            continue
        deltas = {d.metric: d.deviation_pct for d in mine.deltas}
        found = mine.verdict(Metric.TPS)
        rows.append(SweepRow(int(point.threads or 0), base.means[Metric.TPS], mine.means[Metric.TPS],
                             deltas[Metric.TPS], deltas[Metric.LAT_PCT], found.verdict.kind if found else "-",
                             found.verdict.text if found else "", found))
    return rows


def sweeps(analysis: Analysis) -> dict[tuple[str, str], list[SweepRow]]:
    """(workload, variant) -> sweep rows, for every workload measured at more than one thread count."""
    out = {}
    for workload in dict.fromkeys(p.workload for p in analysis.points):
        if sum(1 for p in analysis.points if p.workload == workload) < 2:
            continue
        for variant in analysis.definition.variant_names:
            if variant != analysis.baseline:
                out[(workload, variant)] = sweep_table(analysis, workload, variant)
    return out
