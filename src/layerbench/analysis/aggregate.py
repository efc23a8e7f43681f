"""Turn a stored campaign into an Analysis: the per-run table with steady windows, per (workload, threads) point
the summaries, deviations and verdicts of each variant against the baseline, and every warning. Reads the
store only, so any report can be rebuilt offline."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from layerbench.analysis.busy import (
    Replaced,
    busy_reason,
    busy_run,
    busy_warning,
    quiet_wait_warning,
    short_list,
    what_was_done,
)
from layerbench.analysis.fairness import (
    Difference,
    fairness_differences,
    neighbour_differences,
    neighbour_words,
    reset_differences,
    reset_kind,
    vm_size_differences,
)
from layerbench.analysis.metrics import Metric
from layerbench.analysis.point_statistics import comparisons, summaries, variant_warnings
from layerbench.analysis.runs import Window, run_values, steady_window
from layerbench.analysis.sequential import AdaptiveState, Decision, stop_reason
from layerbench.analysis.stats import Comparison, Summary
from layerbench.analysis.timing import TimeAccount, time_account
from layerbench.records import AdaptiveRepetitions, CampaignRecord, Environment, StoredFacts, StoredRun, Usage
from layerbench.records.campaign import IMPORTED
from layerbench.statistics_settings import Overrides, Settings
from layerbench.store import Store
from layerbench.sysbench.histogram import percentile_key

# metric key -> (label, higher is better)
METRICS: dict[str, tuple[str, bool]] = {m: (m.label, m.higher_is_better) for m in Metric}


@dataclass(frozen=True)
class RunRow:
    run_id: int
    idx: int | None
    round: int | None
    variant: str
    workload: str
    threads: int | None
    repetition: int
    status: str
    error: str | None
    values: dict[str, float | None]
    facts: StoredFacts = field(default_factory=StoredFacts, compare=False)
    window: Window | None = None
    series: tuple[tuple[float, float, bool], ...] = ()  # (time, tps, warm-up) per interval
    transactions: int | None = None  # of the measured part (after the warm-up)
    latency: dict[float, float] = field(default_factory=dict, compare=False)  # percentile -> ms (schema 2 runs)
    percentile: float | None = None  # which percentile values[Metric.LAT_PCT] is (imported logs may differ)


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


@dataclass
class Analysis:
    campaign_id: int
    name: str
    status: str
    baseline: str
    percentile: int | float
    definition: CampaignRecord
    runs: list[RunRow]
    points: list[Point]
    planned_runs: int
    warnings: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    environments: dict[str, Environment] = field(default_factory=dict)  # variant -> environment of a run
    settings: Settings = field(default_factory=Settings)
    adaptive: AdaptiveState | None = None  # repetitions: auto: which comparisons were decided, after how many rounds
    unpaired_why: str | None = None  # why no comparison is paired by round (None: paired where the pairs allow)
    replaced: list[Replaced] = field(default_factory=list)  # busy runs replaced by reruns (busy: rerun)
    run_percentiles: tuple[float, ...] = ()  # when runs report different latency percentiles (imported logs)
    timing: TimeAccount | None = None  # the plan's estimate beside the wall time (analysis/timing.py)

    @property
    def percentile_label(self) -> str:
        """`95`; `95/p100` (read p95/p100) when runs report different percentiles (run tables tag each run's)."""
        if not self.run_percentiles:
            return f"{self.percentile}"
        return "/p".join(f"{label_number(p)}" for p in self.run_percentiles)

    def metric_label(self, metric: str) -> str:
        if metric not in METRICS:
            return latency_label(metric)
        return Metric(metric).labelled(self.percentile_label)

    def not_compared(self, point: Point) -> str:
        """`not compared: 95th vs 100th` when the point's runs report different latency percentiles, else ''."""
        mixed = mixed_percentiles([r for r in self.runs if (r.workload, r.threads) == (point.workload, point.threads)])
        return f"not compared: {' vs '.join(ordinal(p) for p in mixed)}" if mixed else ""

    def compared_percentiles(self, workload: str) -> dict[str, tuple[str, bool]]:
        return extra_metrics(self.definition, workload)

    def nothing_to_compare(self) -> str:
        """Why the answer has no variant row: no run stored yet, none succeeded, or only the baseline ran."""
        if not self.runs:
            return (f"No run is stored for this campaign (status {self.status}, 0 of {self.planned_runs} planned runs)"
                    f": nothing was measured yet, so there is nothing to compare. Continue it with `layerbench "
                    f"resume {self.campaign_id}`." if self.planned_runs else
                    f"No run is stored for this campaign (status {self.status}): nothing was measured.")
        if not any(r.status == "ok" for r in self.runs):
            return f"No run succeeded ({len(self.runs)} failed): nothing was measured; the run table gives the causes."
        return "Only the baseline was measured."


def latency_metric(percentile: float) -> str:
    """The metric key of a recorded percentile: lat_p99_ms, lat_p99.9_ms, lat_max_ms."""
    return f"lat_{percentile_key(percentile)}_ms"


def latency_label(metric: str) -> str:
    return f"{metric.removeprefix('lat_').removesuffix('_ms')} latency (ms)"


def extra_metrics(definition: CampaignRecord | None, workload: str) -> dict[str, tuple[str, bool]]:
    """The latency percentiles a campaign compares at a workload besides its `percentile` (compare_percentiles of
    the campaign and of the workload): metric key -> (label, higher is better)."""
    if definition is None:
        return {}
    spec = definition.workload(workload)
    asked = [*definition.compare_percentiles, *(spec.compare_percentiles if spec else ())]
    main = float((spec.percentile if spec else None) or 95)
    return {latency_metric(p): (latency_label(latency_metric(p)), False) for p in dict.fromkeys(asked) if p != main}


MEASURED = ("ok", "replaced")  # a replaced run measured, its numbers are shown, the statistics leave it out


def run_row(r: StoredRun, unstable_ratio: float) -> RunRow:
    window = steady_window(r.intervals, unstable_ratio) if r.status in MEASURED else None
    values = run_values(r.metrics, window) if window else {m: r.metrics.value(m) for m in METRICS}
    values |= {latency_metric(p): v for p, v in r.latency.items()}
    return RunRow(r.id, r.idx, r.round, r.variant, r.workload, r.threads, r.repetition, r.status, r.error, values,
                  r.facts, window, tuple((i.time, i.tps, i.warmup) for i in r.intervals), r.metrics.transactions,
                  r.latency, r.percentile)


def run_rows(store: Store, campaign_id: int, unstable_ratio: float) -> list[RunRow]:
    return [run_row(r, unstable_ratio) for r in store.runs(campaign_id)]


def mean_of(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def deviation(base: float | None, value: float | None) -> float | None:
    if base is None or value is None or base == 0:
        return None
    return (value / base - 1.0) * 100.0


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


def unpaired_reason(definition: CampaignRecord, runs: list[RunRow]) -> str | None:
    """Why this campaign's comparisons cannot be paired by round at all, or None when they may be."""
    if definition.order == IMPORTED or any(r.round is None for r in runs):
        return "its rounds are not available" + (" (imported results)" if definition.order == IMPORTED else "")
    if definition.order not in (None, "rounds"):
        return f"its runs were not interleaved in rounds (order: {definition.order})"
    if definition.estimator != "paired":
        return ("it was asked for (estimator: unpaired)" if "estimator" in definition.document else
                "the campaign was stored before paired analysis existed and keeps the estimator it was reported "
                "with (a new campaign is paired unless it says estimator: unpaired)")
    return None


def with_statistics(point: VariantPoint, stats_by_metric: dict[str, dict[str, Summary]],
                    compared: dict[str, dict[str, Comparison]]) -> VariantPoint:
    return VariantPoint(point.variant, point.n, point.failed, point.means, point.deltas,
                        {m: s[point.variant] for m, s in stats_by_metric.items() if point.variant in s},
                        {m: c[point.variant] for m, c in compared.items() if point.variant in c})


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
    compared = {key: sum(1 for v in found if v != baseline) for key, found in names.items()}
    raw = {}
    for (workload, threads), here in grouped.items():
        extra = extra_metrics(definition, workload)
        # the family's size (its p-values come next): each comparison is paired or unpaired here as in the final
        # pass, which pairs by round only where the pairs can reach alpha after Holm over the whole family
        size = sum(n for (w, t), n in compared.items() if w == workload and t != threads)
        raw[(workload, threads)] = raw_pvalues(point_tests(here, names[(workload, threads)], baseline, settings,
                                                           extra, {m: [1.0] * size for m in [*METRICS, *extra]}))
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


def run_warnings(runs: list[RunRow]) -> list[str]:
    out = []
    for r in runs:
        label = f"run {(r.idx or 0) + 1} ({r.variant})"
        if r.window and r.window.steady and not r.window.steady.steady:
            out.append(f"{label}: no steady state (MSER-5 would cut {r.window.steady.cut} of "
                       f"{r.window.steady.n} intervals); its numbers are kept but suspect")
        if r.window and r.window.unstable:
            out.append(f"{label}: unstable: interval TPS swings {r.window.swing:.2f}x inside the steady window")
    return out


def analysis_warnings(analysis: Analysis) -> list[str]:
    warnings = []
    failed = [r for r in analysis.runs if r.status == "failed"]
    if failed:
        warnings.append(f"{len(failed)} run(s) failed and are excluded from the statistics; see the run table")
    if len(analysis.runs) < analysis.planned_runs:
        warnings.append(f"campaign is {analysis.status}: {len(analysis.runs)} of {analysis.planned_runs} planned "
                        "runs are stored; the numbers cover those only")
    for point in analysis.points:
        if not any(v.variant == analysis.baseline and v.n > 0 for v in point.variants):
            warnings.append(f"{point.workload} / {point.threads} threads: no successful baseline run, no deltas")
        warnings += point.warnings
        short = next((c.verdict.text for v in point.variants for c in v.comparisons.values()
                      if c.verdict.kind == "need more runs"), None)
        if short:
            where = point.workload if point.threads is None else f"{point.workload} / {point.threads} threads"
            warnings.append(f"{where}: too few runs for a verdict: {short}; the evidence is shown, the verdict "
                            "is not")
    warnings += run_warnings(analysis.runs)
    warnings += busy_warnings(analysis.runs)
    warnings += backend_warnings(environments(analysis.runs))
    unasked = [d for d in analysis.differences if not d.asked]
    if unasked:
        warnings.append(f"{len(unasked)} difference(s) between variants that the campaign did not ask "
                        "for; see Environment and fairness")
    return warnings


def busy_warnings(runs: list[RunRow]) -> list[str]:
    """The busy machine: which runs, and what the campaign's `busy:` policy did about them (replaced, kept,
    stopped; the time wait_for_quiet waited); the runs that started busy after the whole wait."""
    flagged = [(r, b) for r in runs if r.status in MEASURED and r.facts.usage and (b := busy_run(r.facts.usage))]
    waits = [(f"run {(r.idx or 0) + 1}", r.facts.quiet_wait) for r in runs if r.facts.quiet_wait]
    done = what_was_done([(f"run {(r.idx or 0) + 1}", r.facts.busy) for r, _ in flagged],
                         sum(w.waited_seconds for _, w in waits))
    busy = busy_warning([(f"run {(r.idx or 0) + 1}", b) for r, b in flagged], len(runs), done=done)
    return [w for w in [busy, quiet_wait_warning(waits)] if w]


def busy_summary(analysis: Analysis) -> list[str]:
    """What the end of `run` says about a busy machine: the runs replaced, and plainly when the machine never got
    quiet (the rerun limit was reached and busy runs are in the analysis) or busy runs were kept by policy."""
    lines = []
    if analysis.replaced:
        pairs = short_list([f"run {r.run} by run {r.replaced_by}" for r in analysis.replaced])
        lines.append(f"busy machine: {len(analysis.replaced)} run(s) replaced by reruns ({pairs}); the analysis "
                     "uses the clean runs")
    kept = [(r, r.facts.busy) for r in analysis.runs if r.status == "ok" and r.facts.busy]
    over = [f"run {(r.idx or 0) + 1}" for r, d in kept if d.policy == "rerun"]
    if over:
        limit = max(d.max_reruns for _, d in kept)
        lines.append(f"the machine never got quiet: the limit of {limit} reruns (busy: max_reruns) was reached, so "
                     f"{len(over)} busy run(s) are in the analysis ({short_list(over)}); see the report's warnings")
    by_policy = [f"run {(r.idx or 0) + 1}" for r, d in kept if d.policy == "keep"]
    if by_policy:
        lines.append(f"busy machine: {len(by_policy)} busy run(s) kept (busy: keep) in the analysis "
                     f"({short_list(by_policy)}); see the report's warnings")
    return lines


def replaced_runs(runs: list[RunRow]) -> list[Replaced]:
    """The runs replaced by reruns, with why (from the decision stored with each)."""
    out = []
    for r in runs:
        if r.status == "replaced":
            point = r.workload if r.threads is None else f"{r.workload}, {r.threads} threads"
            by = r.facts.busy.replaced_by if r.facts.busy else None
            why = f"busy: {busy_reason(r.facts.busy)}" if r.facts.busy else "busy"
            out.append(Replaced((r.idx or 0) + 1, r.variant, point, r.round, None if by is None else by + 1, why))
    return out


def backend_warnings(envs: dict[str, Environment]) -> list[str]:
    """What a backend said about a variant's setup that a reader must know (emulation, a slow client path,
    exclusive cores nobody asked for), from the variant's environment record."""
    return [f"`{variant}`: {text}" for variant, env in envs.items() for text in env.backend.warnings]


def environments(runs: list[RunRow]) -> dict[str, Environment]:
    """Each variant's environment, from its first successful run that recorded one."""
    out: dict[str, Environment] = {}
    for r in runs:
        env = r.facts.environment
        if r.status == "ok" and env and r.variant not in out:
            out[r.variant] = env
    return out


def asked_keys(definition: CampaignRecord) -> dict[str, set[str]]:
    """Per variant, the server settings the campaign sets on purpose (its config, sized buffer pools)."""
    sized = any(w.buffer_pool for w in definition.workloads)
    return {v.name: set(v.config_keys) | ({"innodb_buffer_pool_size"} if sized else set()) for v in definition.variants}


def complete_rounds(runs: list[RunRow], per_round: int) -> int:
    """Rounds whose every run is stored (runs of a round are stored before the next round starts)."""
    counts: dict[int, int] = {}
    for r in runs:
        if r.status == "replaced":  # its replacement is the round's run of that variant
            continue
        counts[r.round or 0] = counts.get(r.round or 0, 0) + 1
    return sum(1 for n in counts.values() if n >= per_round)


def adaptive_state(analysis: Analysis, per_round: int) -> AdaptiveState | None:
    """For repetitions: auto, the TPS verdict of every comparison at the last look and why the rounds stopped."""
    spec = analysis.definition.repetitions
    if not isinstance(spec, AdaptiveRepetitions):
        return None
    decisions = tuple(Decision(p.workload if p.threads is None else f"{p.workload} / {p.threads} threads",
                               v.variant, c.verdict.kind)
                      for p in analysis.points for v in p.variants if (c := v.verdict(Metric.TPS)) is not None)
    rounds, low, high = complete_rounds(analysis.runs, per_round), spec.rounds_min, spec.rounds_max
    done = bool(decisions) and all(d.decided for d in decisions)
    reason = stop_reason(done, rounds, low, high, analysis.status.startswith("finished"))
    return AdaptiveState(rounds, low, high, spec.budget, analysis.settings.alpha, decisions, reason or "not finished")


def label_number(value: float) -> int | float:
    """95 for 95.0 (labels read p95), 99.9 stays 99.9."""
    return int(value) if float(value).is_integer() else float(value)


def analyze(store: Store, ref: str | int, overrides: Overrides | Mapping[str, float] | None = None) -> Analysis:
    """`overrides`: statistics settings for this analysis only, as `report --alpha ...` gives them (or as campaign
    keys: {"alpha": 0.01}); the stored campaign keeps its own."""
    if overrides is not None and not isinstance(overrides, Overrides):
        overrides = Overrides.from_campaign_keys(overrides)
    row = store.campaign(ref)
    definition = row.definition.with_statistics(overrides) if overrides else row.definition
    stored = store.runs(row.id)
    runs = [run_row(r, definition.unstable_ratio) for r in stored]
    unpaired_why = unpaired_reason(definition, runs)
    settings = replace(definition.settings(), estimator="unpaired") if unpaired_why else definition.settings()
    variants = definition.variant_names or sorted({r.variant for r in runs})
    percentile = label_number((definition.workloads[0].percentile if definition.workloads else None) or 95)
    schedule = store.schedule(row.id)
    points = build_points(runs, variants, row.baseline, settings, definition)
    analysis = Analysis(row.id, row.name, row.status, row.baseline, percentile, definition, runs, points,
                        len(schedule) or len(runs), settings=settings, unpaired_why=unpaired_why)
    analysis.run_percentiles = mixed_percentiles(runs)
    analysis.environments = environments(runs)
    analysis.replaced = replaced_runs(runs)
    analysis.differences = fairness_differences(row.baseline, analysis.environments, asked_keys(definition))
    analysis.differences += vm_size_differences(row.baseline, definition, analysis.environments)
    analysis.differences += neighbour_differences(row.baseline, recorded_neighbours(runs))  # asked, yet said (#32)
    analysis.differences += reset_differences(row.baseline, recorded_resets(runs))  # clone, copy, re-prepare (#33)
    analysis.adaptive = adaptive_state(analysis, max(1, len(variants) * len({(s.workload, s.threads)
                                                                             for s in schedule})))
    if analysis.adaptive and analysis.adaptive.reason != "not finished":
        analysis.planned_runs = len(runs)  # the rounds it needed were the plan; the rest were never wanted
    analysis.timing = time_account(row, store.estimate(row.id), stored)  # the estimate beside the wall time (#33)
    analysis.warnings = analysis_warnings(analysis)
    return analysis


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


@dataclass(frozen=True)
class PricePerformance:
    variant: str
    cost_per_month: float
    mean_tps: float | None
    tps_per_cost: float | None  # TPS per currency unit per month
    cost_for_baseline_tps: float | None  # what the baseline's throughput would cost on this variant (linear)


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


def price_performance(analysis: Analysis) -> list[PricePerformance]:
    """TPS per currency unit and the cost of the baseline's throughput, for variants with a cost_per_month."""
    costs = {v.name: v.cost_per_month for v in analysis.definition.variants}
    if not any(costs.values()):
        return []
    tps = {name: mean_of([r.values[Metric.TPS] for r in analysis.runs if r.variant == name and r.status == "ok"])
           for name in costs}
    base = tps.get(analysis.baseline)
    out = []
    for name, cost in costs.items():
        if cost:
            mine = tps[name]
            per_cost = mine / cost if mine else None
            for_base = cost * base / mine if (mine and base) else None
            out.append(PricePerformance(name, float(cost), mine, per_cost, for_base))
    return out


@dataclass(frozen=True)
class Overhead:
    """Where the CPU went for one variant at one point: means over its successful runs."""

    variant: str
    point: str
    runs: int
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


def overhead_rows(analysis: Analysis) -> list[Overhead]:
    out = []
    intervals = {w.name: w.report_interval for w in analysis.definition.workloads}
    for point in analysis.points:
        title = point.workload if point.threads is None else f"{point.workload}, {point.threads} threads"
        for v in point.variants:
            measured = [(r, r.facts.usage) for r in analysis.runs if r.variant == v.variant and r.status == "ok" and
                        r.workload == point.workload and r.threads == point.threads and r.facts.usage]
            if not measured:
                continue
            shares = [per_1000(u, r, intervals.get(point.workload, 1.0)) for r, u in measured if u]
            components = sorted({k for share in shares for k in share})
            cpu = {c: statistics.fmean(share.get(c, 0.0) for share in shares) for c in components}
            usages, runs = [u for _, u in measured if u], measured
            periods, throttled, seconds = (sum(x) for x in zip(*(throttling_of(u) for u in usages), strict=True))
            out.append(Overhead(v.variant, title, len(runs), cpu, throttled / periods if periods else None,
                                seconds / len(runs) if periods else None))
    return out


def recorded_neighbours(runs: list[RunRow]) -> dict[str, set[str]]:
    """Per variant, the neighbours its completed runs recorded, in words (fairness.py compares them)."""
    out: dict[str, set[str]] = {}
    for run in runs:
        if run.status == "ok":
            out.setdefault(run.variant, set()).update(neighbour_words(run.facts.neighbours))
    return out


def recorded_resets(runs: list[RunRow]) -> dict[str, tuple[dict[str, str], bool]]:
    """Per variant, how its completed runs got their data (fairness.reset_kind: kind -> words), and whether the
    variant's own `reset:` chose it (fairness.py compares them)."""
    out: dict[str, tuple[dict[str, str], bool]] = {}
    for run in runs:
        reset = run.facts.reset
        if run.status != "ok" or reset is None:
            continue
        kinds, asked = out.get(run.variant, ({}, True))
        kind, words = reset_kind(reset.method, reset.restore.method if reset.restore else None)
        source = reset.document.get("reset_from")
        kinds[kind] = words
        out[run.variant] = kinds, asked and isinstance(source, str) and source.startswith("variants.")
    return out
