"""JSON (golden, stable schema) and CSV (pandas-ready shape) exports of a synthetic campaign."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from golden import check
from helpers import fill_store
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.report import csv_export, json_export, write_report
from layerbench.store import Store


def analysis(tmp_path: Path):
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "vm": 0.95}, reps=6, threads=(2, 4), costs={"host": 200.0, "vm": 120.0})
    with Store(db) as store:
        return analyze(store, cid)


def test_json_golden_and_schema(tmp_path: Path) -> None:
    a = analysis(tmp_path)
    text = json_export.render(report_model(a))
    doc = json.loads(text)
    assert doc["schema"] == "layerbench.analysis/1"
    assert {"campaign", "settings", "points", "sweeps", "price_performance", "warnings", "runs"} <= doc.keys()
    vm = next(v for v in doc["points"][0]["variants"] if v["variant"] == "vm")
    # paired by round (6 pairs, one comparison): the signed-rank interval at 6 pairs is [min, max] of the per-round
    # ratios and reaches into the band; unpaired (6 + 6 runs) it was `slower`
    assert vm["comparisons"]["tps"]["verdict"]["kind"] == "slower?" and vm["comparisons"]["tps"]["pairs"] == 6
    assert len(doc["runs"]) == 24 and doc["runs"][0]["series"][0].keys() == {"time", "tps", "warmup"}
    check("report_sweep_price.json", text)


def test_csv_one_row_per_run(tmp_path: Path) -> None:
    a = analysis(tmp_path)
    rows = list(csv.DictReader(io.StringIO(csv_export.render(report_model(a)))))
    assert len(rows) == 24 and rows[0].keys() >= {"variant", "threads", "tps", "lat_pct_ms", "steady_state"}
    assert {r["variant"] for r in rows} == {"host", "vm"} and all(float(r["tps"]) > 0 for r in rows)


def test_every_format_writes_a_file(tmp_path: Path) -> None:
    a = analysis(tmp_path)
    for fmt in ("md", "html", "json", "csv"):
        path = write_report(report_model(a), fmt, tmp_path / "out")
        assert path.exists() and path.stat().st_size > 100
    assert "<script>" in (tmp_path / "out" / "report.html").read_text()[:5_000_000]


def test_csv_cells_a_spreadsheet_would_evaluate_are_inert(tmp_path: Path) -> None:
    """OWASP CSV injection: a text cell starting with = + - @ (or tab/CR) gets a leading quote; numbers stay."""
    from layerbench.importing.table import import_csv

    source = tmp_path / "hostile.csv"
    source.write_text('variant,iteration,tps\n"=HYPERLINK(""http://x"")",1,10\n+cmd,1,11\n-2+3,1,12\n@SUM(A1),1,13\n'
                      "plain,1,14\n", encoding="utf-8")
    with Store(tmp_path / "lb.db") as store:
        cid = import_csv(store, source, "hostile", "plain")
        rows = list(csv.DictReader(io.StringIO(csv_export.render(report_model(analyze(store, cid))))))
    variants = {r["variant"] for r in rows}
    assert variants == {"'=HYPERLINK(\"http://x\")", "'+cmd", "'-2+3", "'@SUM(A1)", "plain"}
    assert all(not r["variant"].startswith(("=", "+", "-", "@")) for r in rows)
    assert sorted(float(r["tps"]) for r in rows) == [10, 11, 12, 13, 14]


def test_report_into_a_file_is_one_line_bad_input(tmp_path: Path) -> None:
    import pytest

    from layerbench.errors import BadInput

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(BadInput, match=r"--output: .* cannot hold the report"):
        write_report(report_model(analysis(tmp_path)), "md", blocker)
