"""Charts of a Report as Plotly figures (the HTML report inlines plotly.js once, so it opens offline)."""

from __future__ import annotations

import plotly.graph_objects as go

from layerbench.analysis.metrics import Metric
from layerbench.analysis.overhead import Overhead
from layerbench.analysis.point_statistics import Point
from layerbench.analysis.report_model import Report

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def colour(report: Report, variant: str) -> str:
    names = report.analysis.definition.variant_names
    index = names.index(variant) if variant in names else len(names)
    return PALETTE[index % len(PALETTE)]


def layout(fig: go.Figure, title: str, y: str, x: str = "") -> go.Figure:
    fig.update_layout(title=title, yaxis_title=y, xaxis_title=x, template="plotly_white", height=380,
                      margin={"l": 60, "r": 20, "t": 50, "b": 50}, legend={"orientation": "h", "y": -0.2})
    return fig


def runs_figure(report: Report, point: Point, metric: Metric) -> go.Figure:
    """Each run a point; the mean with its 95 % bootstrap CI as an error bar, per variant."""
    analysis, label = report.analysis, report.analysis.metric_label(metric)
    fig = go.Figure()
    for v in point.variants:
        values = [r.values[metric] for r in analysis.runs if r.variant == v.variant and r.workload == point.workload
                  and r.threads == point.threads and r.status == "ok" and r.values[metric] is not None]
        fig.add_trace(go.Box(y=values, name=v.variant, boxpoints="all", jitter=0.4, pointpos=0,
                             marker_color=colour(report, v.variant), line_color="rgba(0,0,0,0)",
                             fillcolor="rgba(0,0,0,0)", hoverinfo="y", showlegend=False))
        s = v.summaries.get(metric)
        if s:
            fig.add_trace(go.Scatter(x=[v.variant], y=[s.mean], mode="markers", marker_symbol="line-ew-open",
                                     marker={"size": 30, "color": "black", "line": {"width": 2}},
                                     error_y={"type": "data", "symmetric": False, "array": [s.ci_high - s.mean],
                                              "arrayminus": [s.mean - s.ci_low]},
                                     name="mean, 95 % CI", showlegend=False))
    return layout(fig, f"{label}: each run, mean and 95 % CI ({point.workload}, {point.threads} threads)", label)


def timeline_figure(report: Report) -> go.Figure:
    """TPS per interval of every run: warm-up shaded, the MSER-5 cut marked, unstable runs dashed."""
    analysis, fig = report.analysis, go.Figure()
    shown: set[str] = set()
    warmup = max((float(w.warmup) for w in analysis.definition.workloads), default=0.0)
    for r in analysis.runs:
        if not r.series:
            continue
        unstable = bool(r.window and r.window.unstable)
        fig.add_trace(go.Scatter(
            x=[t for t, _, _ in r.series], y=[tps for _, tps, _ in r.series], mode="lines",
            name=r.variant, legendgroup=r.variant, showlegend=r.variant not in shown, opacity=0.75,
            line={"color": colour(report, r.variant), "width": 1.2, "dash": "dash" if unstable else "solid"},
            hovertemplate=f"run {(r.idx or 0) + 1} {r.variant}" + "<br>%{x:.0f} s: %{y:,.0f} TPS<extra></extra>"))
        shown.add(r.variant)
    if warmup > 0:
        fig.add_vrect(x0=0, x1=warmup, fillcolor="grey", opacity=0.15, line_width=0, annotation_text="warm-up",
                      annotation_position="top left")
    return layout(fig, "TPS over time, every run (dashed: unstable)", "TPS", "seconds since start")


def sweep_figure(report: Report) -> go.Figure | None:
    analysis, tables = report.analysis, report.sweeps
    if not tables:
        return None
    fig = go.Figure()
    base_done: set[str] = set()
    for (workload, variant), rows in tables.items():
        if workload not in base_done:
            fig.add_trace(go.Scatter(x=[r.threads for r in rows], y=[r.baseline_tps for r in rows],
                                     mode="lines+markers", name=f"{analysis.baseline} ({workload})",
                                     line={"color": colour(report, analysis.baseline)}))
            base_done.add(workload)
        fig.add_trace(go.Scatter(x=[r.threads for r in rows], y=[r.variant_tps for r in rows], mode="lines+markers",
                                 name=f"{variant} ({workload})", line={"color": colour(report, variant)}))
    fig.update_xaxes(type="log")
    return layout(fig, "Thread sweep: TPS by thread count", "TPS", "threads")


def ladder_figure(report: Report) -> go.Figure | None:
    """Cumulative gain of each step when variants extend each other (a tuning ladder)."""
    analysis = report.analysis
    variants = analysis.definition.variants
    if not any(v.extends for v in variants) or not analysis.points:
        return None
    point = analysis.points[0]
    means = {v.variant: v.means.get(Metric.TPS) for v in point.variants}
    base = means.get(analysis.baseline)
    steps = [v.name for v in variants if means.get(v.name) is not None]
    if not base or len(steps) < 2:
        return None
    gains = [(means[s] / base - 1) * 100 for s in steps]  # type: ignore[operator]
    fig = go.Figure(go.Scatter(x=steps, y=gains, mode="lines+markers+text", line_shape="hv",
                               text=[f"{g:+.1f} %" for g in gains], textposition="top center"))
    return layout(fig, f"Tuning ladder: cumulative TPS gain over {analysis.baseline} ({point.workload})",
                  "gain (%)", "step")


def price_figure(report: Report) -> go.Figure | None:
    rows = report.price
    if not rows:
        return None
    fig = go.Figure(go.Bar(x=[r.variant for r in rows], y=[r.tps_per_cost for r in rows],
                           marker_color=[colour(report, r.variant) for r in rows]))
    return layout(fig, "Price-performance: TPS per currency unit per month", "TPS per unit")


def overhead_figure(rows: tuple[Overhead, ...], components: list[str]) -> go.Figure | None:
    """Stacked CPU seconds per 1,000 transactions by component, one bar per variant and point."""
    if not rows:
        return None
    labels = [f"{r.variant} ({r.point})" for r in rows]
    fig = go.Figure([go.Bar(name=c, x=labels, y=[r.cpu_per_1000_tx.get(c, 0.0) for r in rows]) for c in components])
    fig.update_layout(barmode="stack")
    return layout(fig, "Where the CPU went: seconds per 1,000 transactions", "CPU s / 1,000 tx")
