"""The report's content, computed once from an Analysis: every table, note and warning the formats show, as
values (the shape of benchstat's table model: group -> statistics -> one table model -> renderers). Markdown,
HTML, JSON and CSV only render a Report; none of them computes a row of its own."""

from __future__ import annotations

from dataclasses import dataclass, field

from layerbench.analysis.aggregate import Analysis, busy_undecided_notes
from layerbench.analysis.attainable import T_MIN_PAIRS, paired_rule_text, pairs_floor, rule_text
from layerbench.analysis.datasets import DataRow, dataset_rows
from layerbench.analysis.io import IoRow, RunIo, io_notes, io_rows, run_figures
from layerbench.analysis.latency import (
    DistributionRow,
    PercentileComparison,
    distribution_rows,
    missing_percentiles,
    percentile_comparisons,
)
from layerbench.analysis.metrics import Metric
from layerbench.analysis.overhead import Overhead, overhead_notes, overhead_rows
from layerbench.analysis.placement import PlacementRow, placement_rows
from layerbench.analysis.point_statistics import point_title
from layerbench.analysis.price import PricePerformance, price_performance
from layerbench.analysis.published import PublishedSection, published_section
from layerbench.analysis.sequential import decision_rows, headline
from layerbench.analysis.stats import Comparison, Summary, meanings
from layerbench.analysis.sweeps import SweepRow, sweeps
from layerbench.records import AdaptiveRepetitions, WorkloadRecord
from layerbench.statistics_settings import Settings
from layerbench.vocabulary.sizes import byte_text


@dataclass(frozen=True)
class AnswerRow:
    """One variant at one point against the baseline: its TPS and percentile-latency comparisons."""

    variant: str
    point: str
    tps: Comparison | None
    latency: Comparison | None
    latency_note: str = ""  # `not compared: 95th vs 100th` when the point's runs report different percentiles


@dataclass(frozen=True)
class SummaryRow:
    """One variant at one point: the summary of its runs' TPS, a row of every format's TPS-per-variant table."""

    variant: str
    point: str  # its title: `oltp_read_write, 8 threads`
    where: tuple[str, int | None]  # (workload, threads), by which the HTML groups its tables
    summary: Summary


@dataclass(frozen=True)
class Report:
    analysis: Analysis  # the runs, the definition and the environments, which the formats show as stored
    workloads: tuple[str, ...]  # one line per workload: test, data, threads, durations, repetitions, buffer pool
    method: str  # how the answer was computed, in one sentence
    rule: str  # the verdict rule at this campaign's alpha and family size
    legend: str  # the verdict words
    answer: tuple[AnswerRow, ...]
    verdict_notes: tuple[str, ...]  # where a verdict's interval and test say different things
    adaptive: tuple[str, tuple[tuple[str, ...], ...]] | None  # headline, decision rows (repetitions: auto)
    sweeps: dict[tuple[str, str], list[SweepRow]]  # (workload, variant) -> rows
    overhead: tuple[Overhead, ...]
    overhead_components: tuple[str, ...]
    price: tuple[PricePerformance, ...]
    distribution: tuple[DistributionRow, ...]
    percentiles: tuple[PercentileComparison, ...]
    missing_percentiles: tuple[str, ...]
    differences: tuple[str, ...]  # unasked differences from the baseline, as sentences
    data: tuple[DataRow, ...] = ()  # per variant: restore path, verification, datadir storage (analysis/datasets.py)
    io: tuple[IoRow, ...] = ()  # where the I/O went, per point and variant (analysis/io.py)
    io_notes: tuple[str, ...] = ()  # why an I/O figure is missing that is no error, with the variants it concerns
    io_runs: dict[int, RunIo] = field(default_factory=dict)  # run id -> its I/O per 1,000 transactions
    summary: tuple[SummaryRow, ...] = ()  # the TPS per variant and point (built here once for every format)
    run_verdicts: dict[tuple[str, str, int | None], tuple[str, str, str, str]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    published: PublishedSection | None = None  # the published study's numbers beside ours (analysis/published.py)
    placement: tuple[PlacementRow, ...] = ()  # per variant: server and client node, path, RTT (analysis/placement.py)
    overhead_notes: tuple[str, ...] = ()  # why a variant's server CPU is missing (analysis/overhead.py)


def report_model(analysis: Analysis) -> Report:
    overhead = tuple(overhead_rows(analysis))
    components = sorted({c for r in overhead for c in r.cpu_per_1000_tx}, key=lambda c: (c == "other", c))
    adaptive = analysis.adaptive
    return Report(
        analysis, tuple(workload_line(analysis, w) for w in analysis.definition.workloads), method_line(analysis),
        rule(analysis), legend(analysis.settings), answer_rows(analysis), tuple(verdict_notes(analysis)),
        (headline(adaptive), tuple(tuple(r) for r in decision_rows(adaptive))) if adaptive else None,
        sweeps(analysis), overhead, tuple(components), tuple(price_performance(analysis)),
        tuple(distribution_rows(analysis)), tuple(percentile_comparisons(analysis)),
        tuple(missing_percentiles(analysis)), tuple(d.text(analysis.baseline) for d in analysis.differences),
        tuple(dataset_rows(analysis.runs)),
        io=(io := tuple(io_rows(analysis))), io_notes=tuple(io_notes(list(io))),
        io_runs={r.id: f for r in analysis.runs if (f := run_figures(r)) is not None},
        summary=summary_rows(analysis), run_verdicts=run_verdicts(analysis), warnings=tuple(analysis.warnings),
        published=published_section(analysis), placement=tuple(placement_rows(analysis.runs)),
        overhead_notes=tuple(overhead_notes(analysis)))


def summary_rows(analysis: Analysis) -> tuple[SummaryRow, ...]:
    return tuple(SummaryRow(v.variant, point_title(p), (p.workload, p.threads), s)
                 for p in analysis.points for v in p.variants if (s := v.summaries.get(Metric.TPS)))


def run_verdicts(analysis: Analysis) -> dict[tuple[str, str, int | None], tuple[str, str, str, str]]:
    """(variant, workload, threads) -> TPS verdict word and text, percentile latency verdict word and text (or
    `not compared` and `95th vs 100th` when the point's runs report different percentiles); empty cells for
    the baseline."""
    out = {}
    for point in analysis.points:
        note = analysis.not_compared(point)
        for v in point.variants:
            cells: list[str] = []
            for metric in (Metric.TPS, Metric.LAT_PCT):
                found = v.verdict(metric)
                if found:
                    cells += [found.verdict.kind, found.verdict.text]
                elif metric == Metric.LAT_PCT and note and v.variant != analysis.baseline:
                    cells += note.split(": ", 1)
                else:
                    cells += ["", ""]
            out[(v.variant, point.workload, point.threads)] = (cells[0], cells[1], cells[2], cells[3])
    return out


def answer_rows(analysis: Analysis) -> tuple[AnswerRow, ...]:
    notes = {(p.workload, p.threads): analysis.not_compared(p) for p in analysis.points}
    return tuple(AnswerRow(v.variant, point_title(point), v.verdict(Metric.TPS), v.verdict(Metric.LAT_PCT),
                           notes[(point.workload, point.threads)])
                 for point in analysis.points for v in point.variants if v.variant != analysis.baseline)


def method_line(analysis: Analysis) -> str:
    """How the answer was computed, which estimator and why (analysis/paired.py, docs/statistics.md)."""
    s = analysis.settings
    level = f"{(1 - s.alpha) * 100:g} %"
    tail = f"{correction_family(analysis)}, noise threshold ±{s.threshold * 100:g} %, alpha {s.alpha:g}."
    unpaired = (f"delta = Hodges-Lehmann ratio - 1 (median of the pairwise ratios variant/baseline) with its {level} "
                "interval from the exact Mann-Whitney test")
    if s.estimator != "paired":
        return (f"Each variant against `{analysis.baseline}`, unpaired because {analysis.unpaired_why}: {unpaired}, "
                f"{tail}")
    line = (f"Each variant against `{analysis.baseline}`, paired by round (the runs of a round share the machine's "
            f"drift): delta = exp(mean) - 1 of the per-round log ratios variant/baseline with its {level} Student "
            f"interval, by the paired t-test, {tail}")
    fallback = sorted({f"`{v.variant}` at {point_title(p)}" for p in analysis.points for v in p.variants
                       if (c := v.verdict(Metric.TPS)) and c.delta is not None and c.pairs is None})
    if not fallback:
        return line
    floor = pairs_floor(s.min_runs)
    own = f" (min_runs {s.min_runs})" if floor > T_MIN_PAIRS else ", the paired t-test's floor"
    return (f"{line} Unpaired instead ({unpaired}) where fewer than {floor} rounds hold both runs{own}: "
            f"{', '.join(fallback)}.")


def swept(analysis: Analysis) -> bool:
    """Whether a workload was measured at more than one thread count."""
    workloads = [p.workload for p in analysis.points]
    return len(set(workloads)) < len(workloads)


def correction_family(analysis: Analysis) -> str:
    """The family over which p is Holm-corrected, said in the method line (the campaign's `correction`)."""
    if analysis.definition.correction == "sweep":
        return "p Holm-corrected across every variant and thread count of each workload's sweep (correction: sweep)"
    if swept(analysis):
        return ("p Holm-corrected across the variants of each point (workload and thread count), not across the "
                "points of a sweep (correction: point; `correction: sweep` corrects them together)")
    return "p Holm-corrected across the variants of each point"


def legend(settings: Settings) -> str:
    """The verdict words, the same in every report and in `compare` (docs/statistics.md)."""
    return "Verdicts: " + "; ".join(f"{words}: {meaning}" for words, meaning in meanings(settings.threshold).items())


def comparisons_at(analysis: Analysis) -> int:
    """The largest Holm family: the variants a point compares with the baseline, or with correction: sweep
    those of every point of a workload together."""
    sizes: dict[tuple[str, int | None], int] = {}
    for p in analysis.points:
        key = (p.workload, None if analysis.definition.correction == "sweep" else p.threads)
        sizes[key] = sizes.get(key, 0) + sum(1 for v in p.variants if v.variant != analysis.baseline)
    return max(sizes.values(), default=1)


def rule(analysis: Analysis) -> str:
    s, family = analysis.settings, max(1, comparisons_at(analysis))
    if s.estimator != "paired":
        text = rule_text(comparisons=family, alpha=s.alpha, min_runs=s.min_runs)
    else:
        text = paired_rule_text(comparisons=family, alpha=s.alpha, min_runs=s.min_runs)
    if not analysis.definition.estimates_only:
        return text
    return (f"Estimates only (estimates_only: true): the campaign asked for estimates, not verdicts, so a comparison "
            f"its rounds cannot decide is no failure of the plan. {text}")


def verdict_notes(analysis: Analysis) -> list[str]:
    """Why verdicts say what they do: undecided on a busy machine, and where an interval and its test disagree."""
    return busy_undecided_notes(analysis) + [
        f"`{v.variant}`, {point_title(point)}, {analysis.metric_label(metric)}: {note}"
        for point in analysis.points for v in point.variants for metric, c in v.comparisons.items()
        for note in c.verdict.warnings]


def workload_line(analysis: Analysis, w: WorkloadRecord) -> str:
    d = analysis.definition
    threads = "/".join(str(t) for t in w.threads)
    return (f"Workload `{w.name}`: {w.tool or 'sysbench'} {w.test}, {dataset_text(analysis, w)}, threads {threads}, "
            f"{w.duration} s after {w.warmup} s warm-up, {repetitions_text(d.repetitions)}, order {d.order}"
            f"{buffer_pool_note(analysis, w)}")


def dataset_text(analysis: Analysis, w: WorkloadRecord) -> str:
    """Rows of a built-in test; for a script of the user's, what its runs recorded its prepare got (it makes
    tables of its own, and gets --tables/--table-size only where it declares them)."""
    if w.tool == "pgbench":
        return f"scale {w.scale or 1} ({(w.scale or 1) * 100_000:,} accounts rows)"
    if not (w.test.endswith(".lua") or "/" in w.test):
        return f"{w.tables} x {w.table_size} rows"
    said = next((r.facts.reset.document.get("dataset") for r in analysis.runs
                 if r.workload == w.name and r.facts.reset and isinstance(r.facts.reset.document.get("dataset"), str)),
                None)
    return str(said) if said else "a dataset of its own"


def repetitions_text(value: int | AdaptiveRepetitions) -> str:
    if isinstance(value, AdaptiveRepetitions):
        return f"adaptive repetitions ({value.rounds_min} to {value.rounds_max} rounds)"
    return f"{value} repetitions"


def buffer_pool_note(analysis: Analysis, workload: WorkloadRecord) -> str:
    """The buffer pool sized from the data, as it was applied (workload `buffer_pool`)."""
    if not workload.buffer_pool:
        return ""
    run = next((r for r in analysis.runs if r.workload == workload.name and r.facts.data_bytes), None)
    if run is None or run.facts.data_bytes is None:
        return f"; buffer pool {workload.buffer_pool} of the data"
    env = run.facts.environment
    pool = env.server_variables.get("innodb_buffer_pool_size") if env else None
    applied = f" = {byte_text(int(pool), 'MiB', '.0f')}" if pool else ""
    return f"; buffer pool {workload.buffer_pool} of {byte_text(run.facts.data_bytes, 'MiB', '.0f')} of data{applied}"
