"""Where the CPU went: per variant and point, CPU seconds per 1,000 transactions by component (the sampler's
usage record over the whole sampled window, warm-up included) and the cgroup throttling, means over the
variant's successful runs."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from layerbench.analysis.aggregate import Analysis
from layerbench.analysis.point_statistics import VariantRuns, point_runs, point_title
from layerbench.analysis.runs import RunRow
from layerbench.records import Usage


@dataclass(frozen=True)
class Overhead(VariantRuns):
    """Where the CPU went for one variant at one point: means over its successful runs."""

    cpu_per_1000_tx: dict[str, float]  # component -> CPU seconds per 1,000 transactions
    throttled_share: float | None  # throttled periods / periods, over the variant's cgroups
    throttled_seconds: float | None  # per run


def throttling_of(usage: Usage) -> tuple[float, float, float]:
    found = usage.throttling.values()
    return sum(t.periods for t in found), sum(t.throttled for t in found), sum(t.seconds for t in found)


def sampled_transactions(r: RunRow, report_interval: float) -> int:
    """Transactions during the whole sampled window: the measured ones plus the warm-up's (from its intervals)."""
    warm = sum(tps for _, tps, is_warm in r.series if is_warm) * report_interval
    return int((r.transactions or 0) + warm)


def per_1000(usage: Usage, r: RunRow, report_interval: float) -> dict[str, float]:
    """CPU seconds per 1,000 transactions by component, over the same window as the sampler's."""
    count = sampled_transactions(r, report_interval)
    if count <= 0:
        return {}
    return {k: v * 1000 / count for k, v in usage.cpu_seconds.items() if k != "idle"}


def overhead_notes(analysis: Analysis) -> list[str]:
    """Why a variant's CPU is missing from the table, once per variant and reason (the runs' usage notes)."""
    found: dict[str, list[int]] = {}
    for r in analysis.runs:
        for note in r.facts.usage.notes if r.facts.usage else ():
            found.setdefault(f"`{r.variant}`: {note}", []).append((r.idx or 0) + 1)
    return [f"{text} (run {', '.join(map(str, runs[:5]))}{' ...' if len(runs) > 5 else ''})"
            for text, runs in found.items()]


def overhead_rows(analysis: Analysis) -> list[Overhead]:
    """Per point and variant (in the analysis' order), the CPU and throttling of its runs that recorded usage."""
    out = []
    intervals = {w.name: w.report_interval for w in analysis.definition.workloads}
    for point in analysis.points:
        for v in point.variants:
            measured = [(r, u) for r in point_runs(analysis.runs, point, v.variant) if (u := r.facts.usage)]
            if not measured:
                continue
            shares = [per_1000(u, r, intervals.get(point.workload, 1.0)) for r, u in measured]
            components = sorted({k for share in shares for k in share})
            cpu = {c: statistics.fmean(share.get(c, 0.0) for share in shares) for c in components}
            periods, throttled, seconds = (sum(x) for x in zip(*(throttling_of(u) for _, u in measured), strict=True))
            out.append(Overhead(v.variant, point_title(point), len(measured), cpu,
                                throttled / periods if periods else None, seconds / len(measured) if periods else None))
    return out
