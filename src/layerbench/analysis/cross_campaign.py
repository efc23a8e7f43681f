"""Two campaigns side by side: for every variant and (workload, threads) point they share, did B move against A?
Same statistics and verdict words as within a campaign (Hodges-Lehmann delta with its Mann-Whitney interval,
campaign A's noise threshold and alpha); each variant is compared with itself alone, so no Holm correction. A
percentile latency whose runs in A and B report different percentiles (imports) is `not compared`."""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.analysis.aggregate import Analysis
from layerbench.analysis.metrics import Metric
from layerbench.analysis.point_statistics import metric_values
from layerbench.analysis.report_model import legend
from layerbench.analysis.runs import mixed_percentiles, ordinal
from layerbench.analysis.stats import Comparison, Verdict, compare_with_baseline


@dataclass(frozen=True)
class CrossRow:
    variant: str
    workload: str
    threads: int | None
    metric: str
    mean_a: float | None
    mean_b: float | None
    comparison: Comparison


@dataclass(frozen=True)
class CampaignComparison:
    """What the `compare` command shows: campaign B against campaign A, every shared variant and point, with the
    verdict legend at A's noise threshold; the terminal only renders it (report/markdown.py)."""

    a: int  # campaign ids
    b: int
    rows: tuple[CrossRow, ...]
    legend: str


def campaign_comparison(a: Analysis, b: Analysis) -> CampaignComparison:
    return CampaignComparison(a.campaign_id, b.campaign_id, tuple(compare_campaigns(a, b)), legend(a.settings))


def shared_points(a: Analysis, b: Analysis) -> list[tuple[str, int | None, list[str]]]:
    out = []
    for pa in a.points:
        pb = next((p for p in b.points if (p.workload, p.threads) == (pa.workload, pa.threads)), None)
        if pb is not None:
            names = [v.variant for v in pa.variants if any(w.variant == v.variant and w.n for w in pb.variants)]
            out.append((pa.workload, pa.threads, names))
    return out


def not_compared(name: str, workload: str, threads: int | None, before: list[float], after: list[float],
                 percentiles: tuple[float, ...]) -> CrossRow:
    """The percentile latency of a variant whose runs in A and B report different percentiles: both means, no
    comparison (`not compared`, `95th vs 100th`)."""
    verdict = Verdict("not compared", " vs ".join(ordinal(p) for p in percentiles))
    return CrossRow(name, workload, threads, Metric.LAT_PCT, sum(before) / len(before), sum(after) / len(after),
                    Comparison(name, None, None, None, verdict, len(before), len(after)))


def compare_campaigns(a: Analysis, b: Analysis,
                      metrics: tuple[Metric, ...] = (Metric.TPS, Metric.LAT_PCT)) -> list[CrossRow]:
    rows = []
    s = a.settings
    for workload, threads, names in shared_points(a, b):
        runs_a = [r for r in a.runs if r.workload == workload and r.threads == threads]
        runs_b = [r for r in b.runs if r.workload == workload and r.threads == threads]
        for metric in metrics:
            before, after = metric_values(runs_a, names, metric), metric_values(runs_b, names, metric)
            for name in names:
                if not before[name] or not after[name]:
                    continue
                mixed = mixed_percentiles([r for r in runs_a + runs_b if r.variant == name])
                if metric == Metric.LAT_PCT and mixed:  # p95 against p100 is no comparison
                    rows.append(not_compared(name, workload, threads, before[name], after[name], mixed))
                    continue
                (found,) = compare_with_baseline(before[name], {name: after[name]}, s,
                                                 higher_is_better=metric.higher_is_better)
                rows.append(CrossRow(name, workload, threads, metric, sum(before[name]) / len(before[name]),
                                     sum(after[name]) / len(after[name]), found))
    return rows
