from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.errors import BadInput
from layerbench.importing.table import import_csv, parse_csv
from layerbench.records import CampaignRecord
from layerbench.report.markdown import render
from layerbench.store import Store

# The shape of a published container-overhead table (per-iteration results of a host and a Docker run).
PUBLISHED = """variant,iteration,total_queries,qps,tps,lat_avg_ms,lat_p95_ms
host,1,1452340,2420.5,121.0,66.1,114.7
host,2,1449021,2415.0,120.7,66.3,116.2
host,3,1460118,2433.5,121.7,65.8,112.9
docker,1,1371022,2285.0,114.3,70.0,125.5
docker,2,1380117,2300.2,115.0,69.5,123.3
docker,3,1362310,2270.5,113.5,70.4,127.8
"""


def test_import_and_report(tmp_path: Path) -> None:
    path = tmp_path / "published.csv"
    path.write_text(PUBLISHED)
    with Store(tmp_path / "lb.db") as store:
        cid = import_csv(store, path, "published", "host")
        analysis = analyze(store, cid)
    assert analysis.status == "imported" and len(analysis.runs) == 6
    docker = next(v for v in analysis.points[0].variants if v.variant == "docker")
    tps = next(d for d in docker.deltas if d.metric == "tps")
    assert tps.deviation_pct == pytest.approx((114.2666667 / 121.1333333 - 1) * 100, abs=1e-4)
    text = render(report_model(analysis))
    assert f"Imported from `{path.resolve()}`" in text and "`docker` vs `host`" in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "no header"),
        ("variant,iteration\nhost,1\n", "no metric column"),
        ("variant,tps\nhost,1\n", "'iteration' is missing"),
        ("variant,iteration,tps,colour\nhost,1,2,red\n", "unknown column 'colour'"),
        ("variant,iteration,tps\nhost,one,5\n", "line 2, column iteration"),
        ("variant,iteration,tps\nhost,1,fast\n", "line 2, column tps: 'fast' is not a number"),
        ("variant,iteration,tps\nhost,1,-3\n", "must be a number from 0 to"),
        ("variant,iteration,tps\nhost,1,5\nhost,1,6\n", "appears twice"),
        ("variant,iteration,tps\n,1,5\n", "column variant: empty"),
        ("variant,iteration,tps\n", "no data rows"),
    ],
)
def test_bad_csv_names_line_and_column(text: str, expected: str) -> None:
    with pytest.raises(BadInput, match=expected):
        parse_csv(text)


def test_unknown_baseline(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text(PUBLISHED)
    with Store(tmp_path / "lb.db") as store, pytest.raises(BadInput, match="--baseline: 'vm'"):
        import_csv(store, path, "x", "vm")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("variant,iteration,tps,qps\n0123456789.-x\"\r ")), max_size=300))
def test_parser_only_ever_raises_bad_input(text: str) -> None:
    try:
        rows = parse_csv(text)
    except BadInput as error:
        assert "\n" not in str(error)
    else:
        assert rows and all(r.metrics for r in rows)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_parser_survives_any_text(text: str) -> None:
    with contextlib.suppress(BadInput):
        parse_csv("variant,iteration,tps\n" + text)


def test_an_import_that_fails_half_way_leaves_nothing(tmp_path: Path) -> None:
    """The 300th of 400 runs breaks a NOT NULL constraint of the real schema: neither the campaign nor the 299
    runs before it are stored."""
    import sqlite3

    from layerbench.records import RunRecord

    runs = [RunRecord(0, "host", "imported", 2, i + 1, imported={"tps": 500.0 + i}) for i in range(400)]
    runs[299].variant = None  # type: ignore[assignment]
    with Store(tmp_path / "lb.db") as store:
        with pytest.raises(sqlite3.IntegrityError):
            store.import_campaign(CampaignRecord.from_json({"name": "half", "baseline": "host"}), str(tmp_path),
                                      "x.csv", runs)
        assert store.campaigns() == [] and store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("variant,iteration,tps\nhost,1,\"121,5\"\n", "line 2, column tps: '121,5' holds a comma"),
        ("variant;iteration;tps\nhost;1;121,5\n", "line 1, column 1: unknown column 'variant;iteration;tps'"),
        ("variant,iteration,tps\nhost,1,121.5,7\n", "line 2: 4 fields, the header has 3"),
        ("variant,iteration,tps,qps\nhost,1,121.5\n", "line 2: 3 fields, the header has 4"),
        ("variant,iteration,tps,TPS\nhost,1,1,1\n", r"line 1, column 4 \('TPS'\): repeats column 3"),
        ("variant,iteration,lat_p101_ms\nhost,1,5\n", r"line 1, column 3 \(lat_p101_ms\): not a percentile"),
        ("variant,iteration,lat_pmax_ms\nhost,1,5\n", r"column 3 \(lat_pmax_ms\): not a percentile"),
    ],
)
def test_strict_csv_refuses_with_line_and_column(text: str, expected: str) -> None:
    with pytest.raises(BadInput, match=expected):
        parse_csv(text)


def test_rows_of_another_percentile_keep_it_and_only_their_latency_is_not_compared(tmp_path: Path) -> None:
    """A table whose `docker` rows give only the 99th: TPS is compared, the percentile latency is not."""
    path = tmp_path / "mixed.csv"
    rows = [f"host,{i},{100 + i},5.{i}," for i in range(1, 5)] + [f"docker,{i},{90 + i},,9.{i}" for i in range(1, 5)]
    path.write_text("variant,iteration,tps,lat_p95_ms,lat_p99_ms\n" + "\n".join(rows) + "\n")
    with Store(tmp_path / "lb.db") as store:
        cid = import_csv(store, path, "mixed", "host")
        runs = store.runs(cid)
        analysis = analyze(store, cid)
    assert {(r.variant, r.percentile, r.metrics.lat_pct_ms) for r in runs if r.repetition == 1} == {
        ("host", 95, 5.1), ("docker", 99, 9.1)}
    docker = next(v for v in analysis.points[0].variants if v.variant == "docker")
    assert "tps" in docker.comparisons and "lat_pct_ms" not in docker.comparisons
    assert docker.comparisons["tps"].verdict.kind == "slower"
    assert analysis.not_compared(analysis.points[0]) == "not compared: 95th vs 99th"
    assert "| 9.10 (p99) |" in render(report_model(analysis))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([95.0, 99.0, 100.0]), min_size=8, max_size=8))
def test_percentiles_never_change_the_tps_comparison(tmp_path_factory: pytest.TempPathFactory,
                                                     percentiles: list[float]) -> None:
    """Whatever percentile each row reports, TPS is compared the same; the percentile latency only when all
    runs of the point report one."""
    tmp = tmp_path_factory.mktemp("pct")
    columns = {95.0: "lat_p95_ms", 99.0: "lat_p99_ms", 100.0: "lat_p100_ms"}
    lines = ["variant,iteration,tps," + ",".join(columns.values())]
    for i, pct in enumerate(percentiles):
        cells = [f"{pct:g}" if c == columns[pct] else "" for c in columns.values()]
        lines.append(f"{'host' if i < 4 else 'vm'},{i % 4 + 1},{100 + i + 20 * (i >= 4)},{','.join(cells)}")
    (tmp / "t.csv").write_text("\n".join(lines) + "\n")
    with Store(tmp / "lb.db") as store:
        analysis = analyze(store, import_csv(store, tmp / "t.csv", "t", "host"))
    vm = next(v for v in analysis.points[0].variants if v.variant == "vm")
    assert vm.comparisons["tps"].verdict.kind == "faster" and vm.comparisons["tps"].p == pytest.approx(2 / 70)
    assert ("lat_pct_ms" in vm.comparisons) == (len(set(percentiles)) == 1)
    assert bool(analysis.not_compared(analysis.points[0])) == (len(set(percentiles)) > 1)


def test_percentile_columns_are_labelled_and_the_95th_is_compared(tmp_path: Path) -> None:
    path = tmp_path / "pct.csv"
    path.write_text("\ufeffvariant,iteration,tps,lat_p99_ms,lat_p95_ms\r\nhost,1,100,9,5\r\ndocker,1,90,12,6\r\n")
    with Store(tmp_path / "lb.db") as store:
        cid = import_csv(store, path, "pct", "host")
        runs = store.runs(cid)
        analysis = analyze(store, cid)
    assert [r.percentile for r in runs] == [95, 95] and [r.metrics.lat_pct_ms for r in runs] == [5, 6]
    assert analysis.metric_label("lat_pct_ms") == "p95 latency (ms)"
    only99 = tmp_path / "p99.csv"
    only99.write_text("variant,iteration,tps,lat_p99.9_ms\nhost,1,100,9\ndocker,1,90,12\n")
    with Store(tmp_path / "lb.db") as store:
        analysis = analyze(store, import_csv(store, only99, "p99", "host"))
    assert analysis.metric_label("lat_pct_ms") == "p99.9 latency (ms)"
    assert analysis.definition.imported_from == str(only99.resolve())
