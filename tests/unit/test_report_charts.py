"""The HTML report's charts (report/charts.py) of a synthetic campaign: each run of a point is one dot of its
variant, with the variant's mean and 95 % interval beside them; a variant keeps its colour in every chart; the
timeline has one line per run; a chart with nothing to show is left out."""

from __future__ import annotations

from pathlib import Path

from helpers import fill_store
from layerbench.analysis.loading import analyze
from layerbench.analysis.metrics import Metric
from layerbench.analysis.report_model import Report, report_model
from layerbench.report.charts import PALETTE, colour, ladder_figure, overhead_figure, runs_figure, timeline_figure
from layerbench.store import Store


def report(tmp_path: Path) -> Report:
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "docker": 0.9}, reps=6)
    with Store(db) as store:
        return report_model(analyze(store, cid))


def test_each_run_is_a_dot_beside_its_variants_mean_and_interval(tmp_path: Path) -> None:
    rep = report(tmp_path)
    point = rep.analysis.points[0]
    fig = runs_figure(rep, point, Metric.TPS)
    for variant in point.variants:
        runs = sorted(r.values[Metric.TPS] for r in rep.analysis.runs if r.variant == variant.variant
                      and r.status == "ok" and r.values[Metric.TPS] is not None)
        dots = next(t for t in fig.data if t.type == "box" and t.name == variant.variant)
        assert sorted(dots.y) == runs and dots.marker.color == colour(rep, variant.variant)
        mean = next(t for t in fig.data if t.type == "scatter" and tuple(t.x) == (variant.variant,))
        summary = variant.summaries[Metric.TPS]
        assert mean.y == (summary.mean,)
        assert mean.error_y.array == (summary.ci_high - summary.mean,)
        assert mean.error_y.arrayminus == (summary.mean - summary.ci_low,)


def test_a_variant_keeps_its_colour_and_the_timeline_has_a_line_per_run(tmp_path: Path) -> None:
    rep = report(tmp_path)
    names = rep.analysis.definition.variant_names
    assert [colour(rep, name) for name in names] == PALETTE[:len(names)]
    lines = [t for t in timeline_figure(rep).data if t.type == "scatter"]
    assert len(lines) == sum(1 for r in rep.analysis.runs if r.series)
    assert {t.line.color for t in lines} == {colour(rep, name) for name in names}


def test_a_chart_with_nothing_to_show_is_left_out(tmp_path: Path) -> None:
    rep = report(tmp_path)
    assert ladder_figure(rep) is None  # no variant extends another
    assert overhead_figure((), ["server"]) is None
