"""The measured window's latency distribution: sysbench's --histogram parsed, percentiles by sysbench's rule,
stored (schema 2, a schema-1 store migrated), reported, and compare_percentiles validated."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import fill_store
from layerbench.analysis.latency import distribution_rows, percentile_comparisons
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.report import csv_export, json_export, markdown
from layerbench.store import Store
from layerbench.sysbench.histogram import (
    bucket_of,
    bucket_value,
    distribution,
    parse_histogram,
    percentile_ms,
)
from layerbench.sysbench.output import parse_output

DATA = Path(__file__).resolve().parents[1] / "data"


def test_captured_run_histogram_reproduces_sysbenchs_own_percentile() -> None:
    """tests/data/run_histogram.txt: a real sysbench 1.0.20 run here (2 s warm-up checkpoint, 4 s measured)."""
    text = (DATA / "run_histogram.txt").read_text()
    counts = parse_histogram(text)
    parsed = parse_output(text)
    assert counts is not None and parsed.totals is not None
    assert sum(counts.values()) == parsed.totals.events == 899  # exactly the measured window's events
    assert parsed.latency[95.0] == pytest.approx(parsed.totals.latency_pct_ms, abs=1e-6)  # 15.827543 ms
    values = [parsed.latency[p] for p in (50.0, 90.0, 95.0, 99.0, 99.9, 100.0)]
    assert values == sorted(values) and parsed.latency[100.0] == parsed.totals.latency_max_ms


def test_bucket_round_trip_and_rule() -> None:
    for bucket in range(222, 1024):  # from 0.054 ms up, the printed %.3f value names its bucket exactly
        assert bucket_of(float(f"{bucket_value(bucket):.3f}")) == bucket
    counts = {bucket_of(1.0): 50, bucket_of(2.0): 45, bucket_of(10.0): 5}
    assert percentile_ms(counts, 50) == pytest.approx(bucket_value(bucket_of(1.0)))
    assert percentile_ms(counts, 95) == pytest.approx(bucket_value(bucket_of(2.0)))  # rank floor(95.5) = 95
    assert percentile_ms(counts, 99) == pytest.approx(bucket_value(bucket_of(10.0)))
    assert distribution({}, 3.0) == {} and percentile_ms({}, 95) is None
    top = {bucket_of(1.0): 10, bucket_of(10.0): 1}  # the maximum, 9.95 ms, lies below its bucket's middle
    assert bucket_value(bucket_of(10.0)) > 9.95 and distribution(top, 9.95)[99.9] == 9.95


def test_output_without_histogram_records_no_distribution() -> None:
    parsed = parse_output((DATA / "run_hook.txt").read_text())
    assert parsed.totals is not None and parsed.latency == {}


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("0123456789.| *\n\ufeff\r-e+abc"), max_size=400))
def test_hostile_histogram_text_never_raises(body: str) -> None:
    counts = parse_histogram("Latency histogram (values are in milliseconds)\n header\n" + body)
    assert counts is not None and all(c >= 0 and 0 <= b < 1024 for b, c in counts.items())
    assert all(math.isfinite(v) for v in distribution(counts, None).values())


def campaign(**changes: object) -> dict:
    data = {"name": "x", "baseline": "b", "variants": [{"name": "b", "backend": "host"}], "workload": {}}
    return data | changes


@pytest.mark.parametrize(("changes", "expected"), [
    ({"workload": {"compare_percentiles": [97]}}, "workloads[0].compare_percentiles: 97 is not a recorded percentile"),
    ({"workload": {"compare_percentiles": [95]}}, "95 is already the workload's `percentile`"),
    ({"compare_percentiles": ["p99"]}, "compare_percentiles: 'p99' is not a recorded percentile"),
    ({"compare_percentiles": [99, 99.0]}, "compare_percentiles: a percentile is listed twice"),
    ({"compare_percentiles": [True]}, "compare_percentiles: True is not a recorded percentile"),
])
def test_compare_percentiles_refused_in_one_line(changes: dict, expected: str) -> None:
    with pytest.raises(BadInput) as error:
        parse_campaign(campaign(**changes))
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_compare_percentiles_accepted() -> None:
    parsed = parse_campaign(campaign(compare_percentiles=[99.9, 100], workload={"compare_percentiles": [99]}))
    assert parsed.compare_percentiles == [99.9, 100.0] and parsed.workloads[0].compare_percentiles == [99.0]


def with_distributions(db: Path, factors: dict[str, float]) -> int:
    """A synthetic store whose runs also carry a distribution (variant x is slower by factors[x] at p99)."""
    cid = fill_store(db, {name: 1.0 for name in factors}, reps=6)
    con = sqlite3.connect(db)
    for run_id, variant in con.execute("SELECT id, variant FROM runs").fetchall():
        base = 1 + run_id * 0.001
        for p, v in {50.0: 2.0, 90.0: 3.0, 95.0: 4.0, 99.0: 6.0 * factors[variant], 99.9: 9.0, 100.0: 12.0}.items():
            con.execute("INSERT INTO run_latency VALUES (?, ?, ?)", (run_id, p, v * base))
    definition = json.loads(con.execute("SELECT definition FROM campaigns WHERE id=?", (cid,)).fetchone()[0])
    definition["compare_percentiles"] = [99.0, 50.0]
    con.execute("UPDATE campaigns SET definition=? WHERE id=?", (json.dumps(definition), cid))
    con.commit()
    con.close()
    return cid


def test_reports_carry_the_distribution_and_compare_at_asked_percentiles(tmp_path: Path) -> None:
    db = tmp_path / "lb.db"
    cid = with_distributions(db, {"host": 1.0, "docker": 1.5})
    with Store(db) as store:
        analysis = analyze(store, cid)
    rows = distribution_rows(analysis)
    assert {r.variant for r in rows} == {"host", "docker"} and rows[0].runs == 6
    assert list(rows[0].median_ms) == ["p50", "p90", "p95", "p99", "p99.9", "max"]
    found = {c.metric: c for c in percentile_comparisons(analysis)}
    assert set(found) == {"lat_p99_ms", "lat_p50_ms"}
    assert found["lat_p99_ms"].comparison.verdict.kind == "slower" and found["lat_p99_ms"].label == "p99 latency (ms)"
    assert found["lat_p50_ms"].comparison.verdict.kind != "slower"
    text = markdown.render(report_model(analysis))
    assert "## Latency at other percentiles" in text and "p99 latency (ms) | **slower**" in text
    assert "p95 latency (ms) verdict" in text  # the answer keeps the campaign's percentile
    doc = json_export.document(report_model(analysis))
    assert doc["runs"][0]["latency_ms"]["p99.9"] > 0 and len(doc["percentile_comparisons"]) == 2
    header, first = csv_export.render(report_model(analysis)).splitlines()[:2]
    columns = header.split(",")
    at = columns.index("lat_p50_ms")
    assert columns[at:at + 6] == ["lat_p50_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "lat_p99.9_ms", "lat_max_ms"]
    assert first.split(",")[columns.index("lat_max_ms")] != ""


def test_schema_1_store_migrates_and_still_reports(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    cid = fill_store(db, {"host": 1.0, "docker": 0.9}, reps=6)
    con = sqlite3.connect(db)  # make it what layerbench wrote before schema 2
    con.execute("DROP TABLE run_latency")
    con.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    con.commit()
    con.close()
    with Store(db) as store:
        analysis = analyze(store, cid)
        version = store.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    assert version == "3" and distribution_rows(analysis) == []  # the current schema (3: estimates)
    assert "`docker` vs `host`" in markdown.render(report_model(analysis))
    html = __import__("layerbench.report.html", fromlist=["render"])
    assert "recorded no latency distribution" in html.render(report_model(analysis))


def test_window_without_events_records_nothing() -> None:
    """sysbench 1.0.20 prints the title and no row when the window counted no event (checked here: it does not
    hang on the lock sb_histogram_print leaves held, glibc returns EDEADLK to the report's second lock)."""
    counts = parse_histogram("Latency histogram (values are in milliseconds)\n \nSQL statistics:\n")
    assert counts == {} and distribution(counts, 0.0) == {}
