"""Turn a stored campaign into an Analysis: the per-run table with steady windows, per (workload, threads) point
the summaries, deviations and verdicts of each variant against the baseline, and every warning. Reads the
store only, so any report can be rebuilt offline."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any

from layerbench.analysis.busy import busy_run, busy_warning, quiet_wait_warning
from layerbench.analysis.compare import Settings, comparisons, summaries, variant_warnings
from layerbench.analysis.fairness import Difference, fairness_differences, vm_size_differences
from layerbench.analysis.runs import Window, run_values, steady_window
from layerbench.analysis.sequential import AdaptiveState, Decision, look_alpha, stop_reason
from layerbench.analysis.stats import Comparison, Summary
from layerbench.latency_histogram import percentile_key
from layerbench.store import Store

# metric key -> (label, higher is better)
METRICS: dict[str, tuple[str, bool]] = {
    "queries": ("total queries", True),
    "qps": ("QPS", True),
    "tps": ("TPS", True),
    "lat_avg_ms": ("avg latency (ms)", False),
    "lat_pct_ms": ("p{pct} latency (ms)", False),
}


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
    details: dict[str, Any] = field(default_factory=dict, compare=False)
    window: Window | None = None
    series: tuple[tuple[float, float, bool], ...] = ()  # (time, tps, warm-up) per interval
    transactions: int | None = None  # of the measured part (after the warm-up)
    latency: dict[float, float] = field(default_factory=dict, compare=False)  # percentile -> ms (schema 2 runs)


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

    def verdict(self, metric: str = "tps") -> Comparison | None:
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
    definition: dict[str, Any]
    runs: list[RunRow]
    points: list[Point]
    planned_runs: int
    warnings: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    environments: dict[str, dict[str, Any]] = field(default_factory=dict)  # variant -> environment of a run
    settings: Settings = field(default_factory=Settings)
    adaptive: AdaptiveState | None = None  # repetitions: auto: which comparisons were decided, after how many rounds

    def metric_label(self, metric: str) -> str:
        if metric not in METRICS:
            return latency_label(metric)
        return METRICS[metric][0].format(pct=self.percentile)

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


def extra_metrics(definition: dict[str, Any], workload: str) -> dict[str, tuple[str, bool]]:
    """The latency percentiles a campaign compares at a workload besides its `percentile` (compare_percentiles of
    the campaign and of the workload): metric key -> (label, higher is better)."""
    spec = next((w for w in definition.get("workloads", []) if w.get("name") == workload), {})
    asked = [float(p) for p in [*definition.get("compare_percentiles", []), *spec.get("compare_percentiles", [])]]
    main = float(spec.get("percentile") or 95)
    return {latency_metric(p): (latency_label(latency_metric(p)), False) for p in dict.fromkeys(asked) if p != main}


def run_rows(store: Store, campaign_id: int, unstable_ratio: float) -> list[RunRow]:
    intervals, latency = store.intervals_by_run(campaign_id), store.latency_by_run(campaign_id)
    rows = []
    for r in store.runs(campaign_id):
        series = intervals.get(int(r["id"]), [])
        window = steady_window(series, unstable_ratio) if r["status"] == "ok" else None
        values = run_values(r, window) if window else {m: (float(r[m]) if r[m] is not None else None)
                                                       for m in METRICS}
        dist = latency.get(int(r["id"]), {})
        values |= {latency_metric(p): v for p, v in dist.items()}
        rows.append(RunRow(int(r["id"]), r["idx"], r["round"], r["variant"], r["workload"], r["threads"],
                           int(r["repetition"]), r["status"], r["error"], values, json.loads(r["details"] or "{}"),
                           window, tuple((float(i["time"]), float(i["tps"]), bool(i["warmup"])) for i in series),
                           int(r["transactions"]) if r["transactions"] is not None else None, dist))
    return rows


def mean_of(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def deviation(base: float | None, value: float | None) -> float | None:
    if base is None or value is None or base == 0:
        return None
    return (value / base - 1.0) * 100.0


def variant_point(name: str, runs: list[RunRow], base_means: dict[str, float | None]) -> VariantPoint:
    ok = [r for r in runs if r.status == "ok"]
    means = {m: mean_of([r.values[m] for r in ok]) for m in METRICS}
    deltas = [MetricDelta(m, METRICS[m][0], base_means.get(m), means[m], deviation(base_means.get(m), means[m]),
                          METRICS[m][1]) for m in METRICS]
    return VariantPoint(name, len(ok), len(runs) - len(ok), means, deltas)


def metric_values(runs: list[RunRow], names: list[str], metric: str) -> dict[str, list[float]]:
    return {n: [v for r in runs if r.variant == n and r.status == "ok" and (v := r.values.get(metric)) is not None]
            for n in names}


def with_statistics(point: VariantPoint, stats_by_metric: dict[str, dict[str, Summary]],
                    compared: dict[str, dict[str, Comparison]]) -> VariantPoint:
    return VariantPoint(point.variant, point.n, point.failed, point.means, point.deltas,
                        {m: s[point.variant] for m, s in stats_by_metric.items() if point.variant in s},
                        {m: c[point.variant] for m, c in compared.items() if point.variant in c})


def build_point(workload: str, threads: int | None, here: list[RunRow], variants: list[str], baseline: str,
                settings: Settings, extra: dict[str, tuple[str, bool]] | None = None) -> Point:
    """One point's statistics, computed once for all its variants; `extra`: the other latency percentiles the
    campaign compares here (each compared on its own, never mixed with the campaign's `percentile`)."""
    base_ok = [r for r in here if r.variant == baseline and r.status == "ok"]
    base_means = {m: mean_of([r.values[m] for r in base_ok]) for m in METRICS}
    names = [v for v in variants if any(r.variant == v for r in here)]
    by_variant = {v: [r for r in here if r.variant == v] for v in names}
    plain = [variant_point(v, by_variant[v], base_means) for v in names]
    values = {m: metric_values(here, names, m) for m in METRICS}
    stats_by_metric = {m: summaries(values[m], settings.seed) for m in METRICS}
    compared = {m: comparisons(baseline, values[m], METRICS[m][1], settings) for m in METRICS}
    for metric, (_, higher) in (extra or {}).items():
        found = {n: v for n, v in metric_values(here, names, metric).items() if v}
        stats_by_metric[metric] = summaries(found, settings.seed)
        compared[metric] = comparisons(baseline, found, higher, settings)
    full = [with_statistics(p, stats_by_metric, compared) for p in plain]
    where = workload if threads is None else f"{workload} / {threads} threads"
    warnings = [w for p in full for w in variant_warnings(where, p.variant, values["tps"][p.variant],
                                                          p.summaries.get("tps"))]
    return Point(workload, threads, full, tuple(warnings))


def build_points(runs: list[RunRow], variants: list[str], baseline: str, settings: Settings,
                 definition: dict[str, Any] | None = None) -> list[Point]:
    grouped: dict[tuple[str, int | None], list[RunRow]] = {}
    for r in runs:
        grouped.setdefault((r.workload, r.threads), []).append(r)
    keys = sorted(grouped, key=lambda k: (k[0], k[1] or 0))
    return [build_point(w, t, grouped[(w, t)], variants, baseline, settings, extra_metrics(definition or {}, w))
            for w, t in keys]


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
    failed = [r for r in analysis.runs if r.status != "ok"]
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
    busy = [(f"run {(r.idx or 0) + 1}", b) for r in analysis.runs
            if r.status == "ok" and (b := busy_run(r.details.get("resources") or {}))]
    waits = [(f"run {(r.idx or 0) + 1}", r.details["quiet_wait"]) for r in analysis.runs if "quiet_wait" in r.details]
    warnings += [w for w in [busy_warning(busy, len(analysis.runs)), quiet_wait_warning(waits)] if w]
    warnings += backend_warnings(environments(analysis.runs))
    if analysis.differences:
        warnings.append(f"{len(analysis.differences)} difference(s) between variants that the campaign did not ask "
                        "for; see Environment and fairness")
    return warnings


def backend_warnings(envs: dict[str, dict[str, Any]]) -> list[str]:
    """What a backend said about a variant's setup that a reader must know (emulation, a slow client path,
    exclusive cores nobody asked for), from the variant's environment record."""
    out = []
    for variant, env in envs.items():
        for text in (env.get("backend") or {}).get("warnings", []):
            out.append(f"`{variant}`: {text}")
    return out


def environments(runs: list[RunRow]) -> dict[str, dict[str, Any]]:
    """Each variant's environment, from its first successful run that recorded one."""
    out: dict[str, dict[str, Any]] = {}
    for r in runs:
        env = r.details.get("environment")
        if r.status == "ok" and env and r.variant not in out:
            out[r.variant] = env
    return out


def asked_keys(definition: dict[str, Any]) -> dict[str, set[str]]:
    """Per variant, the server settings the campaign sets on purpose (its config, sized buffer pools)."""
    sized = any(w.get("buffer_pool") for w in definition.get("workloads", []))
    out = {}
    for v in definition.get("variants", []):
        keys = set((v.get("server") or {}).get("config", {}))
        out[v["name"]] = keys | ({"innodb_buffer_pool_size"} if sized else set())
    return out


def settings_of(definition: dict[str, Any]) -> Settings:
    """An adaptive campaign tests at each look's share of alpha (analysis/sequential.py)."""
    alpha, adaptive = float(definition.get("alpha", 0.05)), definition.get("repetitions")
    if isinstance(adaptive, dict):
        alpha = look_alpha(alpha, adaptive)
    return Settings(float(definition.get("noise_threshold", 0.02)), alpha,
                    int(definition.get("min_runs") or 0), int(definition.get("seed", 1)))  # 0: no floor of the user's


def complete_rounds(runs: list[RunRow], per_round: int) -> int:
    """Rounds whose every run is stored (runs of a round are stored before the next round starts)."""
    counts: dict[int, int] = {}
    for r in runs:
        counts[r.round or 0] = counts.get(r.round or 0, 0) + 1
    return sum(1 for n in counts.values() if n >= per_round)


def adaptive_state(analysis: Analysis, per_round: int) -> AdaptiveState | None:
    """For repetitions: auto, the TPS verdict of every comparison at the last look and why the rounds stopped."""
    spec = analysis.definition.get("repetitions")
    if not isinstance(spec, dict):
        return None
    decisions = tuple(Decision(p.workload if p.threads is None else f"{p.workload} / {p.threads} threads",
                               v.variant, c.verdict.kind)
                      for p in analysis.points for v in p.variants if (c := v.verdict("tps")) is not None)
    rounds, low, high = complete_rounds(analysis.runs, per_round), int(spec.get("min", 6)), int(spec.get("max", 30))
    done = bool(decisions) and all(d.decided for d in decisions)
    reason = stop_reason(done, rounds, low, high, analysis.status.startswith("finished"))
    return AdaptiveState(rounds, low, high, spec.get("budget"), analysis.settings.alpha, decisions,
                         reason or "not finished")


def label_number(value: float) -> int | float:
    """95 for 95.0 (labels read p95), 99.9 stays 99.9."""
    return int(value) if float(value).is_integer() else float(value)


def analyze(store: Store, ref: str | int, overrides: dict[str, Any] | None = None) -> Analysis:
    """`overrides`: statistics settings for this analysis only (noise_threshold, alpha, min_runs), as
    `report --alpha ...` gives them; the stored campaign keeps its own."""
    row = store.campaign(ref)
    definition = {**json.loads(row["definition"]), **(overrides or {})}
    campaign_id = int(row["id"])
    settings = settings_of(definition)
    runs = run_rows(store, campaign_id, float(definition.get("unstable_ratio", 1.5)))
    variants = [v["name"] for v in definition.get("variants", [])] or sorted({r.variant for r in runs})
    workloads = definition.get("workloads", [{}])
    percentile = label_number((workloads[0].get("percentile") if workloads else None) or 95)
    schedule = store.schedule(campaign_id)
    planned = len(schedule) or len(runs)
    points = build_points(runs, variants, row["baseline"], settings, definition)
    analysis = Analysis(campaign_id, row["name"], row["status"], row["baseline"], percentile, definition, runs,
                        points, planned, settings=settings)
    analysis.environments = environments(runs)
    analysis.differences = fairness_differences(row["baseline"], analysis.environments, asked_keys(definition))
    analysis.differences += vm_size_differences(row["baseline"], definition, analysis.environments)
    analysis.adaptive = adaptive_state(analysis, max(1, len(variants) * len({(s["workload"], s["threads"])
                                                                             for s in schedule})))
    if analysis.adaptive and analysis.adaptive.reason != "not finished":
        analysis.planned_runs = len(runs)  # the rounds it needed were the plan; the rest were never wanted
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
        found = mine.verdict("tps")
        rows.append(SweepRow(int(point.threads or 0), base.means["tps"], mine.means["tps"], deltas["tps"],
                             deltas["lat_pct_ms"], found.verdict.kind if found else "-",
                             found.verdict.text if found else "", found))
    return rows


def sweeps(analysis: Analysis) -> dict[tuple[str, str], list[SweepRow]]:
    """(workload, variant) -> sweep rows, for every workload measured at more than one thread count."""
    out = {}
    for workload in dict.fromkeys(p.workload for p in analysis.points):
        if sum(1 for p in analysis.points if p.workload == workload) < 2:
            continue
        for variant in [v["name"] for v in analysis.definition.get("variants", [])]:
            if variant != analysis.baseline:
                out[(workload, variant)] = sweep_table(analysis, workload, variant)
    return out


def price_performance(analysis: Analysis) -> list[PricePerformance]:
    """TPS per currency unit and the cost of the baseline's throughput, for variants with a cost_per_month."""
    costs = {v["name"]: v.get("cost_per_month") for v in analysis.definition.get("variants", [])}
    if not any(costs.values()):
        return []
    tps = {name: mean_of([r.values["tps"] for r in analysis.runs if r.variant == name and r.status == "ok"])
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


def throttling_of(usage: dict[str, Any]) -> tuple[float, float, float]:
    periods = sum(t.get("nr_periods", 0) for t in usage.get("throttling", {}).values())
    throttled = sum(t.get("nr_throttled", 0) for t in usage.get("throttling", {}).values())
    seconds = sum(t.get("throttled_seconds", 0.0) for t in usage.get("throttling", {}).values())
    return periods, throttled, seconds


def sampled_transactions(r: RunRow, report_interval: float) -> int:
    """Transactions during the whole sampled window: the measured ones plus the warm-up's (from its intervals)."""
    warm = sum(tps for _, tps, is_warm in r.series if is_warm) * report_interval
    return int((r.transactions or 0) + warm)


def per_1000(r: RunRow, report_interval: float) -> dict[str, float]:
    """CPU seconds per 1,000 transactions by component, over the same window as the sampler's."""
    usage, count = r.details["resources"], sampled_transactions(r, report_interval)
    if count <= 0:
        return {}
    return {k: v * 1000 / count for k, v in usage.get("cpu_seconds", {}).items() if k != "idle"}


def overhead_rows(analysis: Analysis) -> list[Overhead]:
    out = []
    intervals = {w["name"]: float(w.get("report_interval", 1)) for w in analysis.definition.get("workloads", [])}
    for point in analysis.points:
        title = point.workload if point.threads is None else f"{point.workload}, {point.threads} threads"
        for v in point.variants:
            runs = [r for r in analysis.runs if r.variant == v.variant and r.status == "ok" and
                    r.workload == point.workload and r.threads == point.threads and r.details.get("resources")]
            if not runs:
                continue
            shares = [per_1000(r, intervals.get(point.workload, 1.0)) for r in runs]
            components = sorted({k for share in shares for k in share})
            cpu = {c: statistics.fmean(share.get(c, 0.0) for share in shares) for c in components}
            usages = [r.details["resources"] for r in runs]
            periods, throttled, seconds = (sum(x) for x in zip(*(throttling_of(u) for u in usages), strict=True))
            out.append(Overhead(v.variant, title, len(runs), cpu, throttled / periods if periods else None,
                                seconds / len(runs) if periods else None))
    return out
