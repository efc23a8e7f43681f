"""Turn a loaded campaign into an Analysis: the per-run table with steady windows, per (workload, threads) point
the summaries, deviations and verdicts of each variant against the baseline, and every warning. Pure: it reads
what analysis/loading.py loaded from the store (once, as a LoadedCampaign), so any report can be rebuilt offline
and any analysis tested without a store."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from layerbench.analysis.busy import (
    Replaced,
    busy_reason,
    busy_warning,
    quiet_wait_warning,
    run_busy,
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
from layerbench.analysis.point_statistics import Point, build_points, extra_metrics
from layerbench.analysis.quiet import WaitAccount, run_waits, wait_account
from layerbench.analysis.runs import (
    MEASURED,
    METRICS,
    RunRow,
    label_number,
    latency_label,
    mixed_percentiles,
    ordinal,
    run_row,
)
from layerbench.analysis.sequential import AdaptiveState, Decision, stop_reason
from layerbench.analysis.timing import TimeAccount, time_account
from layerbench.measure.cpu import BUSY_SHARE
from layerbench.records import (
    AdaptiveRepetitions,
    CampaignRecord,
    Environment,
    QuietWait,
    ScheduledRun,
    StoredCampaign,
    StoredRun,
)
from layerbench.records.campaign import IMPORTED
from layerbench.records.estimate import TimeEstimate
from layerbench.statistics_settings import Overrides, Settings


@dataclass(frozen=True)
class LoadedCampaign:
    """All the analysis reads of one stored campaign, read at once (analysis/loading.py load): its record, its
    runs in schedule order, its schedule (the planned runs) and the plan's estimate (None: stored without one).
    Built by the loader, or in memory by a test: analyze_loaded needs no store."""

    campaign: StoredCampaign
    runs: tuple[StoredRun, ...] = ()
    schedule: tuple[ScheduledRun, ...] = ()
    estimate: TimeEstimate | None = None


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
    waiting: WaitAccount | None = None  # the time waited for quiet beside the runs' (analysis/quiet.py)
    quiet_waits: list[tuple[int, QuietWait]] = field(default_factory=list)  # (run, its wait), in the order run

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


def run_warnings(runs: list[RunRow]) -> list[str]:
    out = []
    for r in runs:
        label = f"run {(r.idx or 0) + 1} ({r.variant})"
        if r.window and r.window.steady and not r.window.steady.steady:
            out.append(f"{label}: no steady state (MSER-5 would cut {r.window.steady.cut} of "
                       f"{r.window.steady.n} intervals); its numbers are kept but suspect")
        if r.window and r.window.unstable:
            out.append(f"{label}: unstable: interval TPS {swing_text(r.window.swing)} inside the steady window")
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
        if short and not analysis.definition.estimates_only:  # else the rule line says: estimates only
            where = point.workload if point.threads is None else f"{point.workload} / {point.threads} threads"
            warnings.append(f"{where}: too few runs for a verdict: {short}; the evidence is shown, the verdict "
                            "is not")
    warnings += run_warnings(analysis.runs)
    warnings += busy_warnings(analysis.runs, analysis.quiet_waits)
    warnings += backend_warnings(environments(analysis.runs))
    unasked = [d for d in analysis.differences if not d.asked]
    if unasked:
        warnings.append(f"{len(unasked)} difference(s) between variants that the campaign did not ask "
                        "for; see Environment and fairness")
    return warnings


def busy_warnings(runs: list[RunRow], waits: list[tuple[int, QuietWait]]) -> list[str]:
    """The busy machine: which runs, and what the campaign's `busy:` policy did about them (replaced, kept,
    stopped; the time wait_for_quiet waited); the runs that started busy after the whole wait (`waits`: 1-based
    run and its wait, in the order they ran), and after which run the campaign stopped waiting."""
    flagged = [(r, b) for r in runs if r.status in MEASURED and (b := run_busy(r.facts))]
    done = what_was_done([(f"run {(r.idx or 0) + 1}", r.facts.busy) for r, _ in flagged],
                         sum(w.waited_seconds for _, w in waits))
    busy = busy_warning([(f"run {(r.idx or 0) + 1}", b) for r, b in flagged], len(runs), done=done)
    return [w for w in [busy, quiet_wait_warning(waits)] if w]


UNDECIDED = {"~", "slower?", "faster?"}


def swing_text(swing: float) -> str:
    """`swings 1.62x`, or what an infinite swing means: an interval with no transaction at all."""
    return f"swings {swing:.2f}x" if math.isfinite(swing) else "drops to 0 in an interval (no transaction)"


def busy_undecided_notes(analysis: Analysis) -> list[str]:
    """Why a TPS comparison stayed undecided when the machine was busy: at a point where at least a third of the
    measured runs were busy, each undecided comparison says how many and how busy, so a `~` there reads as "this
    machine could not tell", not as "no cost"."""
    notes = []
    for point in analysis.points:
        runs = [r for r in analysis.runs if (r.workload, r.threads) == (point.workload, point.threads)
                and r.status in MEASURED]
        flagged = [b for r in runs if (b := run_busy(r.facts))]
        if not runs or 3 * len(flagged) < len(runs):
            continue
        worst = max(b.share for b in flagged)
        for v in point.variants:
            tps = v.verdict(Metric.TPS)
            if tps is None or tps.verdict.kind not in UNDECIDED:
                continue
            notes.append(f"`{v.variant}`, {point.workload} / {point.threads} threads, TPS: not decided on a busy "
                         f"machine: {len(flagged)} of {len(runs)} runs at this point were measured while other work "
                         f"took up to {worst * 100:.0f} % of the CPUs (threshold {BUSY_SHARE * 100:.0f} %), which "
                         "widens the interval; run the campaign again when the machine is quieter, or with more "
                         "rounds")
    return notes


def busy_summary(analysis: Analysis) -> list[str]:
    """What the end of `run` says about a busy machine: the runs replaced, and plainly when the machine never got
    quiet (the rerun limit was reached and busy runs are in the analysis) or busy runs were kept by policy."""
    lines = []
    if analysis.replaced:
        pairs = short_list([f"run {r.run} by run {r.replaced_by}" for r in analysis.replaced])
        lines.append(f"busy machine: {len(analysis.replaced)} run(s) replaced by reruns ({pairs}); the analysis "
                     "uses the clean runs")
    kept = [(r, r.facts.busy) for r in analysis.runs if r.status == "ok" and r.facts.busy]
    over = [f"run {(r.idx or 0) + 1}" for r, d in kept if d.policy == "rerun" and not d.waiting_stopped]
    unwaited = [f"run {(r.idx or 0) + 1}" for r, d in kept if d.waiting_stopped]
    if unwaited:
        lines.append(f"the machine stayed busy: the campaign stopped waiting for quiet, so {len(unwaited)} busy "
                     f"run(s) are in the analysis, not rerun ({short_list(unwaited)}); see the report's warnings")
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


def analyze_loaded(loaded: LoadedCampaign, overrides: Overrides | Mapping[str, float] | None = None) -> Analysis:
    """`overrides`: statistics settings for this analysis only, as `report --alpha ...` gives them (or as campaign
    keys: {"alpha": 0.01}); the stored campaign keeps its own."""
    if overrides is not None and not isinstance(overrides, Overrides):
        overrides = Overrides.from_campaign_keys(overrides)
    row, schedule = loaded.campaign, loaded.schedule
    definition = row.definition.with_statistics(overrides) if overrides else row.definition
    runs = [run_row(r, definition.unstable_ratio) for r in loaded.runs]
    unpaired_why = unpaired_reason(definition, runs)
    settings = replace(definition.settings(), estimator="unpaired") if unpaired_why else definition.settings()
    variants = definition.variant_names or sorted({r.variant for r in runs})
    percentile = label_number((definition.workloads[0].percentile if definition.workloads else None) or 95)
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
    analysis.timing = time_account(row, loaded.estimate, loaded.runs)  # the estimate beside the wall time (#33)
    analysis.quiet_waits = run_waits(loaded.runs)
    analysis.waiting = wait_account(row, loaded.runs)  # the time waited for quiet beside the runs' (#43)
    analysis.warnings = analysis_warnings(analysis)
    return analysis


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
