"""The Markdown report, in the shape published studies use: a per-run table and per-metric aggregates, and the
`compare` command's table; with the one pipe-table writer. Renders a Report (analysis/report_model.py) or a
CampaignComparison (analysis/cross_campaign.py); computes nothing."""

from __future__ import annotations

from layerbench.analysis.busy import REPLACED_COLUMNS, REPLACED_INTRO, REPLACED_TITLE
from layerbench.analysis.cross_campaign import CampaignComparison
from layerbench.analysis.datasets import DATA_COLUMNS, storage_words
from layerbench.analysis.metrics import Metric
from layerbench.analysis.placement import PLACEMENT_COLUMNS
from layerbench.analysis.point_statistics import point_title
from layerbench.analysis.report_model import Report
from layerbench.analysis.runs import RunRow
from layerbench.report import evidence, io_table, neighbours, published
from layerbench.report.cells import fmt, pct, run_numbers, window_text
from layerbench.vocabulary.sizes import byte_text


def table(header: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    """A Markdown pipe table; `align`: one l or r per column (default: the first left, the rest right)."""
    align = align or "l" + "r" * (len(header) - 1)
    marks = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def heading(report: Report) -> list[str]:
    analysis, d = report.analysis, report.analysis.definition
    variants = ", ".join(f"`{v.name}` ({v.backend})" for v in d.variants)
    lines = [f"# layerbench report: {analysis.name} (campaign {analysis.campaign_id})", ""]
    if d.description:
        lines += [d.description.strip(), ""]
    lines += [f"- Status: {analysis.status}; runs stored: {len(analysis.runs)} of {analysis.planned_runs}",
              f"- Baseline: `{analysis.baseline}`; variants: {variants}"]
    if analysis.timing is not None:
        lines.append(f"- Time: {analysis.timing.text()}")
    if analysis.waiting is not None:
        lines.append(f"- Waited for quiet: {analysis.waiting.text()}")
    if d.imported_from:
        lines.append(f"- Imported from `{d.imported_from}`: results measured elsewhere, analysed here")
    lines += [f"- {line}" for line in (report.workloads if not d.imported_from else ())]
    return [*lines, ""]


def answer_section(report: Report) -> list[str]:
    """The question and the answer: per variant and point, each metric's verdict next to its evidence (the
    estimate, its interval, p and n per side), also when there are too few runs for a verdict."""
    analysis = report.analysis
    lines = ["## The answer", "", report.method, "", report.rule, ""]
    rows = [[f"`{a.variant}`", a.point, f"**{evidence.verdict_word(a.tps)}**", evidence.evidence_with_note(a.tps),
             a.latency_note or evidence.verdict_word(a.latency), evidence.evidence_with_note(a.latency)]
            for a in report.answer]
    if not rows:
        return [*lines, analysis.nothing_to_compare(), ""]
    label = analysis.metric_label(Metric.LAT_PCT)
    header = ["variant", "point", "TPS verdict", "TPS delta [CI] (p, n)", f"{label} verdict",
              f"{label} delta [CI] (p, n)"]
    notes = [f"- {note}" for note in report.verdict_notes]
    return [*lines, *table(header, rows, "llllll"), "", report.legend, "", *notes, *([""] if notes else [])]


def summary_section(report: Report) -> list[str]:
    lines = ["## TPS per variant (runs as the unit: mean of each run's steady window)", ""]
    rows = []
    for row in report.summary:
        s = row.summary
        sd, cv, ci = evidence.summary_cells(s, fmt)
        rows.append([f"`{row.variant}`", row.point, str(s.n), fmt(s.mean), fmt(s.median), sd, cv, fmt(s.min),
                     fmt(s.max), ci])
    header = ["variant", "point", "n", "mean", "median", "sd", "CV", "min", "max", "95 % CI of the mean"]
    return [*lines, *table(header, rows, "llrrrrrrrr"), ""]


def aggregate_section(report: Report) -> list[str]:
    analysis = report.analysis
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


def run_table(report: Report) -> list[str]:
    analysis = report.analysis
    header = ["#", "variant", "workload", "threads", "iteration", "total queries", "QPS", "TPS",
              "avg latency (ms)", analysis.metric_label(Metric.LAT_PCT), "steady window", "status"]
    why = {r.run: r.status() for r in analysis.replaced}
    tagged = bool(analysis.run_percentiles)
    rows = [run_cells(r, why.get((r.idx or 0) + 1, "replaced"), tagged) for r in analysis.runs]
    return ["## Runs", "", "QPS and TPS: mean over the run's steady window (after its warm-up, minus the MSER-5 "
            "transient); latency and total queries: as sysbench reported the measured run.", "",
            *table(header, rows, "lllrrrrrrrrl"), ""]


def run_cells(r: RunRow, replaced: str = "replaced", tagged: bool = False) -> list[str]:
    status = {"ok": "ok", "replaced": replaced.replace("|", "/")}.get(
        r.status, f"failed: {(r.error or '').replace('|', '/')[:120]}")
    return [str((r.idx or 0) + 1), r.variant, r.workload, str(r.threads), str(r.repetition), *run_numbers(r, tagged),
            window_text(r), status]


def adaptive_section(report: Report) -> list[str]:
    if report.adaptive is None:
        return []
    said, decisions = report.adaptive
    rows = [f"| {' | '.join(row)} |" for row in decisions]
    return ["## Adaptive repetitions", "", said, "", "| point | variant | TPS verdict | status |", "|---|---|---|---|",
            *rows, ""]


def warnings_section(report: Report) -> list[str]:
    if not report.warnings:
        return []
    return ["## Warnings", "", *[f"- {w}" for w in report.warnings], ""]


def replaced_section(report: Report) -> list[str]:
    """The runs replaced because the machine was busy, with why; nothing when there were none."""
    analysis = report.analysis
    if not analysis.replaced:
        return []
    rows = [[c.replace("|", "/") for c in r.cells()] for r in analysis.replaced]
    return [f"## {REPLACED_TITLE}", "", REPLACED_INTRO, "", *table(list(REPLACED_COLUMNS), rows, "llllll"), ""]


def environment_lines(report: Report) -> list[str]:
    analysis = report.analysis
    env = analysis.environments.get(analysis.baseline)
    if not env:
        return []
    host, storage, tuning, server = env.host, env.storage, env.tuning, env.server_variables
    facts = [
        ("machine", f"{host.cpu_model} x {host.cpu_count}, "
                    f"{byte_text(host.memory_bytes or 0, spec='.1f')}, kernel {host.kernel}"),
        ("software", f"{server.get('version_comment', 'server')} {server.get('version', '?')}, "
                     f"{host.all.get('client_tool') or host.sysbench_version}"),
        ("datadir storage", storage_words(storage) + (f", I/O scheduler {storage['io_scheduler']}"
                                                      if storage.get("io_scheduler") else "")),
        ("host tuning", ", ".join(f"{k} {v}" for k, v in tuning.items() if v is not None)),
    ]
    return ["Environment of the baseline's runs:", "",
            *table(["", ""], [[k, str(v).replace("|", "/")] for k, v in facts], "ll"), ""]


def dataset_lines(report: Report) -> list[str]:
    """Per variant: how its runs got their data and where the datadir lived (docs/datasets.md)."""
    rows = [[f"`{d.variant}`", d.restore, d.verified, fmt(d.reset_seconds), d.start_state, d.storage.replace("|", "/")]
            for d in report.data]
    return ["Data of each run (docs/datasets.md):", "", *table(list(DATA_COLUMNS), rows, "llrlll"), ""] if rows else []


def placement_lines(report: Report) -> list[str]:
    """Per variant: the nodes (as the cluster's API reported them) or hosts its server and client ran on, and the
    path sysbench took."""
    rows = [[f"`{p.variant}`", p.server_node, p.client_node, p.network_path, fmt(p.rtt_us)] for p in report.placement]
    return ["Where server and client ran (a cluster's nodes as its API reported them; the hosts of `hosts:`), and "
            "the path sysbench took:", "",
            *table(list(PLACEMENT_COLUMNS), rows, "llllr"), ""] if rows else []


def fairness_section(report: Report) -> list[str]:
    lines = ["## Environment and fairness", "", *environment_lines(report), *dataset_lines(report),
             *placement_lines(report)]
    if not report.differences:
        return [*lines, "No difference between the variants' servers or machines beyond what the campaign asked for.",
                ""]
    return [*lines, *[f"- {d}" for d in report.differences], ""]


def sweep_section(report: Report) -> list[str]:
    if not report.sweeps:
        return []
    analysis, lines = report.analysis, ["## Thread sweep", ""]
    for (workload, variant), rows in report.sweeps.items():
        lines += [f"`{variant}` vs `{analysis.baseline}`, {workload}", ""]
        header = ["threads", "baseline TPS", "variant TPS", "TPS delta", f"p{analysis.percentile_label} latency delta",
                  "verdict"]
        lines += table(header, [[str(r.threads), fmt(r.baseline_tps), fmt(r.variant_tps), pct(r.tps_delta_pct),
                                 pct(r.latency_delta_pct), f"{r.verdict}: {evidence.evidence_with_note(r.comparison)}"]
                                for r in rows],
                       "rrrrrl")
        lines.append("")
    return lines


def overhead_section(report: Report) -> list[str]:
    notes = [f"- {note}" for note in report.overhead_notes]
    if not report.overhead:
        return ["## Where the overhead went", "", *notes, ""] if notes else []
    components = list(report.overhead_components)
    lines = ["## Where the overhead went (CPU seconds per 1,000 transactions, mean of runs)", "", *notes,
             *([""] if notes else [])]
    header = ["variant", "point", *components, "throttled periods", "throttled s / run"]
    body = [[f"`{r.variant}`", r.point, *[fmt(r.cpu_per_1000_tx.get(c), 3) for c in components],
             "-" if r.throttled_share is None else f"{r.throttled_share * 100:.0f} %", fmt(r.throttled_seconds)]
            for r in report.overhead]
    return [*lines, *table(header, body, "ll" + "r" * (len(header) - 2)), ""]


def percentiles_section(report: Report) -> list[str]:
    """The comparisons at the other percentiles the campaign asked for, each against the same percentile."""
    if not report.percentiles and not report.missing_percentiles:
        return []
    lines = ["## Latency at other percentiles (compare_percentiles; each against the baseline's same percentile)", ""]
    rows = [[f"`{c.variant}`", c.point, c.label, f"**{evidence.verdict_word(c.comparison)}**",
             evidence.evidence_with_note(c.comparison)] for c in report.percentiles]
    if rows:
        lines += [*table(["variant", "point", "metric", "verdict", "delta [CI] (p, n)"], rows, "lllll"), ""]
    missing = report.missing_percentiles
    return [*lines, *[f"- {m}" for m in missing], *([""] if missing else [])]


def price_section(report: Report) -> list[str]:
    if not report.price:
        return []
    lines = ["## Price-performance (cost_per_month from the campaign; all thread counts pooled)", ""]
    lines += table(["variant", "cost / month", "mean TPS", "TPS per unit", "cost of the baseline's TPS"],
                   [[r.variant, fmt(r.cost_per_month), fmt(r.mean_tps), fmt(r.tps_per_cost, 3),
                     fmt(r.cost_for_baseline_tps)] for r in report.price])
    return [*lines, ""]


def io_section(report: Report) -> list[str]:
    """Where the I/O went: the server's InnoDB counters and the kernel's per component (report/io_table.py)."""
    rows = list(report.io)
    if not rows:
        return []
    lines = [f"## {io_table.TITLE} (per 1,000 transactions, mean of runs)", "", io_table.INTRO, ""]
    for t in (io_table.server_table(rows), io_table.component_table(rows)):
        if t.rows:
            lines += [*table(t.header, t.rows, "l" * t.text_columns + "r" * (len(t.header) - t.text_columns)), ""]
    said = [w for r in rows for w in r.warnings] + list(report.io_notes)
    return [*lines, *[f"- {w}" for w in said], *([""] if said else [])]


def render(report: Report) -> str:
    analysis = report.analysis
    lines = heading(report) + answer_section(report) + published.markdown_section(report)  # report/published.py
    lines += adaptive_section(report) + warnings_section(report)
    lines += replaced_section(report)
    lines += summary_section(report)
    lines += aggregate_section(report) + percentiles_section(report)
    lines += sweep_section(report) + overhead_section(report) + io_section(report) + price_section(report)
    lines += neighbours.markdown_section(report)  # report/neighbours.py (#32)
    lines += fairness_section(report) + run_table(report)
    lines.append(f"_Metrics: {', '.join(analysis.metric_label(m) for m in Metric)}. "
                 "Made by layerbench from the stored runs; `layerbench report` rebuilds it offline._")
    return "\n".join(lines) + "\n"


def render_comparison(found: CampaignComparison) -> str:
    """The `compare` command's table: B against A for every shared variant and point, then the legend."""
    body = [[f"`{r.variant}`", r.workload if r.threads is None else f"{r.workload}, {r.threads} thr",
             r.metric, fmt(r.mean_a), fmt(r.mean_b), r.comparison.verdict.kind, r.comparison.verdict.text]
            for r in found.rows]
    header = ["variant", "point", "metric", f"A ({found.a})", f"B ({found.b})", "verdict", "B vs A"]
    return "\n".join([*table(header, body, "lllrrll"), "", found.legend])
