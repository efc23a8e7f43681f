"""pgbench as a workload's load generator on the host backend, for real (issue #46 item 3): two PostgreSQL 15
variants (synchronous_commit on and off), pgbench's tpcb-like at scale 1 with 2 clients (a warm-up of its own) and
its select-only with 1 client, once each: the dataset made once by `pgbench -i -s 1` in the variant's own
PostgreSQL, snapshotted, restored and checked for every run; each run's progress lines as intervals, its summary as
totals, its statements (-r) in the run's facts; the analysis and the report over them; the runs' own pgbench logs
and a saved one imported by `layerbench import` to the same totals; no password written anywhere; and nothing left
running after the campaign nor after a signal while pgbench runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from helpers import folders_postgres_enters, processes_naming, run_for_real
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.importing.sources import import_results
from layerbench.pgbench.output import LATENCY, parse_log
from layerbench.report import markdown
from layerbench.statistics_settings import Overrides
from layerbench.store import Store

pytestmark = pytest.mark.integration
SAVED = Path(__file__).resolve().parents[1] / "data" / "logs" / "pgbench-15.18"


@pytest.fixture(scope="module")
def folders() -> Iterator[Path]:
    """Work and dataset folders of this module that the server's user can enter (pytest's own are 0700)."""
    with folders_postgres_enters("lb-it-pgb-") as base:
        yield base


@pytest.fixture(scope="module")
def campaign(folders: Path) -> dict:
    out = folders / "out"
    data = {
        "name": f"it-pgb-{os.getpid()}", "baseline": "pg",
        "variants": [
            {"name": "pg", "backend": "host", "cpus": "0", "client_cpus": "1", "server": {"flavour": "postgresql"}},
            {"name": "pg-async", "extends": "pg",
             "server": {"flavour": "postgresql", "config": {"synchronous_commit": False}}},
        ],
        "workloads": [
            {"name": "tpcb", "tool": "pgbench", "scale": 1, "threads": 2, "duration": 2, "warmup": 1,
             "verify": "checksum"},  # each run's restored copy checked in a private server first
            {"name": "ro", "tool": "pgbench", "test": "select-only", "threads": 1, "duration": 2, "warmup": 0},
        ],
        "repetitions": 1, "estimates_only": True, "output": str(out),
    }
    outcome, rows = run_for_real(data)
    runs = [(variant, status, tps, json.loads(details), error) for variant, status, tps, details, error in rows]
    with Store(out / "layerbench.db") as store:
        stored = store.runs(outcome.campaign_id)
        analysis = analyze(store, outcome.campaign_id)
    return {"outcome": outcome, "out": out, "runs": runs, "stored": stored, "analysis": analysis,
            "folders": folders}


def test_every_run_measured_pgbench_on_a_restored_pgbench_dataset(campaign: dict) -> None:
    assert [r[1] for r in campaign["runs"]] == ["ok"] * 4, [r[4] for r in campaign["runs"]]
    for _variant, _status, tps, facts, _error in campaign["runs"]:
        assert tps > 0
        reset = facts["reset"]
        assert reset["method"] == "snapshot" and reset["snapshot"].startswith("pgbench-s1-")
        assert facts["pgbench"]["scale"] == 1 and facts["pgbench"]["version"].startswith("15.")
        assert facts["environment"]["backend"]["server_flavour"] == "postgresql"
        # pgbench's backends end with it, before the sampler's last reading: counted through the postmaster
        assert facts["resources"]["cpu_seconds"]["server"] > 0.1, facts["resources"]["cpu_seconds"]
    assert len({r[3]["reset"]["snapshot"] for r in campaign["runs"]}) == 1  # one dataset: scale 1, one server
    key = campaign["runs"][0][3]["reset"]["snapshot"]
    meta = json.loads((campaign["folders"] / "datasets" / key / "meta.json").read_text())
    assert meta["rows"] == {"pgbench_accounts": 100_000, "pgbench_branches": 1, "pgbench_history": 0,
                            "pgbench_tellers": 10}
    assert meta["inputs"]["tool"] == "pgbench" and "PostgreSQL) 15." in meta["inputs"]["server"]
    checked = [r[3]["reset"] for r in campaign["runs"] if r[3]["reset"].get("verify") == "checksum"]
    assert len(checked) == 2 and all(c["checksum_tables"] == 4 for c in checked)


def test_totals_latency_and_intervals_come_from_pgbench_itself(campaign: dict) -> None:
    by_workload: dict[str, list] = {}
    for run in campaign["stored"]:
        by_workload.setdefault(run.workload, []).append(run)
    for run in by_workload["tpcb"]:
        m = run.metrics
        assert m.transactions and m.transactions > 0 and m.tps and m.tps > 0
        assert m.queries == 7 * m.transactions  # BEGIN, SELECT, 3 UPDATEs, INSERT, END per TPC-B transaction
        assert m.lat_avg_ms and m.lat_avg_ms > 0 and run.percentile == 95  # p95 from pgbench's own -l log
        assert m.lat_pct_ms is not None and m.lat_pct_ms > 0
        assert 0 < (m.duration or 0) <= 2.5  # transactions / tps: the measured window without connecting
        warm = [i for i in run.intervals if i.warmup]  # the 1 s warm-up's progress line, when pgbench printed one
        measured = [i for i in run.intervals if not i.warmup]
        assert len(warm) <= 1 and 1 <= len(measured) <= 2 and all(i.tps > 0 for i in run.intervals)
        assert all(1.0 < i.time <= 3.0 for i in measured)  # after the warm-up, by the measured pgbench's clock
        assert run.facts.reset is not None
    for run in by_workload["ro"]:
        assert run.metrics.queries == run.metrics.transactions and run.threads == 1
        assert not [i for i in run.intervals if i.warmup] and len(run.intervals) >= 1
    logs = sorted(campaign["out"].glob("*/runs/*/pgbench.log"))  # the measured pgbench's output, then the line
    assert len(logs) == 4
    recorded = sorted(run.metrics.lat_pct_ms for run in campaign["stored"])
    read = []
    for log in logs:
        found = LATENCY.match(log.read_text().splitlines()[-1])
        assert found, log.read_text()[-300:]
        p95, low, high, count = (float(found.group(i)) for i in (2, 3, 4, 5))
        # pgbench reads its clock lazily: its shortest transactions can log 0 us
        assert found.group(1) == "95" and 0 <= low <= p95 <= high and p95 > 0 and count > 0, found.group(0)
        read.append(p95)
    assert sorted(read) == recorded
    first_words = {"tpcb-like": ["BEGIN;", "UPDATE", "SELECT", "UPDATE", "UPDATE", "INSERT", "END;"],
                   "select-only": ["SELECT"]}
    for _variant, _status, _tps, facts, _error in campaign["runs"]:
        statements = facts["pgbench"]["statements"]  # -r's list: the \\set lines, then the SQL, each with its latency
        sql = [s["command"].split()[0] for s in statements if not s["command"].startswith("\\")]
        assert sql == first_words[facts["pgbench"]["script"]] and all(s["latency_ms"] >= 0 for s in statements)


def test_the_analysis_and_the_report_read_pgbench_runs(campaign: dict) -> None:
    analysis = campaign["analysis"]
    report = markdown.render(report_model(analysis))
    assert "pg-async" in report and "pgbench tpcb-like, scale 1 (100,000 accounts rows)" in report
    assert "p95" in report
    software = next(line for line in report.splitlines() if line.startswith("| software |"))
    assert ", pgbench 15." in software and "sysbench" not in software, software  # the tool that drove the runs
    assert "Traceback" not in report


def test_the_runs_pgbench_logs_and_a_saved_one_import_to_the_same_totals(campaign: dict, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    live = {}
    for run in campaign["stored"]:
        if run.workload != "tpcb" or run.status != "ok":
            continue
        folder = archive / run.variant
        folder.mkdir(parents=True, exist_ok=True)
        (run_dir,) = campaign["outcome"].output_dir.glob(f"runs/*-{run.variant}-tpcb-t2-r{run.repetition}")
        shutil.copy(run_dir / "pgbench.log", folder / f"run-{run.repetition}.log")
        live[(run.variant, run.repetition)] = (run.metrics.transactions, run.metrics.tps, run.metrics.lat_avg_ms)
    (archive / "saved").mkdir()
    shutil.copy(SAVED / "tpcb-like-c2.log", archive / "saved" / "run-1.log")
    with Store(tmp_path / "imported.db") as store:
        cid = import_results(store, str(archive), "it-pgb-import", "pg", Overrides())
        imported = store.runs(cid)
        assert analyze(store, cid).definition.imported_layouts == ("pgbench",)
    got = {(r.variant, r.repetition): (r.metrics.transactions, r.metrics.tps, r.metrics.lat_avg_ms)
           for r in imported if r.variant != "saved"}
    assert got == live and len(got) == 2
    saved = next(r for r in imported if r.variant == "saved")
    assert saved.metrics.transactions == parse_log("x", (SAVED / "tpcb-like-c2.log").read_text()).totals.transactions


def test_no_password_is_written_and_nothing_is_left(campaign: dict) -> None:
    out, folders = campaign["out"], campaign["folders"]
    logs = list(out.rglob("pgbench*.log"))
    assert len(logs) == 6  # 4 measured runs, 2 warm-ups
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".log", ".json", ".conf", ".txt", ".md"):
            text = path.read_text(errors="replace")
            assert "PASSWORD '" not in text and "PGPASSWORD" not in text, path
    commands = "\n".join(p.read_text() for p in out.rglob("commands.log"))
    assert "PGPASSFILE=" in commands and "pgbench" in commands
    assert not list(out.rglob("pgpass"))  # the passfile lives in the run's private folder, removed after it
    assert processes_naming(str(folders)) == []
    assert not any((folders / "work" / "work" / "datadirs").glob(f"lb{campaign['outcome'].campaign_id}-*"))


def test_a_signal_while_pgbench_runs_leaves_no_pgbench_and_no_server() -> None:
    base = Path(tempfile.mkdtemp(prefix="lb-it-pgb-signal-", dir="/tmp"))
    base.chmod(0o711)
    try:
        env = {**os.environ, "LAYERBENCH_WORK_DIR": str(base / "work"), "LAYERBENCH_DATASET_DIR": str(base / "ds")}
        path = base / "campaign.yaml"
        path.write_text(yaml.safe_dump({
            "name": "it-pgb-signal", "baseline": "pg", "output": str(base / "out"), "estimates_only": True,
            "variants": [{"name": "pg", "backend": "host", "server": {"flavour": "postgresql"}}],
            "workload": {"tool": "pgbench", "threads": 1, "duration": 20, "warmup": 0}, "repetitions": 1}))
        proc = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            # the measured pgbench (it rewrites its own -D argument, so its --builtin= marks it)
            while not [c for c in processes_naming(str(base)) if "--builtin=" in c] and proc.poll() is None:
                assert time.monotonic() < deadline, "no pgbench seen"
                time.sleep(0.05)
            assert proc.poll() is None, "layerbench ended before its pgbench was seen"
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130 and "Traceback" not in err and "interrupted" in err, err
        assert processes_naming(str(base)) == []
        assert not list((base / "work").glob("work/datadirs/*"))
    finally:
        shutil.rmtree(base, ignore_errors=True)
