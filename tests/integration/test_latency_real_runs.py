"""A real MariaDB + sysbench campaign records each run's latency distribution of the measured window: monotone
percentiles, the p95 equal to sysbench's own 95th percentile of that window, a p99 comparison when asked, and a
store written before the distribution existed (schema 1) still reports."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from layerbench.campaign.models import parse_campaign
from layerbench.cli.main import main
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = pytest.mark.integration


def campaign_dict(tmp_path: Path) -> dict:
    return {
        "name": "it-pct-dist",
        "baseline": "base",
        "variants": [{"name": "base", "backend": "host", "cpus": "0", "client_cpus": "1"},
                     {"name": "small-bp", "extends": "base", "server": {"config": {"innodb_buffer_pool_size": "6M"}}}],
        "workload": {"tables": 1, "table_size": 2000, "threads": 2, "duration": 3, "warmup": 1,
                     "compare_percentiles": [99]},
        "repetitions": 1,
        "estimates_only": True,
        "output": str(tmp_path / "out"),
        "busy": "keep",  # counts its runs; busy runs replaced by reruns: test_busy_rerun.py
        "formats": ["md", "html", "json", "csv"],
    }


def sysbench_p95(run_dir: str) -> float:
    """The 95th percentile sysbench printed in its own summary of the run (2 decimals)."""
    text = (Path(run_dir) / "sysbench.log").read_text()
    return float(re.findall(r"95th percentile:\s+([0-9.]+)", text)[-1])


def report(db: Path, cid: int) -> None:
    with pytest.raises(SystemExit) as done:
        main(["report", str(cid), "--db", str(db)])
    assert done.value.code == 0


def test_real_runs_record_the_measured_windows_distribution(tmp_path: Path) -> None:
    campaign = parse_campaign(campaign_dict(tmp_path))
    db = tmp_path / "out" / "layerbench.db"
    with Store(db) as store:
        outcome = orchestrator.run_campaign(campaign, store, progress=orchestrator.SilentProgress())
    assert (outcome.ok, outcome.failed) == (2, 0)
    con = sqlite3.connect(db)
    for run_id, lat_pct, run_dir in con.execute("SELECT id, lat_pct_ms, run_dir FROM runs").fetchall():
        dist = dict(con.execute("SELECT percentile, value_ms FROM run_latency WHERE run_id=? ORDER BY percentile",
                                (run_id,)).fetchall())
        assert list(dist) == [50.0, 90.0, 95.0, 99.0, 99.9, 100.0]
        assert list(dist.values()) == sorted(dist.values()) and dist[50.0] > 0
        own = min(lat_pct, dist[100.0])  # never above the exact maximum (latency_histogram.distribution)
        assert dist[95.0] == pytest.approx(own, abs=1e-5)  # sysbench's 95th, from the machine total line
        assert dist[95.0] == pytest.approx(min(sysbench_p95(run_dir), dist[100.0]), abs=0.006)  # and printed
    con.close()

    report(db, outcome.campaign_id)
    md = (outcome.output_dir / "report.md").read_text()
    assert "p95 latency (ms) verdict" in md and "## Latency at other percentiles" in md
    assert "| `small-bp` | default, 2 threads | p99 latency (ms) |" in md
    html = (outcome.output_dir / "report.html").read_text()
    assert "Latency distribution" in html and "p99.9 (ms)" in html
    assert "lat_p99.9_ms" in (outcome.output_dir / "report.csv").read_text().splitlines()[0]

    old = tmp_path / "old.db"  # the same campaign as a schema-1 store holds it: no distribution table
    shutil.copy(db, old)
    con = sqlite3.connect(old)
    con.execute("DROP TABLE run_latency")
    con.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    con.commit()
    con.close()
    report(old, outcome.campaign_id)
    md = (outcome.output_dir / "report.md").read_text()
    assert "p99 latency (ms) was asked for but the runs did not record it" in md
