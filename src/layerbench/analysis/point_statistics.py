"""The statistics of one (workload, threads) point (Point, one VariantPoint per variant): a summary per variant
and metric, each variant's comparison with the baseline (Holm-corrected across the variants of the point, or of a
whole sweep; paired by round where the campaign asks for it and the rounds allow it, analysis/paired.py), and the
warnings the numbers deserve (a CV of DEFAULTS.cv_warning or more, a first run that is an outlier)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from layerbench.analysis.metrics import Metric
from layerbench.analysis.paired import RoundValues, paired_tests
from layerbench.analysis.runs import (
    METRICS,
    RunRow,
    latency_label,
    latency_metric,
    mixed_percentiles,
    ordinal,
    percentiles_of,
)
from layerbench.analysis.stats import Comparison, Summary, compare_with_baseline, summarize
from layerbench.records import CampaignRecord
from layerbench.statistics_settings import DEFAULTS, Settings


def summaries(values_by_variant: dict[str, list[float]], seed: int) -> dict[str, Summary]:
    return {name: summarize(values, seed=seed) for name, values in values_by_variant.items() if values}


def comparisons(baseline: str, values_by_variant: dict[str, list[float]], higher_is_better: bool,
                settings: Settings, family: Sequence[float] = (),
                by_round: dict[str, RoundValues] | None = None) -> dict[str, Comparison]:
    """Each variant against the baseline; `family`: the raw p of other comparisons Holm corrects with these;
    `by_round`: the same values with their rounds, when they may be paired (estimator paired, rounds that are
    blocks): a variant with fewer pairs than the paired t-test's floor is compared unpaired."""
    base = values_by_variant.get(baseline, [])
    others = {name: values for name, values in values_by_variant.items() if name != baseline}
    if not base or not others:
        return {}
    paired, short = paired_tests(baseline, by_round, settings.alpha, settings.min_runs) if by_round else ({}, {})
    found = compare_with_baseline(base, others, settings, higher_is_better=higher_is_better, paired=paired,
                                  family=family, short_pairs=short)
    return {c.variant: c for c in found}


def first_run_outlier(values: Sequence[float]) -> bool:
    """The first run differs from the median of the rest by more than DEFAULTS.outlier_mads MADs and more than
    DEFAULTS.outlier_share of that median (a cold-cache run)."""
    if len(values) < 4:
        return False
    rest = list(values[1:])
    middle = statistics.median(rest)
    mad = statistics.median(abs(v - middle) for v in rest)
    return abs(values[0] - middle) > max(DEFAULTS.outlier_mads * mad, DEFAULTS.outlier_share * abs(middle))


def variant_warnings(where: str, name: str, values: list[float], summary: Summary | None) -> list[str]:
    out = []
    if summary is not None and summary.n > 1 and summary.cv >= DEFAULTS.cv_warning:
        out.append(f"{where}: `{name}` TPS varies a lot between runs (CV {summary.cv * 100:.0f} %)")
    if first_run_outlier(values):
        out.append(f"{where}: `{name}`'s first run is an outlier ({values[0]:,.1f} TPS vs a median of "
                   f"{statistics.median(values[1:]):,.1f} for the rest)")
    return out


def mean_of(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def deviation(base: float | None, value: float | None) -> float | None:
    if base is None or value is None or base == 0:
        return None
    return (value / base - 1.0) * 100.0


@dataclass(frozen=True)
class MetricDelta:
    metric: str
    label: str
    baseline_mean: float | None
    variant_mean: float | None
    deviation_pct: float | None  # (variant / baseline - 1) * 100
    higher_is_better: bool


@dataclass(frozen=True)
class VariantPoint:
    variant: str
    n: int
    failed: int
    means: dict[str, float | None]
    deltas: list[MetricDelta]
    summaries: dict[str, Summary] = field(default_factory=dict)
    comparisons: dict[str, Comparison] = field(default_factory=dict)  # metric -> vs the baseline

    def verdict(self, metric: str = Metric.TPS) -> Comparison | None:
        return self.comparisons.get(metric)


@dataclass(frozen=True)
class Point:
    workload: str
    threads: int | None
    variants: list[VariantPoint]
    warnings: tuple[str, ...] = ()


def extra_metrics(definition: CampaignRecord | None, workload: str) -> dict[str, tuple[str, bool]]:
    """The latency percentiles a campaign compares at a workload besides its `percentile` (compare_percentiles of
    the campaign and of the workload): metric key -> (label, higher is better)."""
    if definition is None:
        return {}
    spec = definition.workload(workload)
    asked = [*definition.compare_percentiles, *(spec.compare_percentiles if spec else ())]
    main = float((spec.percentile if spec else None) or 95)
    return {latency_metric(p): (latency_label(latency_metric(p)), False) for p in dict.fromkeys(asked) if p != main}


def variant_point(name: str, runs: list[RunRow], base_means: dict[str, float | None],
                  uncompared: tuple[str, ...] = ()) -> VariantPoint:
    """`uncompared`: metrics whose means are shown without a deviation (different percentiles)."""
    ok = [r for r in runs if r.status == "ok"]
    means = {m: mean_of([r.values[m] for r in ok]) for m in METRICS}
    if len(percentiles_of(ok).get(name, ())) > 1:
        means[Metric.LAT_PCT] = None  # its runs report different percentiles: no one mean
    deltas = [MetricDelta(m, METRICS[m][0], base_means.get(m), means[m],
                          None if m in uncompared else deviation(base_means.get(m), means[m]), METRICS[m][1])
              for m in METRICS]
    return VariantPoint(name, len(ok), sum(1 for r in runs if r.status == "failed"), means, deltas)


def metric_values(runs: list[RunRow], names: list[str], metric: str) -> dict[str, list[float]]:
    return {n: [v for _, v in pairs] for n, pairs in round_values(runs, names, metric).items()}


def round_values(runs: list[RunRow], names: list[str], metric: str) -> dict[str, list[tuple[int, float]]]:
    """Per variant, (round, value) of each run the statistics use, in run order (round 0 when unknown)."""
    return {n: [(r.round or 0, v) for r in runs if r.variant == n and r.status == "ok" and
                (v := r.values.get(metric)) is not None] for n in names}


def with_statistics(point: VariantPoint, stats_by_metric: dict[str, dict[str, Summary]],
                    compared: dict[str, dict[str, Comparison]]) -> VariantPoint:
    return VariantPoint(point.variant, point.n, point.failed, point.means, point.deltas,
                        {m: s[point.variant] for m, s in stats_by_metric.items() if point.variant in s},
                        {m: c[point.variant] for m, c in compared.items() if point.variant in c})


def not_compared_note(where: str, runs: list[RunRow]) -> str | None:
    """`... not compared: 95th vs 100th (...)` for a point whose runs report different percentiles."""
    mixed = mixed_percentiles(runs)
    if not mixed:
        return None
    each = ", ".join(f"`{v}`: {'/'.join(ordinal(p) for p in ps)}" for v, ps in percentiles_of(runs).items())
    return (f"{where}: percentile latency not compared: {' vs '.join(ordinal(p) for p in mixed)} ({each}; each "
            "run's is in the run table, tagged); TPS, QPS and avg latency are compared")


def point_values(here: list[RunRow], names: list[str]) -> dict[str, dict[str, list[float]]]:
    """Per metric, each variant's values; a variant whose runs report different percentiles has no percentile
    latency (its runs' numbers are not one quantity)."""
    values = {m: metric_values(here, names, m) for m in METRICS}
    own = percentiles_of(here)
    values[Metric.LAT_PCT] = {n: v for n, v in values[Metric.LAT_PCT].items() if len(own.get(n, ())) <= 1}
    return values


def point_tests(here: list[RunRow], names: list[str], baseline: str, settings: Settings,
                extra: dict[str, tuple[str, bool]],
                family: Mapping[str, list[float]]) -> dict[str, dict[str, Comparison]]:
    """Metric -> variant -> its comparison with the baseline; `family`: per metric, the raw p of the other
    comparisons Holm corrects together with this point's (correction: sweep). A point whose runs report
    different percentiles compares no percentile latency."""
    values = point_values(here, names)
    metrics = {m: METRICS[m][1] for m in METRICS if not (m == Metric.LAT_PCT and mixed_percentiles(here))}
    compared = {m: comparisons(baseline, values[m], higher, settings, family.get(m, ()),
                               paired_values(here, values[m], m, settings)) for m, higher in metrics.items()}
    for metric, (_, higher) in extra.items():
        found = {n: v for n, v in metric_values(here, names, metric).items() if v}
        compared[metric] = comparisons(baseline, found, higher, settings, family.get(metric, ()),
                                       paired_values(here, found, metric, settings))
    return compared


def paired_values(here: list[RunRow], values: dict[str, list[float]], metric: str,
                  settings: Settings) -> dict[str, list[tuple[int, float]]] | None:
    """The same variants' values with their rounds, when the comparisons may be paired by round."""
    if settings.estimator != "paired":
        return None
    return {n: found for n, found in round_values(here, list(values), metric).items() if found}


def build_point(workload: str, threads: int | None, here: list[RunRow], variants: list[str], baseline: str,
                settings: Settings, extra: dict[str, tuple[str, bool]] | None = None,
                family: Mapping[str, list[float]] | None = None) -> Point:
    """One point's statistics, computed once for all its variants; `extra`: the other latency percentiles the
    campaign compares here (each compared on its own, never mixed with the campaign's `percentile`)."""
    base_ok = [r for r in here if r.variant == baseline and r.status == "ok"]
    base_means = {m: mean_of([r.values[m] for r in base_ok]) for m in METRICS}
    if len(percentiles_of(base_ok).get(baseline, ())) > 1:
        base_means[Metric.LAT_PCT] = None  # the baseline's own runs report different percentiles: no one mean
    uncompared = (Metric.LAT_PCT,) if mixed_percentiles(here) else ()  # no deviation between two percentiles
    names = [v for v in variants if any(r.variant == v for r in here)]
    by_variant = {v: [r for r in here if r.variant == v] for v in names}
    plain = [variant_point(v, by_variant[v], base_means, uncompared) for v in names]
    values = point_values(here, names)
    stats_by_metric = {m: summaries(values[m], settings.seed) for m in METRICS}
    for metric in extra or {}:
        stats_by_metric[metric] = summaries({n: v for n, v in metric_values(here, names, metric).items() if v},
                                            settings.seed)
    compared = point_tests(here, names, baseline, settings, extra or {}, family or {})
    full = [with_statistics(p, stats_by_metric, compared) for p in plain]
    where = workload if threads is None else f"{workload} / {threads} threads"
    warnings = [w for p in full for w in variant_warnings(where, p.variant, values[Metric.TPS][p.variant],
                                                          p.summaries.get(Metric.TPS))]
    note = not_compared_note(where, here)
    return Point(workload, threads, full, (note, *warnings) if note else tuple(warnings))


def raw_pvalues(compared: dict[str, dict[str, Comparison]]) -> dict[str, list[float]]:
    return {m: [c.p for c in found.values() if c.p is not None] for m, found in compared.items()}


def sweep_families(grouped: dict[tuple[str, int | None], list[RunRow]], variants: list[str], baseline: str,
                   settings: Settings, definition: CampaignRecord | None) -> dict[tuple[str, int | None],
                                                                                   dict[str, list[float]]]:
    """correction: sweep: per point and metric, the raw p of the same metric's comparisons at the workload's
    other thread counts, which Holm then corrects together with the point's own."""
    names = {key: [v for v in variants if any(r.variant == v for r in here)] for key, here in grouped.items()}
    raw = {}
    for (workload, threads), here in grouped.items():
        # a raw p does not depend on the family: which comparisons are paired is the floor of pairs alone
        raw[(workload, threads)] = raw_pvalues(point_tests(here, names[(workload, threads)], baseline, settings,
                                                           extra_metrics(definition, workload), {}))
    out: dict[tuple[str, int | None], dict[str, list[float]]] = {}
    for key, mine in raw.items():
        others = [found for other, found in raw.items() if other[0] == key[0] and other != key]
        out[key] = {m: [p for found in others for p in found.get(m, [])] for m in mine}
    return out


def build_points(runs: list[RunRow], variants: list[str], baseline: str, settings: Settings,
                 definition: CampaignRecord | None = None) -> list[Point]:
    """Every point's statistics; p is Holm-corrected across the variants of each point, or with
    `correction: sweep` across every variant and thread count of a workload."""
    grouped: dict[tuple[str, int | None], list[RunRow]] = {}
    for r in runs:
        grouped.setdefault((r.workload, r.threads), []).append(r)
    keys = sorted(grouped, key=lambda k: (k[0], k[1] or 0))
    sweep = definition is not None and definition.correction == "sweep"
    families = sweep_families(grouped, variants, baseline, settings, definition) if sweep else {}
    return [build_point(w, t, grouped[(w, t)], variants, baseline, settings, extra_metrics(definition, w),
                        families.get((w, t))) for w, t in keys]


def point_title(point: Point) -> str:
    return point.workload if point.threads is None else f"{point.workload}, {point.threads} threads"


def point_runs(runs: list[RunRow], point: Point, variant: str) -> list[RunRow]:
    """The variant's successful runs at the point, in run order."""
    return [r for r in runs if r.variant == variant and r.status == "ok" and r.workload == point.workload
            and r.threads == point.threads]


@dataclass(frozen=True)
class VariantRuns:
    """One variant at one point, a figure over its successful runs: the start of each such row (I/O, CPU
    overhead, latency distribution)."""

    variant: str
    point: str  # its title (point_title)
    runs: int  # how many runs the figure is over
