"""The latency distribution of each variant (p50 ... max of the measured window, recorded per run from sysbench's
histogram) and the comparisons at the extra percentiles a campaign asks for (`compare_percentiles`): the report
model the formats render. The median over runs is shown, the run being the unit (as for every other metric)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from layerbench.analysis.aggregate import Analysis
from layerbench.analysis.point_statistics import VariantRuns, point_runs, point_title
from layerbench.analysis.stats import Comparison
from layerbench.sysbench.histogram import PERCENTILES, percentile_key

SHOWN = (*PERCENTILES, 100.0)


@dataclass(frozen=True)
class DistributionRow(VariantRuns):
    """`runs`: the successful runs that recorded their distribution."""

    median_ms: dict[str, float]  # 'p50', 'p90', 'p95', 'p99', 'p99.9', 'max' -> median over those runs


@dataclass(frozen=True)
class PercentileComparison:
    variant: str
    point: str
    metric: str  # lat_p99_ms ...
    label: str
    comparison: Comparison


def distribution_rows(analysis: Analysis) -> list[DistributionRow]:
    """Per point and variant, the median of each recorded percentile; empty when no run recorded one (imports,
    stores written before schema 2)."""
    out = []
    for point in analysis.points:
        for v in point.variants:
            runs = [r for r in point_runs(analysis.runs, point, v.variant) if r.latency]
            if runs:
                medians = {percentile_key(p): statistics.median(vals) for p in SHOWN
                           if (vals := [r.latency[p] for r in runs if p in r.latency])}
                out.append(DistributionRow(v.variant, point_title(point), len(runs), medians))
    return out


def percentile_comparisons(analysis: Analysis) -> list[PercentileComparison]:
    """Every comparison at an extra percentile, each against the baseline at that same percentile."""
    out = []
    for point in analysis.points:
        extra = analysis.compared_percentiles(point.workload)
        for v in point.variants:
            for metric in extra:
                found = v.verdict(metric)
                if found is not None and v.variant != analysis.baseline:
                    out.append(PercentileComparison(v.variant, point_title(point), metric,
                                                    analysis.metric_label(metric), found))
    return out


def missing_percentiles(analysis: Analysis) -> list[str]:
    """Asked percentiles that no run of a point recorded (imported results, older stores): said, not hidden."""
    out = []
    for point in analysis.points:
        for metric in analysis.compared_percentiles(point.workload):
            if not any(metric in v.comparisons for v in point.variants):
                out.append(f"{point_title(point)}: {analysis.metric_label(metric)} was asked for but the runs did "
                           "not record it (imported results or a store from before layerbench recorded the "
                           "distribution)")
    return out


__all__ = ["DistributionRow", "PercentileComparison", "distribution_rows", "missing_percentiles",
           "percentile_comparisons"]
