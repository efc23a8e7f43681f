"""Importing raw sysbench output: a folder (variants as sub-folders), a glob, a mapping file; every refusal
names the file (and the line, for its content)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.errors import BadInput
from layerbench.importing.sources import import_results
from layerbench.report import csv_export, html, json_export, markdown
from layerbench.statistics_settings import Overrides
from layerbench.store import Store

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
CAPTURED = LOGS / "captured-1.0.20"


def imported(tmp_path: Path, source: str, baseline: str = "unlimited") -> tuple[int, Store]:
    store = Store(tmp_path / "lb.db")
    return import_results(store, source, "logs", baseline, Overrides()), store


def test_a_folder_with_a_sub_folder_per_variant(tmp_path: Path) -> None:
    cid, store = imported(tmp_path, str(CAPTURED))
    with store:
        runs = store.runs(cid)
        analysis = analyze(store, cid)
        row = store.campaign(cid)
    assert sorted((r.variant, r.repetition) for r in runs) == sorted(
        (v, i) for v in ("rate40", "unlimited") for i in range(1, 5))
    assert {r.percentile for r in runs} == {95} and {r.threads for r in runs} == {2}
    assert all(len(r.intervals) == 3 for r in runs)
    assert row.source_path == str(CAPTURED.resolve()) and row.output_dir == str(CAPTURED.resolve())
    assert analysis.definition.imported_layouts == ("1.0",)
    assert analysis.metric_label("lat_pct_ms") == "p95 latency (ms)"


def test_a_glob_and_names_that_carry_variant_and_iteration(tmp_path: Path) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    for variant in ("unlimited", "rate40"):
        for i in (1, 2):
            shutil.copy(CAPTURED / variant / f"run-{i}.txt", flat / f"{variant}-{i}.log")
    cid, store = imported(tmp_path, str(flat / "*.log"))
    with store:
        assert len(store.runs(cid)) == 4
    nested, store = imported(tmp_path, str(CAPTURED / "*" / "run-[12].txt"))
    with store:
        assert {r.variant for r in store.runs(nested)} == {"unlimited", "rate40"}


def test_a_mapping_file(tmp_path: Path) -> None:
    mapping = tmp_path / "runs.yaml"
    mapping.write_text(f"""runs:
  - {{file: {LOGS}/sysbench-0.5-oltp-intervals.txt, variant: old, iteration: 1}}
  - {{file: {LOGS}/sysbench-1.1-p99-err-no-colon.txt, variant: new, iteration: 1, threads: 4}}
""")
    cid, store = imported(tmp_path, str(mapping), baseline="old")
    with store:
        runs = store.runs(cid)
    assert [(r.variant, r.threads, r.percentile) for r in runs] == [("old", 4, 99), ("new", 4, 99)]


@pytest.mark.parametrize(("mapping", "expected"), [
    ("runs: []\n", "a mapping file is `runs:`"),
    ("runs:\n  - {file: a.txt, variant: x}\n", r"runs\[0\]: needs file, variant and iteration"),
    ("runs:\n  - {file: a.txt, variant: x, iteration: 1, colour: red}\n", r"runs\[0\].colour: unknown key"),
    ("runs:\n  - {file: a.txt, variant: x, iteration: 0}\n", r"runs\[0\].iteration: '0' must be a whole number"),
    ("runs:\n  - {file: nope.txt, variant: x, iteration: 1}\n", r"runs\[0\].file: 'nope.txt' does not exist"),
    ("runs:\n  - {file: a.txt, variant: x, iteration: 1, threads: 3}\n", "the mapping says 3 threads, the file says 2"),
    ("runs: [", "m.yaml: malformed YAML at line 1"),
])
def test_bad_mapping_files(tmp_path: Path, mapping: str, expected: str) -> None:
    shutil.copy(LOGS / "sysbench-1.0.20-p99.txt", tmp_path / "a.txt")
    (tmp_path / "m.yaml").write_text(mapping)
    with pytest.raises(BadInput, match=expected):
        imported(tmp_path, str(tmp_path / "m.yaml"), baseline="x")


def folder_of(folder: Path, files: dict[str, str]) -> Path:
    """`folder` holding copies of fixtures: {new name: fixture name}."""
    folder.mkdir()
    for name, fixture in files.items():
        shutil.copy(LOGS / fixture, folder / name)
    return folder


def mixed_folder(tmp_path: Path) -> Path:
    """Real 1.0.20 logs: `unlimited` reports the 95th percentile, `rate40-p100` (held to 40 tx/s) the 100th."""
    folder = tmp_path / "mixed"
    shutil.copytree(CAPTURED / "unlimited", folder / "unlimited")
    shutil.copytree(LOGS / "captured-1.0.20-p100" / "rate40-p100", folder / "rate40-p100")
    return folder


def test_files_of_different_percentiles_compare_tps_qps_and_avg_latency(tmp_path: Path) -> None:
    cid, store = imported(tmp_path, str(mixed_folder(tmp_path)))
    with store:
        runs = store.runs(cid)
        analysis = analyze(store, cid)
    assert sorted({(r.variant, r.percentile) for r in runs}) == [("rate40-p100", 100), ("unlimited", 95)]
    assert analysis.percentile == 95 and analysis.run_percentiles == (95, 100)  # the baseline's labels the campaign
    assert analysis.metric_label("lat_pct_ms") == "p95/p100 latency (ms)"
    (point,) = analysis.points
    mine = next(v for v in point.variants if v.variant == "rate40-p100")
    assert set(mine.comparisons) == {"queries", "qps", "tps", "lat_avg_ms"}  # no p95 against p100
    assert mine.comparisons["tps"].verdict.kind == "slower" and mine.comparisons["tps"].p_adjusted == pytest.approx(
        2 / 70)  # 4 + 4 runs completely separated: the exact Mann-Whitney p
    assert next(d for d in mine.deltas if d.metric == "lat_pct_ms").deviation_pct is None
    assert analysis.not_compared(point) == "not compared: 95th vs 100th"
    assert any("percentile latency not compared: 95th vs 100th (`rate40-p100`: 100th, `unlimited`: 95th" in w
               for w in analysis.warnings)


def test_every_format_marks_the_percentile_latency_as_not_compared(tmp_path: Path) -> None:
    cid, store = imported(tmp_path, str(mixed_folder(tmp_path)))
    with store:
        analysis = analyze(store, cid)
    md = markdown.render(report_model(analysis))
    row = next(line for line in md.splitlines() if line.startswith("| `rate40-p100` | imported, 2 threads |"))
    assert "| **slower** | -94.35% [-95.4, -93.9] (p=0.029, n=4+4) | not compared: 95th vs 100th | - |" in row
    assert "| 34.95 (p100) |" in md and "| 3.68 (p95) |" in md  # each file's percentile latency, tagged
    assert "not compared: 95th vs 100th" in html.render(report_model(analysis))
    document = json.loads(json_export.render(report_model(analysis)))
    assert any("not compared: 95th vs 100th" in w for w in document["warnings"])
    assert sorted({r["percentile"] for r in document["runs"]}) == [95, 100]
    rows = list(csv.DictReader(io.StringIO(csv_export.render(report_model(analysis)))))
    assert {(r["variant"], r["percentile"], r["lat_pct_verdict"], r["lat_pct_delta"]) for r in rows} == {
        ("rate40-p100", "100", "not compared", "95th vs 100th"), ("unlimited", "95", "", "")}
    assert {r["tps_verdict"] for r in rows if r["variant"] == "rate40-p100"} == {"slower"}


def test_the_baseline_names_the_campaign_percentile(tmp_path: Path) -> None:
    cid, store = imported(tmp_path, str(mixed_folder(tmp_path)), baseline="rate40-p100")
    with store:
        analysis = analyze(store, cid)
    assert analysis.percentile == 100 and analysis.metric_label("lat_pct_ms") == "p95/p100 latency (ms)"


def test_files_of_one_percentile_are_compared_as_before(tmp_path: Path) -> None:
    cid, store = imported(tmp_path, str(CAPTURED))
    with store:
        analysis = analyze(store, cid)
    assert analysis.run_percentiles == () and analysis.not_compared(analysis.points[0]) == ""
    assert all("lat_pct_ms" in v.comparisons for v in analysis.points[0].variants if v.variant != "unlimited")
    assert " (p95)" not in markdown.render(report_model(analysis))


@pytest.mark.parametrize(("fixture", "test"), [
    ("sysbench-1.0.20-cpu.txt", "cpu"), ("sysbench-0.4.12-cpu.txt", "cpu"), ("sysbench-1.0.20-memory.txt", "memory"),
    ("sysbench-1.0.20-fileio.txt", "fileio"),
])
def test_a_log_of_another_sysbench_test_is_refused_as_that(tmp_path: Path, fixture: str, test: str) -> None:
    folder = tmp_path / "logs"
    shutil.copytree(CAPTURED, folder)
    shutil.copy(LOGS / "other-tests" / fixture, folder / "unlimited" / "run-9.txt")
    with pytest.raises(BadInput) as error:
        imported(tmp_path, str(folder))
    assert str(error.value) == (f"{folder / 'unlimited' / 'run-9.txt'}: a sysbench {test} test, not an OLTP run; "
                                "layerbench compares database runs")


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("notes-1.txt", "my benchmark notes\n", r"notes-1.txt, line 1: not sysbench output"),
    ("a-1.txt", "\ufeffsysbench 1.0.20\n\nThreads started!\n", r"a-1.txt, line 1: sysbench output without"),
    ("README", "x\n", "README: cannot tell the variant and iteration from the name"),
])
def test_a_file_that_is_not_a_run_is_refused_by_name(tmp_path: Path, name: str, content: str, expected: str) -> None:
    folder = tmp_path / "logs"
    shutil.copytree(CAPTURED, folder)
    (folder / name).write_text(content)
    with pytest.raises(BadInput, match=expected):
        imported(tmp_path, str(folder))


def test_missing_sources_and_duplicates(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file or folder"):
        imported(tmp_path, str(tmp_path / "none"))
    with pytest.raises(BadInput, match="matches no file"):
        imported(tmp_path, str(tmp_path / "*.log"))
    folder = folder_of(tmp_path / "dup", {"a-1.txt": "sysbench-1.0.20-p99.txt", "a_1.log": "sysbench-1.0.20-p99.txt"})
    with pytest.raises(BadInput, match=r"iteration 1 .* is also"):
        imported(tmp_path, str(folder), baseline="a")
    with pytest.raises(BadInput, match="--baseline: 'zzz' is not a variant"):
        imported(tmp_path, str(CAPTURED), baseline="zzz")


PGBENCH = LOGS / "pgbench-15.18"


def test_real_pgbench_output_imports_as_runs_with_intervals(tmp_path: Path) -> None:
    """pgbench's own output (15.18, -P 1 -r) is read by pgbench/output.py: its clients as threads, its progress
    lines as intervals, its statements in the run's facts; the report renders without a percentile."""
    root = tmp_path / "pg"
    for variant, name in (("tpcb", "tpcb-like-c2.log"), ("tpcb2", "tpcb-like-c2.log")):
        (root / variant).mkdir(parents=True)
        shutil.copy(PGBENCH / name, root / variant / "run-1.log")
    cid, store = imported(tmp_path, str(root), baseline="tpcb")
    with store:
        runs = store.runs(cid)
        analysis = analyze(store, cid)
    assert {r.variant for r in runs} == {"tpcb", "tpcb2"} and {r.threads for r in runs} == {2}
    run = runs[0]
    assert run.metrics.transactions == 4354 and run.metrics.lat_avg_ms == 1.372 and run.metrics.lat_pct_ms is None
    assert [i.tps for i in run.intervals] == [1447.8, 1299.0, 1602.4] and run.percentile is None
    with Store(tmp_path / "lb.db") as again:
        facts = json.loads(again.db.execute("SELECT details FROM runs LIMIT 1").fetchone()[0])["imported"]
    assert facts["layout"] == "pgbench" and facts["pgbench"].startswith("15.18") and facts["scale"] == 1
    assert facts["statements"][4] == {"command": "BEGIN;", "latency_ms": 0.084}
    assert analysis.definition.imported_layouts == ("pgbench",)
    model = report_model(analysis)
    assert "tpcb2" in markdown.render(model) and "tpcb2" in html.render(model)
    assert {r["variant"] for r in json.loads(json_export.render(model))["runs"]} == {"tpcb", "tpcb2"}
    rows = list(csv.DictReader(io.StringIO(csv_export.render(model))))
    # the analysis's TPS of a run is its steady window's, from the progress lines (as for sysbench's intervals)
    assert {round(float(row["tps"]), 2) for row in rows} == {round((1447.8 + 1299.0 + 1602.4) / 3, 2)}


def test_an_aborted_pgbench_run_is_refused_by_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "host").mkdir()
    shutil.copy(PGBENCH / "aborted.log", tmp_path / "host" / "run-1.log")
    with pytest.raises(BadInput, match=r"host/run-1.log, line 4: pgbench says the run was aborted"):
        imported(tmp_path / "x", str(tmp_path / "host" / "run-1.log"), baseline="host")
