"""The HTML report: ONE self-contained file (styles and plotly.js inlined, no network needed to open it), in the
order a reader needs it: the answer, warnings, runs, the latency distribution, time series, sweeps, overhead, ladder,
price, environment, the campaign as run, the run table. This module turns the Report into the values of each
section; the markup is in report/templates/ (Jinja2 with autoescape: every value is text unless marked as markup,
which only Plotly's chart HTML and the inlined plotly.js are)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from layerbench.analysis.busy import REPLACED_COLUMNS, REPLACED_INTRO, REPLACED_TITLE
from layerbench.analysis.datasets import DATA_COLUMNS
from layerbench.analysis.latency import SHOWN
from layerbench.analysis.metrics import Metric
from layerbench.analysis.placement import PLACEMENT_COLUMNS
from layerbench.analysis.point_statistics import point_title
from layerbench.analysis.report_model import AnswerRow, Report
from layerbench.analysis.stats import Comparison
from layerbench.report import charts, evidence, io_table, neighbours, published
from layerbench.report.cells import fmt, run_numbers, window_text
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

TEMPLATES = Environment(loader=PackageLoader("layerbench.report", "templates"), autoescape=True,
                        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
TEMPLATES.globals["zip"] = zip


@dataclass(frozen=True)
class Bold:
    text: str
    tag: str = "bold"


@dataclass(frozen=True)
class VerdictWord:
    kind: str
    css: str
    tag: str = "verdict"


@dataclass(frozen=True)
class Bar:
    """A delta's interval as a small bar around 0 (the black tick): left edge and width in % of the box."""

    left: float
    width: float
    title: str
    tag: str = "bar"


Cell = str | Bold | VerdictWord | Bar


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[Cell]]
    numeric: set[int] = field(default_factory=set)  # right-aligned columns

    @property
    def flags(self) -> list[bool]:
        """Per column: right-aligned (a number) or not."""
        return [i in self.numeric for i in range(len(self.header))]


@dataclass(frozen=True)
class Chart:
    name: str
    html: Markup  # Plotly's own HTML of the figure


def ci_bar(found: Comparison | None, scale: float = 0.5) -> Bar | str:
    """The delta's CI as a small bar around 0; ±scale fills the box."""
    if not found or not found.delta or evidence.single(found):
        return ""
    def pos(x: float) -> float:
        return max(0.0, min(100.0, 50 + x / scale * 50))
    low, high = pos(found.delta.low), pos(found.delta.high)
    return Bar(low, max(high - low, 0.5), f"interval {found.delta.low * 100:+.1f} % to {found.delta.high * 100:+.1f} %")


def chart(fig: Any, name: str) -> Chart | None:
    if fig is None:
        return None
    return Chart(name, Markup(fig.to_html(full_html=False, include_plotlyjs=False,
                                          config={"displaylogo": False, "responsive": True})))


def answer_row(a: AnswerRow) -> list[Cell]:
    kind = evidence.verdict_word(a.tps)
    return [Bold(a.variant), a.point, VerdictWord(kind, KIND_CLASS.get(kind, "need")),
            evidence.evidence_with_note(a.tps), ci_bar(a.tps),
            f"{evidence.verdict_word(a.latency)}: {evidence.evidence_with_note(a.latency)}" if a.latency else
            a.latency_note or "-"]


def answer(report: Report) -> dict[str, Any]:
    analysis = report.analysis
    header = ["variant", "point", "TPS verdict", "TPS delta [CI] (p, n)", "CI",
              f"{analysis.metric_label(Metric.LAT_PCT)}: verdict, delta [CI] (p, n)"]
    return {"method": report.method.replace("`", ""), "rule": report.rule, "legend": report.legend,
            "table": Table(header, [answer_row(a) for a in report.answer]), "notes": report.verdict_notes,
            "nothing": analysis.nothing_to_compare()}


def adaptive(report: Report) -> dict[str, Any] | None:
    if report.adaptive is None:
        return None
    said, decisions = report.adaptive
    return {"said": said, "table": Table(["point", "variant", "TPS verdict", "status"], [list(r) for r in decisions])}


def per_variant(report: Report) -> list[dict[str, Any]]:
    """Per point: each run's TPS and percentile latency as charts, and the TPS summary (the Report's rows)."""
    header = ["variant", "n", "mean TPS", "median", "sd", "CV", "95 % CI"]
    out = []
    for point in report.analysis.points:
        title = point_title(point)
        rows: list[list[Cell]] = [[r.variant, str(r.summary.n), fmt(r.summary.mean), fmt(r.summary.median),
                                   *evidence.summary_cells(r.summary, fmt)]
                                  for r in report.summary if r.where == (point.workload, point.threads)]
        out.append({"throughput": chart(charts.runs_figure(report, point, Metric.TPS), f"tps-{title}"),
                    "latency": chart(charts.runs_figure(report, point, Metric.LAT_PCT), f"latency-{title}"),
                    "table": Table(header, rows, {1, 2, 3, 4, 5})})
    return out


def latency_distribution(report: Report) -> dict[str, Any]:
    """p50 ... max of the measured window per variant (median over runs), and the other percentiles compared."""
    keys = [percentile_key(p) for p in SHOWN]
    body: list[list[Cell]] = [[r.variant, r.point, str(r.runs), *[fmt(r.median_ms.get(k)) for k in keys]]
                              for r in report.distribution]
    found: list[list[Cell]] = [[c.variant, c.point, c.label, evidence.verdict_word(c.comparison),
                                evidence.evidence_with_note(c.comparison)] for c in report.percentiles]
    return {"table": Table(["variant", "point", "runs", *[f"{k} (ms)" for k in keys]], body,
                           set(range(2, 3 + len(keys)))),
            "percentiles": Table(["variant", "point", "metric", "verdict", "delta [CI] (p, n)"], found),
            "missing": report.missing_percentiles}


def overhead(report: Report) -> dict[str, Any] | None:
    rows = report.overhead
    if not rows:
        return {"notes": report.overhead_notes} if report.overhead_notes else None
    components = list(report.overhead_components)
    body: list[list[Cell]] = [[r.variant, r.point, *[fmt(r.cpu_per_1000_tx.get(c), 3) for c in components],
                               "-" if r.throttled_share is None else f"{r.throttled_share * 100:.0f} %",
                               fmt(r.throttled_seconds)] for r in rows]
    header = ["variant", "point", *components, "throttled periods", "throttled s / run"]
    return {"chart": chart(charts.overhead_figure(rows, components), "overhead"),
            "table": Table(header, body, set(range(2, len(header)))), "notes": report.overhead_notes}


def io_section(report: Report) -> dict[str, Any] | None:
    """Where the I/O went, right after the CPU attribution (report/io_table.py)."""
    rows = list(report.io)
    if not rows:
        return None
    tables = [Table(t.header, list(t.rows), set(range(t.text_columns, len(t.header))))
              for t in (io_table.server_table(rows, code=""), io_table.component_table(rows, code="")) if t.rows]
    return {"title": io_table.TITLE, "intro": io_table.INTRO, "tables": tables,
            "warnings": [w for r in rows for w in r.warnings], "notes": report.io_notes}


def price(report: Report) -> dict[str, Any] | None:
    rows = report.price
    if not rows:
        return None
    body: list[list[Cell]] = [[r.variant, fmt(r.cost_per_month), fmt(r.mean_tps), fmt(r.tps_per_cost, 3),
                               fmt(r.cost_for_baseline_tps)] for r in rows]
    return {"chart": chart(charts.price_figure(report), "price"),
            "table": Table(["variant", "cost / month", "mean TPS", "TPS per unit", "cost of the baseline's TPS"],
                           body, {1, 2, 3, 4})}


def environment(report: Report) -> dict[str, Any]:
    """The baseline's machine facts, per variant its data (restore path, verification, reset time, buffer pool at
    start, datadir storage), and every unasked difference between the variants."""
    analysis = report.analysis
    env = analysis.environments.get(analysis.baseline)
    facts = {**env.host.all, **{f"storage {k}": v for k, v in env.storage.items()}, **env.tuning} if env else {}
    data: list[list[Cell]] = [[d.variant, d.restore, d.verified, fmt(d.reset_seconds), d.start_state, d.storage]
                              for d in report.data]
    placement: list[list[Cell]] = [[p.variant, p.server_node, p.client_node, p.network_path, fmt(p.rtt_us)]
                                   for p in report.placement]
    return {"facts": Table(["fact (baseline)", "value"], [[str(k), str(v)] for k, v in facts.items()]),
            "data": Table(list(DATA_COLUMNS), data, {3}), "differences": report.differences,
            "placement": Table(list(PLACEMENT_COLUMNS), placement, {4})}


def campaign_as_run(report: Report) -> dict[str, str]:
    analysis = report.analysis
    order = ", ".join(f"{(r.idx or 0) + 1}:{r.variant}" for r in sorted(analysis.runs, key=lambda r: r.idx or 0))
    return {"yaml": yaml.safe_dump(analysis.definition.to_json(), sort_keys=False), "order": order}


def replaced(report: Report) -> dict[str, Any] | None:
    """The runs replaced because the machine was busy, with why; nothing when there were none."""
    found = report.analysis.replaced
    if not found:
        return None
    return {"title": REPLACED_TITLE, "intro": REPLACED_INTRO,
            "table": Table(list(REPLACED_COLUMNS), [list(r.cells()) for r in found])}


def run_table(report: Report) -> Table:
    analysis = report.analysis
    why = {r.run: r.status() for r in analysis.replaced}
    rows: list[list[Cell]] = []
    for r in analysis.runs:
        status = {"ok": "ok", "replaced": why.get((r.idx or 0) + 1, "replaced")}.get(
            r.status, f"failed: {r.error or ''}")
        rows.append([str((r.idx or 0) + 1), r.variant, r.workload, str(r.threads), str(r.repetition),
                     *run_numbers(r, bool(analysis.run_percentiles)), window_text(r), status])
    header = ["#", "variant", "workload", "threads", "iteration", "total queries", "QPS", "TPS", "avg lat (ms)",
              f"p{analysis.percentile_label} lat (ms)", "steady window", "status"]
    return Table(header, rows, {5, 6, 7, 8, 9})


def render(report: Report) -> str:
    analysis = report.analysis
    return TEMPLATES.get_template("report.html").render(
        name=analysis.name, campaign_id=analysis.campaign_id, status=analysis.status,
        timing=analysis.timing.text() if analysis.timing else None,
        waiting=analysis.waiting.text() if analysis.waiting else None,
        description=analysis.definition.description or "", runs=len(analysis.runs),
        planned_runs=analysis.planned_runs, unfinished=analysis.status not in ("finished", "imported"),
        style=Markup(STYLE), plotly=Markup(get_plotlyjs()), answer=answer(report), adaptive=adaptive(report),
        warnings=report.warnings, replaced=replaced(report), per_variant=per_variant(report),
        distribution=latency_distribution(report), timeline=chart(charts.timeline_figure(report), "timeline"),
        sweep=chart(charts.sweep_figure(report), "sweep"), overhead=overhead(report), io=io_section(report),
        neighbours=neighbours.html_section(report),  # report/neighbours.py (#32)
        published=published.html_section(report),  # report/published.py
        ladder=chart(charts.ladder_figure(report), "ladder"), price=price(report), environment=environment(report),
        campaign=campaign_as_run(report), runs_table=run_table(report))
