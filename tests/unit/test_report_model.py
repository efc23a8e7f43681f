"""One report model, rendered (#28 item 4): the formats render the Report and compute no table of their own, the
metrics are one enum, and the HTML escapes every value (Jinja2 autoescape)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from helpers import fill_store
from layerbench.analysis.cross_campaign import campaign_comparison
from layerbench.analysis.loading import analyze
from layerbench.analysis.metrics import Metric
from layerbench.analysis.report_model import Report, report_model
from layerbench.analysis.stats import Summary
from layerbench.report import html, markdown
from layerbench.store import Store

REPORT = Path(__file__).resolve().parents[2] / "src" / "layerbench" / "report"


def model(tmp_path: Path, extra: dict | None = None, **variants: float) -> Report:
    db = tmp_path / "lb.db"
    cid = fill_store(db, variants or {"host": 1.0, "docker": 0.9}, reps=6, extra=extra)
    with Store(db) as store:
        return report_model(analyze(store, cid))


def test_a_metric_is_its_stored_key_with_its_label_unit_and_direction() -> None:
    assert [str(m) for m in Metric] == ["queries", "qps", "tps", "lat_avg_ms", "lat_pct_ms"]
    assert {"tps": 1}[Metric.TPS] == 1 and Metric("lat_pct_ms") is Metric.LAT_PCT
    assert Metric.LAT_PCT.labelled("99") == "p99 latency (ms)" and Metric.TPS.unit == "transactions/s"
    assert Metric.TPS.higher_is_better and not Metric.LAT_AVG.higher_is_better


def test_no_renderer_takes_an_analysis() -> None:
    """Every function of report/ takes the Report (or parts of it), never the Analysis it was made from."""
    found = []
    for path in REPORT.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                found += [f"{path.name}:{node.name}" for a in args
                          if a.annotation is not None and "Analysis" in ast.unparse(a.annotation)]
    assert found == []


def test_markdown_and_html_show_the_one_summary_table_of_the_report(tmp_path: Path) -> None:
    """A summary row changed in the model shows in both formats: neither builds the TPS table itself."""
    report = model(tmp_path)
    first = report.summary[0]
    odd = Summary(first.summary.n, 1234567.0, 7654321.0, 1.0, 0.001, 1.0, 2.0, 3.0, 4.0)
    changed = dataclasses.replace(report, summary=(dataclasses.replace(first, summary=odd), *report.summary[1:]))
    assert "1,234,567" in markdown.render(changed) and "7,654,321" in markdown.render(changed)
    assert "1,234,567" in html.render(changed) and "7,654,321" in html.render(changed)
    assert "1,234,567" not in markdown.render(report)


def test_the_html_escapes_what_a_campaign_says(tmp_path: Path) -> None:
    """The description is free text of the user's: markup in it is shown as text, never run."""
    said = "<script>alert('x')</script> & <b>bold</b>"
    page = html.render(model(tmp_path, {"description": said}))
    assert "<script>alert(" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in page


def test_the_compare_command_renders_its_model(tmp_path: Path) -> None:
    db = tmp_path / "lb.db"
    first = fill_store(db, {"host": 1.0, "docker": 0.9}, reps=6, seed=1)
    second = fill_store(db, {"host": 1.0, "docker": 0.8}, reps=6, seed=2)
    with Store(db) as store:
        found = campaign_comparison(analyze(store, first), analyze(store, second))
    assert (found.a, found.b) == (first, second) and found.legend.startswith("Verdicts: ")
    text = markdown.render_comparison(found)
    assert text.splitlines()[0] == f"| variant | point | metric | A ({first}) | B ({second}) | verdict | B vs A |"
    assert len(text.splitlines()) == 2 + len(found.rows) + 2 and text.endswith(found.legend)
