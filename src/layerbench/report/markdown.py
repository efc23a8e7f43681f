"""The Markdown report, in the shape published studies use: a per-run table and per-metric aggregates."""

from __future__ import annotations

from layerbench.analysis.aggregate import (
    METRICS,
    Analysis,
    RunRow,
    overhead_rows,
    price_performance,
    sweeps,
)
from layerbench.analysis.compare import Settings
from layerbench.analysis.latency import missing_percentiles, percentile_comparisons, point_title
from layerbench.analysis.sequential import decision_rows, headline
from layerbench.analysis.stats import meanings
from layerbench.records import AdaptiveRepetitions, WorkloadRecord
from layerbench.report import evidence


def fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000 and digits <= 2:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f} %"


def table(header: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    align = align or "l" + "r" * (len(header) - 1)
    marks = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def heading(analysis: Analysis) -> list[str]:
    d = analysis.definition
    variants = ", ".join(f"`{v.name}` ({v.backend})" for v in d.variants)
    lines = [f"# layerbench report: {analysis.name} (campaign {analysis.campaign_id})", ""]
    if d.description:
        lines += [d.description.strip(), ""]
    lines += [f"- Status: {analysis.status}; runs stored: {len(analysis.runs)} of {analysis.planned_runs}",
              f"- Baseline: `{analysis.baseline}`; variants: {variants}"]
    if d.imported_from:
        lines.append(f"- Imported from `{d.imported_from}`: results measured elsewhere, analysed here")
    for w in d.workloads if not d.imported_from else ():
        threads = "/".join(str(t) for t in w.threads)
        lines.append(f"- Workload `{w.name}`: sysbench {w.test}, {w.tables} x {w.table_size} rows, "
                     f"threads {threads}, {w.duration} s after {w.warmup} s warm-up, "
                     f"{repetitions_text(d.repetitions)}, order {d.order}{buffer_pool_note(analysis, w)}")
    return [*lines, ""]


def buffer_pool_note(analysis: Analysis, workload: WorkloadRecord) -> str:
    """The buffer pool sized from the data, as it was applied (workload `buffer_pool`)."""
    if not workload.buffer_pool:
        return ""
    run = next((r for r in analysis.runs if r.workload == workload.name and r.facts.data_bytes), None)
    if run is None or run.facts.data_bytes is None:
        return f"; buffer pool {workload.buffer_pool} of the data"
    size = run.facts.data_bytes / 2**20
    env = run.facts.environment
    pool = env.server_variables.get("innodb_buffer_pool_size") if env else None
    applied = f" = {int(pool) / 2**20:.0f} MiB" if pool else ""
    return f"; buffer pool {workload.buffer_pool} of {size:.0f} MiB of data{applied}"


def method_line(analysis: Analysis) -> str:
    """How the answer was computed, in one sentence (shared by the Markdown and HTML reports)."""
    s = analysis.settings
    return (f"Each variant against `{analysis.baseline}`: delta = Hodges-Lehmann ratio - 1 (median of the pairwise "
            f"ratios variant/baseline) with its {(1 - s.alpha) * 100:g} % interval from the exact Mann-Whitney test, "
            f"p Holm-corrected across the variants, noise threshold ±{s.threshold * 100:g} %, alpha {s.alpha:g}.")


def legend(settings: Settings) -> str:
    """The verdict words, the same in every report and in `compare` (docs/statistics.md)."""
    return "Verdicts: " + "; ".join(f"{words}: {meaning}" for words, meaning in meanings(settings.threshold).items())


def verdict_notes(analysis: Analysis) -> list[str]:
    """Where a verdict's interval and test say different things, and why."""
    return [f"`{v.variant}`, {point_title(point)}, {analysis.metric_label(metric)}: {note}"
            for point in analysis.points for v in point.variants for metric, c in v.comparisons.items()
            for note in c.verdict.warnings]


def answer_section(analysis: Analysis) -> list[str]:
    """The question and the answer: per variant and point, each metric's verdict next to its evidence (the
    estimate, its interval, p and n per side), also when there are too few runs for a verdict."""
    lines = ["## The answer", "", method_line(analysis), "", evidence.rule(analysis), ""]
    rows = []
    for point in analysis.points:
        for v in point.variants:
            if v.variant == analysis.baseline:
                continue
            tps, lat = v.verdict("tps"), v.verdict("lat_pct_ms")
            rows.append([f"`{v.variant}`", point_title(point), f"**{evidence.verdict_word(tps)}**",
                         evidence.evidence_with_note(tps), evidence.verdict_word(lat),
                         evidence.evidence_with_note(lat)])
    if not rows:
        return [*lines, analysis.nothing_to_compare(), ""]
    label = analysis.metric_label("lat_pct_ms")
    header = ["variant", "point", "TPS verdict", "TPS delta [CI] (p, n)", f"{label} verdict",
              f"{label} delta [CI] (p, n)"]
    notes = [f"- {note}" for note in verdict_notes(analysis)]
    return [*lines, *table(header, rows, "llllll"), "", legend(analysis.settings), "", *notes, *([""] if notes else [])]


def summary_section(analysis: Analysis) -> list[str]:
    lines = ["## TPS per variant (runs as the unit: mean of each run's steady window)", ""]
    rows = []
    for point in analysis.points:
        for v in point.variants:
            s = v.summaries.get("tps")
            if s:
                sd, cv, ci = evidence.summary_cells(s, fmt)
                rows.append([f"`{v.variant}`", point_title(point), str(s.n), fmt(s.mean), fmt(s.median), sd, cv,
                             fmt(s.min), fmt(s.max), ci])
    header = ["variant", "point", "n", "mean", "median", "sd", "CV", "min", "max", "95 % CI of the mean"]
    return [*lines, *table(header, rows, "llrrrrrrrr"), ""]


def aggregate_section(analysis: Analysis) -> list[str]:
    lines = ["## Aggregated results (mean of successful runs; deviation from the baseline, as published studies "
             "print it)", ""]
    for point in analysis.points:
        lines += [f"### {point_title(point)}", ""]
        base = next((v for v in point.variants if v.variant == analysis.baseline), None)
        for variant in point.variants:
            if variant.variant == analysis.baseline:
                continue
            rows = [[analysis.metric_label(d.metric), fmt(d.baseline_mean), fmt(d.variant_mean), pct(d.deviation_pct)]
                    for d in variant.deltas]
            n_base = base.n if base else 0
            lines += [f"`{variant.variant}` vs `{analysis.baseline}` (n = {variant.n} vs {n_base})", ""]
            lines += table(["metric", "baseline mean", "variant mean", "deviation"], rows)
            lines.append("")
        if len(point.variants) == 1:
            lines += ["Only the baseline was measured at this point.", ""]
    return lines


def run_table(analysis: Analysis) -> list[str]:
    header = ["#", "variant", "workload", "threads", "iteration", "total queries", "QPS", "TPS",
              "avg latency (ms)", f"p{analysis.percentile} latency (ms)", "steady window", "status"]
    rows = [run_cells(r) for r in analysis.runs]
    return ["## Runs", "", "QPS and TPS: mean over the run's steady window (after its warm-up, minus the MSER-5 "
            "transient); latency and total queries: as sysbench reported the measured run.", "",
            *table(header, rows, "lllrrrrrrrrl"), ""]


def window_text(r: RunRow) -> str:
    w = r.window
    if w is None or w.steady is None:
        return "-"
    flags = ("" if w.steady.steady else " no steady state") + (f" unstable {w.swing:.2f}x" if w.unstable else "")
    return f"{w.steady.kept} of {w.steady.n} s" + flags


def run_cells(r: RunRow) -> list[str]:
    v = r.values
    status = "ok" if r.status == "ok" else f"failed: {(r.error or '').replace('|', '/')[:120]}"
    return [str((r.idx or 0) + 1), r.variant, r.workload, str(r.threads), str(r.repetition),
            fmt(v["queries"], 0), fmt(v["qps"]), fmt(v["tps"]), fmt(v["lat_avg_ms"]), fmt(v["lat_pct_ms"]),
            window_text(r), status]


def repetitions_text(value: int | AdaptiveRepetitions) -> str:
    if isinstance(value, AdaptiveRepetitions):
        return f"adaptive repetitions ({value.rounds_min} to {value.rounds_max} rounds)"
    return f"{value} repetitions"


def adaptive_section(analysis: Analysis) -> list[str]:
    state = analysis.adaptive
    if state is None:
        return []
    rows = [f"| {' | '.join(row)} |" for row in decision_rows(state)]
    return ["## Adaptive repetitions", "", headline(state), "",
            "| point | variant | TPS verdict | status |", "|---|---|---|---|", *rows, ""]


def warnings_section(analysis: Analysis) -> list[str]:
    if not analysis.warnings:
        return []
    return ["## Warnings", "", *[f"- {w}" for w in analysis.warnings], ""]


def environment_lines(analysis: Analysis) -> list[str]:
    env = analysis.environments.get(analysis.baseline)
    if not env:
        return []
    host, storage, tuning, server = env.host, env.storage, env.tuning, env.server_variables
    facts = [
        ("machine", f"{host.cpu_model} x {host.cpu_count}, "
                    f"{(host.memory_bytes or 0) / 2**30:.1f} GiB, kernel {host.kernel}"),
        ("software", f"{server.get('version_comment', 'server')} {server.get('version', '?')}, "
                     f"{host.sysbench_version}"),
        ("datadir storage", f"{storage.get('fstype')} on {storage.get('device')} ({storage.get('options')}), "
                            f"I/O scheduler {storage.get('io_scheduler')}"),
        ("host tuning", ", ".join(f"{k} {v}" for k, v in tuning.items() if v is not None)),
    ]
    return ["Environment of the baseline's runs:", "",
            *table(["", ""], [[k, str(v).replace("|", "/")] for k, v in facts], "ll"), ""]


def fairness_section(analysis: Analysis) -> list[str]:
    lines = ["## Environment and fairness", "", *environment_lines(analysis)]
    if not analysis.differences:
        return [*lines, "No difference between the variants' servers or machines beyond what the campaign asked for.",
                ""]
    return [*lines, *[f"- {d.text(analysis.baseline)}" for d in analysis.differences], ""]


def sweep_section(analysis: Analysis) -> list[str]:
    tables = sweeps(analysis)
    if not tables:
        return []
    lines = ["## Thread sweep", ""]
    for (workload, variant), rows in tables.items():
        lines += [f"`{variant}` vs `{analysis.baseline}`, {workload}", ""]
        header = ["threads", "baseline TPS", "variant TPS", "TPS delta", f"p{analysis.percentile} latency delta",
                  "verdict"]
        lines += table(header, [[str(r.threads), fmt(r.baseline_tps), fmt(r.variant_tps), pct(r.tps_delta_pct),
                                 pct(r.latency_delta_pct), f"{r.verdict}: {evidence.evidence_with_note(r.comparison)}"]
                                for r in rows],
                       "rrrrrl")
        lines.append("")
    return lines


def overhead_section(analysis: Analysis) -> list[str]:
    rows = overhead_rows(analysis)
    if not rows:
        return []
    components = sorted({c for r in rows for c in r.cpu_per_1000_tx}, key=lambda c: (c == "other", c))
    lines = ["## Where the overhead went (CPU seconds per 1,000 transactions, mean of runs)", ""]
    header = ["variant", "point", *components, "throttled periods", "throttled s / run"]
    body = [[f"`{r.variant}`", r.point, *[fmt(r.cpu_per_1000_tx.get(c), 3) for c in components],
             "-" if r.throttled_share is None else f"{r.throttled_share * 100:.0f} %", fmt(r.throttled_seconds)]
            for r in rows]
    return [*lines, *table(header, body, "ll" + "r" * (len(header) - 2)), ""]


def percentiles_section(analysis: Analysis) -> list[str]:
    """The comparisons at the other percentiles the campaign asked for, each against the same percentile."""
    found, missing = percentile_comparisons(analysis), missing_percentiles(analysis)
    if not found and not missing:
        return []
    lines = ["## Latency at other percentiles (compare_percentiles; each against the baseline's same percentile)", ""]
    rows = [[f"`{c.variant}`", c.point, c.label, f"**{evidence.verdict_word(c.comparison)}**",
             evidence.evidence_with_note(c.comparison)] for c in found]
    if rows:
        lines += [*table(["variant", "point", "metric", "verdict", "delta [CI] (p, n)"], rows, "lllll"), ""]
    return [*lines, *[f"- {m}" for m in missing], *([""] if missing else [])]


def price_section(analysis: Analysis) -> list[str]:
    rows = price_performance(analysis)
    if not rows:
        return []
    lines = ["## Price-performance (cost_per_month from the campaign; all thread counts pooled)", ""]
    lines += table(["variant", "cost / month", "mean TPS", "TPS per unit", "cost of the baseline's TPS"],
                   [[r.variant, fmt(r.cost_per_month), fmt(r.mean_tps), fmt(r.tps_per_cost, 3),
                     fmt(r.cost_for_baseline_tps)] for r in rows])
    return [*lines, ""]


def render(analysis: Analysis) -> str:
    lines = heading(analysis) + answer_section(analysis) + adaptive_section(analysis) + warnings_section(analysis)
    lines += summary_section(analysis)
    lines += aggregate_section(analysis) + percentiles_section(analysis)
    lines += sweep_section(analysis) + overhead_section(analysis) + price_section(analysis)
    lines += fairness_section(analysis) + run_table(analysis)
    lines.append(f"_Metrics: {', '.join(analysis.metric_label(m) for m in METRICS)}. "
                 "Made by layerbench from the stored runs; `layerbench report` rebuilds it offline._")
    return "\n".join(lines) + "\n"
