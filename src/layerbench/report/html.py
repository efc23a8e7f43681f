"""The HTML report: ONE self-contained file (styles and plotly.js inlined, no network needed to open it), in the
order a reader needs it: the answer, warnings, runs, the latency distribution, time series, sweeps, overhead, ladder,
price, environment, the campaign as run, the run table."""

from __future__ import annotations

import html
from typing import Any

import yaml
from plotly.offline import get_plotlyjs

from layerbench.analysis.aggregate import Analysis
from layerbench.analysis.busy import REPLACED_COLUMNS, REPLACED_INTRO, REPLACED_TITLE
from layerbench.analysis.datasets import DATA_COLUMNS
from layerbench.analysis.latency import SHOWN, point_title
from layerbench.analysis.report_model import AnswerRow, Report, as_report
from layerbench.analysis.stats import Comparison
from layerbench.report import charts, evidence, io_table, neighbours
from layerbench.report.text import fmt, run_numbers, window_text
from layerbench.sysbench.histogram import percentile_key

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:24px;
color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:0}h2{border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:2em}
table{border-collapse:collapse;margin:12px 0;font-size:.9em}td,th{border:1px solid #ddd;padding:4px 8px}
th{background:#f5f5f5;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{font-weight:600;padding:1px 6px;border-radius:3px}.slower{background:#fde2e1;color:#a61b1b}
.faster{background:#dff3e3;color:#1b6b2f}
.slower-maybe{background:#fff;color:#a61b1b;border:1px dashed #a61b1b}.faster-maybe{background:#fff;color:#1b6b2f;
border:1px dashed #1b6b2f}.noise,.same{background:#eef;color:#333}.need{background:#fff4d6}
.ci{position:relative;width:220px;height:14px;background:#f3f3f3}.ci span{position:absolute;top:2px;height:10px;
background:#888}.ci i{position:absolute;top:0;width:1px;height:14px;background:#000}
.warn li{color:#8a4b00}.muted{color:#777}pre{background:#f7f7f7;padding:10px;overflow:auto;font-size:.85em}
"""

KIND_CLASS = {"slower": "slower", "faster": "faster", "slower?": "slower-maybe", "faster?": "faster-maybe",
              "within noise": "noise", "~": "same",
              "need more runs": "need", "-": "need"}


def esc(value: Any) -> str:
    return html.escape(str(value))


def table(header: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td class='num'>{c}</td>" if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def ci_bar(found: Comparison | None, scale: float = 0.5) -> str:
    """The delta's CI as a small bar around 0 (the black tick); ±scale fills the box."""
    if not found or not found.delta or evidence.single(found):
        return ""
    def pos(x: float) -> float:
        return max(0.0, min(100.0, 50 + x / scale * 50))
    low, high = pos(found.delta.low), pos(found.delta.high)
    return (f"<div class='ci' title='interval {found.delta.low * 100:+.1f} % to {found.delta.high * 100:+.1f} %'>"
            f"<i style='left:50%'></i><span style='left:{low:.1f}%;width:{max(high - low, 0.5):.1f}%'></span></div>")


def chart(fig: Any, name: str) -> str:
    if fig is None:
        return ""
    return f"<div class='lb-chart' data-chart='{esc(name)}'>" + fig.to_html(
        full_html=False, include_plotlyjs=False, config={"displaylogo": False, "responsive": True}) + "</div>"


def answer_row(a: AnswerRow) -> list[str]:
    kind = evidence.verdict_word(a.tps)
    return [f"<b>{esc(a.variant)}</b>", esc(a.point),
            f"<span class='verdict {KIND_CLASS.get(kind, 'need')}'>{esc(kind)}</span>",
            esc(evidence.evidence_with_note(a.tps)), ci_bar(a.tps),
            esc(f"{evidence.verdict_word(a.latency)}: {evidence.evidence_with_note(a.latency)}" if a.latency else
                a.latency_note or "-")]


def answer(report: Report) -> str:
    analysis = report.analysis
    rows = [answer_row(a) for a in report.answer]
    method = report.method.replace("`", "")
    intro = (f"<p>{esc(method)} The bar: the interval, ±50 % full width, tick at 0.</p>"
             f"<p>{esc(report.rule)}</p>")
    if not rows:
        return "<h2>The answer</h2>" + intro + f"<p>{esc(analysis.nothing_to_compare())}</p>"
    header = ["variant", "point", "TPS verdict", "TPS delta [CI] (p, n)", "CI",
              f"{analysis.metric_label('lat_pct_ms')}: verdict, delta [CI] (p, n)"]
    notes = "".join(f"<li>{esc(note)}</li>" for note in report.verdict_notes)
    return ("<h2>The answer</h2>" + intro + table(header, rows)
            + f"<p class='muted'>{esc(report.legend)}</p>" + (f"<ul class='warn'>{notes}</ul>" if notes else ""))


def adaptive(report: Report) -> str:
    if report.adaptive is None:
        return ""
    said, decisions = report.adaptive
    rows = [[esc(cell) for cell in row] for row in decisions]
    return (f"<h2>Adaptive repetitions</h2><p>{esc(said)}</p>"
            + table(["point", "variant", "TPS verdict", "status"], rows))


def warnings(analysis: Analysis) -> str:
    if not analysis.warnings:
        return ""
    return "<h2>Warnings</h2><ul class='warn'>" + "".join(f"<li>{esc(w)}</li>" for w in analysis.warnings) + "</ul>"


def per_variant(analysis: Analysis) -> str:
    parts = ["<h2>Throughput and latency per variant</h2>"]
    for point in analysis.points:
        parts.append(chart(charts.runs_figure(analysis, point, "tps", "TPS"), f"tps-{point_title(point)}"))
        parts.append(chart(charts.runs_figure(analysis, point, "lat_pct_ms", analysis.metric_label("lat_pct_ms")),
                           f"latency-{point_title(point)}"))
        rows = [[esc(v.variant), str(s.n), fmt(s.mean), fmt(s.median), *evidence.summary_cells(s, fmt)]
                for v in point.variants if (s := v.summaries.get("tps"))]
        parts.append(table(["variant", "n", "mean TPS", "median", "sd", "CV", "95 % CI"], rows, {1, 2, 3, 4, 5}))
    return "".join(parts)


def latency_distribution(report: Report) -> str:
    """p50 ... max of the measured window per variant (median over runs), and the other percentiles compared."""
    rows = report.distribution
    keys = [percentile_key(p) for p in SHOWN]
    body = [[esc(r.variant), esc(r.point), str(r.runs), *[fmt(r.median_ms.get(k)) for k in keys]] for r in rows]
    parts = [table(["variant", "point", "runs", *[f"{k} (ms)" for k in keys]], body, set(range(2, 3 + len(keys))))
             if body else "<p class='muted'>These runs recorded no latency distribution (imported, or measured "
             "before layerbench recorded it).</p>"]
    found = [[esc(c.variant), esc(c.point), esc(c.label), esc(evidence.verdict_word(c.comparison)),
              esc(evidence.evidence_with_note(c.comparison))] for c in report.percentiles]
    if found:
        parts.append(table(["variant", "point", "metric", "verdict", "delta [CI] (p, n)"], found))
    parts += [f"<p class='warn'>{esc(m)}</p>" for m in report.missing_percentiles]
    return ("<h2>Latency distribution</h2><p>Percentiles of each run's measured window (sysbench's histogram, one "
            "bucket of resolution, about 1.8 %; max exact), median over the runs.</p>" + "".join(parts))


def overhead(report: Report) -> str:
    rows = report.overhead
    if not rows:
        return ("<h2>Where the overhead went</h2><p class='muted'>No resource samples were recorded for these "
                "runs.</p>")
    components = list(report.overhead_components)
    body = [[esc(r.variant), esc(r.point), *[fmt(r.cpu_per_1000_tx.get(c), 3) for c in components],
             "-" if r.throttled_share is None else f"{r.throttled_share * 100:.0f} %", fmt(r.throttled_seconds)]
            for r in rows]
    header = ["variant", "point", *components, "throttled periods", "throttled s / run"]
    return ("<h2>Where the overhead went</h2><p>CPU seconds per 1,000 transactions by component (mean of runs), "
            "and cgroup CPU throttling.</p>" + chart(charts.overhead_figure(rows, components), "overhead")
            + table(header, body, set(range(2, len(header)))))


def io_section(report: Report) -> str:
    """Where the I/O went, right after the CPU attribution (report/io_table.py)."""
    rows = list(report.io)
    if not rows:
        return ""
    parts = [f"<h2>{io_table.TITLE}</h2><p>{esc(io_table.INTRO)}</p>"]
    for t in (io_table.server_table(rows, code=""), io_table.component_table(rows, code="")):
        if t.rows:
            parts.append(table(t.header, [[esc(c) for c in row] for row in t.rows],
                               set(range(t.text_columns, len(t.header)))))
    parts += [f"<p class='warn'>{esc(w)}</p>" for r in rows for w in r.warnings]
    parts += [f"<p class='muted'>{esc(n)}</p>" for n in report.io_notes]
    return "".join(parts)


def price(report: Report) -> str:
    rows = report.price
    if not rows:
        return ""
    body = table(["variant", "cost / month", "mean TPS", "TPS per unit", "cost of the baseline's TPS"],
                 [[esc(r.variant), fmt(r.cost_per_month), fmt(r.mean_tps), fmt(r.tps_per_cost, 3),
                   fmt(r.cost_for_baseline_tps)] for r in rows], {1, 2, 3, 4})
    return "<h2>Price-performance</h2>" + chart(charts.price_figure(report), "price") + body


def environment(report: Report) -> str:
    analysis = report.analysis
    parts = ["<h2>Environment and fairness</h2>"]
    env = analysis.environments.get(analysis.baseline)
    facts = {**env.host.all, **{f"storage {k}": v for k, v in env.storage.items()}, **env.tuning} if env else {}
    if facts:
        parts.append(table(["fact (baseline)", "value"], [[esc(k), esc(v)] for k, v in facts.items()]))
    parts.append(dataset_table(report))
    if report.differences:
        parts.append("<ul class='warn'>" + "".join(f"<li>{esc(d)}</li>" for d in report.differences) + "</ul>")
    else:
        parts.append("<p>No difference between the variants' servers or machines beyond what the campaign asked "
                     "for.</p>")
    return "".join(parts)


def dataset_table(report: Report) -> str:
    """Per variant: restore path, verification, reset time, buffer pool at start, datadir storage."""
    rows = [[esc(d.variant), esc(d.restore), esc(d.verified), fmt(d.reset_seconds), esc(d.start_state), esc(d.storage)]
            for d in report.data]
    return table(list(DATA_COLUMNS), rows, {3}) if rows else ""


def campaign_as_run(analysis: Analysis) -> str:
    text = yaml.safe_dump(analysis.definition.to_json(), sort_keys=False)
    order = ", ".join(f"{(r.idx or 0) + 1}:{r.variant}" for r in sorted(analysis.runs, key=lambda r: r.idx or 0))
    return (f"<h2>The campaign as run</h2><pre>{esc(text)}</pre><p class='muted'>Schedule (run: variant): "
            f"{esc(order)}</p>")


def replaced(analysis: Analysis) -> str:
    """The runs replaced because the machine was busy, with why; nothing when there were none."""
    if not analysis.replaced:
        return ""
    return (f"<h2>{esc(REPLACED_TITLE)}</h2><p>{esc(REPLACED_INTRO)}</p>"
            + table(list(REPLACED_COLUMNS), [[esc(c) for c in r.cells()] for r in analysis.replaced]))


def run_table(analysis: Analysis) -> str:
    rows = []
    why = {r.run: r.status() for r in analysis.replaced}
    for r in analysis.runs:
        status = {"ok": "ok", "replaced": esc(why.get((r.idx or 0) + 1, "replaced"))}.get(
            r.status, f"failed: {esc(r.error or '')}")
        rows.append([str((r.idx or 0) + 1), esc(r.variant), esc(r.workload), str(r.threads), str(r.repetition),
                     *run_numbers(r, bool(analysis.run_percentiles)), esc(window_text(r)), status])
    header = ["#", "variant", "workload", "threads", "iteration", "total queries", "QPS", "TPS", "avg lat (ms)",
              f"p{analysis.percentile_label} lat (ms)", "steady window", "status"]
    return "<h2>Runs</h2>" + table(header, rows, {5, 6, 7, 8, 9})


def titled(title: str, body: str) -> str:
    return f"<h2>{esc(title)}</h2>{body}" if body else ""


def render(source: Analysis | Report) -> str:
    report = as_report(source)
    analysis = report.analysis
    state = "" if analysis.status in ("finished", "imported") else (
        f"<p class='warn'><b>This campaign is {esc(analysis.status)}</b>: {len(analysis.runs)} of "
        f"{analysis.planned_runs} runs are stored; everything below covers those only.</p>")
    sections = [
        f"<h1>{esc(analysis.name)}</h1><p class='muted'>layerbench campaign {analysis.campaign_id}, "
        f"{esc(analysis.status)}</p><p>{esc(analysis.definition.description or '')}</p>", state,
        answer(report), adaptive(report), warnings(analysis), replaced(analysis), per_variant(analysis),
        latency_distribution(report),
        "<h2>TPS over time</h2>" + chart(charts.timeline_figure(analysis), "timeline"),
        titled("Thread sweep", chart(charts.sweep_figure(report), "sweep")), overhead(report), io_section(report),
        neighbours.html_section(analysis),  # report/neighbours.py (#32)
        titled("Tuning ladder", chart(charts.ladder_figure(analysis), "ladder")), price(report),
        environment(report),
        campaign_as_run(analysis), run_table(analysis),
    ]
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{esc(analysis.name)} - layerbench"
            f"</title><style>{STYLE}</style><script>{get_plotlyjs()}</script></head><body>"
            + "".join(sections) + "</body></html>")
