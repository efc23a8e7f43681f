"""A busy machine during exactly one run: the test starts stress-ng when that run's sysbench starts (its
sysbench.log appears in the run's folder) and stops it once the run is stored, on a real campaign of tiny host
runs. The loaded run must be flagged, replaced by a rerun of the same variant in the same round, left out of the
verdict, and listed with why in every report format and at the end of `run`.

Other work may load this shared machine too, so other runs may be replaced as well: the test asserts only what it
did to its own run, never that no other run was busy."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from layerbench.analysis.loading import analyze
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.solo]  # see tests/lanes.py

TARGET = 2  # the run (1-based) the test loads: round 1, so the rerun comes at the end of round 1


def campaign_file(tmp_path: Path) -> Path:
    data = {
        "name": "it-busy-rerun",
        "baseline": "base",
        "variants": [{"name": "base", "backend": "host"}, {"name": "same", "extends": "base"}],
        "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 3, "warmup": 1},
        "repetitions": 3,
        # every run may be replaced: other helpers may load it too; a short wait for quiet after each replaced run
        "busy": {"policy": "rerun", "max_reruns": 6, "wait": "3s"},
        "formats": ["md", "html", "json", "csv"],
        "output": str(tmp_path / "out"),
    }
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run_folder(out: Path, number: int) -> Path | None:
    found = sorted(out.glob(f"*-it-busy-rerun/runs/{number:04d}-*"))
    return found[0] if found else None


def stored(db: Path, idx: int) -> bool:
    if not db.is_file():
        return False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT 1 FROM runs WHERE idx=?", (idx,)).fetchone() is not None
    except sqlite3.OperationalError:  # the tables are being created
        return False


def wait_until(condition, proc: subprocess.Popen, limit: float = 600) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert proc.poll() is None, "the campaign ended before the test saw what it waits for"
        assert time.monotonic() < deadline, "the campaign never reached the run the test loads"
        time.sleep(0.1)


def load_one_run(tmp_path: Path) -> str:
    """`layerbench run` in a child process; stress-ng on both CPUs from the moment run TARGET's sysbench starts
    until that run is stored. Returns the command's output."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(campaign_file(tmp_path))],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "200"})
    stress: subprocess.Popen | None = None
    try:
        wait_until(lambda: (folder := run_folder(out, TARGET)) is not None and (folder / "sysbench.log").exists(),
                   proc)
        stress = subprocess.Popen(["stress-ng", "--cpu", "2", "--timeout", "120s", "--quiet"],
                                  start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: stored(out / "layerbench.db", TARGET - 1), proc)
    finally:
        if stress is not None:
            os.killpg(stress.pid, signal.SIGKILL)
            stress.wait()
        output, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, output
    return output


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng is not installed (scripts/setup does it)")
def test_a_run_loaded_by_stress_ng_is_flagged_replaced_and_left_out_of_the_verdict(tmp_path: Path) -> None:
    output = load_one_run(tmp_path)
    with Store(tmp_path / "out" / "layerbench.db") as store:
        campaign = store.campaign("it-busy-rerun")
        runs = {r.idx: r for r in store.runs(campaign.id)}
        schedule = {s.idx: s for s in store.schedule(campaign.id)}
        analysis = analyze(store, campaign.id)
    loaded = runs[TARGET - 1]
    decision = loaded.facts.busy
    assert loaded.status == "replaced" and decision is not None and decision.action == "replaced"
    assert decision.share > 0.15 and decision.top, decision  # stress-ng among them unless others' work was busier
    # its replacement: an extra schedule position of the same variant, point and round, measured; if other work
    # made that one busy too, its own replacement follows the same way
    rerun = runs[decision.replaced_by]
    while rerun.status == "replaced" and rerun.facts.busy and rerun.facts.busy.replaced_by is not None:
        rerun = runs[rerun.facts.busy.replaced_by]
    after = min((r for r in runs.values() if r.started_at > loaded.started_at), key=lambda r: r.started_at)
    assert after.facts.quiet_wait is not None and after.facts.quiet_wait.max_seconds == 3.0  # busy.wait, recorded
    extra = schedule[decision.replaced_by]
    assert decision.replaced_by >= 6 and (extra.variant, extra.round) == (loaded.variant, loaded.round)
    assert rerun.status == "ok" and (rerun.variant, rerun.round, rerun.repetition) == (
        loaded.variant, loaded.round, loaded.repetition)
    # the verdict counts the clean runs: one per round and variant, the loaded one not among them
    point = analysis.points[0]
    assert {v.variant: v.n for v in point.variants} == {"base": 3, "same": 3}
    assert TARGET in [r.run for r in analysis.replaced]
    said = [w for w in analysis.warnings if "replaced" in w.lower() and re.search(rf"\brun {TARGET}\b", w)]
    assert said, analysis.warnings
    reports(tmp_path / "out", decision.replaced_by + 1)
    assert "replaced (busy machine)" in output and f"run {TARGET} by run " in output


def reports(out: Path, replacement: int) -> None:
    """Every format lists the loaded run as replaced, by which run, and why."""
    folder = next(out.glob("*-it-busy-rerun"))
    md = (folder / "report.md").read_text()
    section = md.split("## Replaced runs (busy machine)", 1)[1].split("\n## ", 1)[0]
    assert f"| run {TARGET} |" in section and f"run {replacement}" in section and "busiest:" in section
    html = (folder / "report.html").read_text()
    assert "Replaced runs (busy machine)" in html and f"replaced by run {replacement}" in html
    document = json.loads((folder / "report.json").read_text())
    entry = next(r for r in document["replaced_runs"] if r["run"] == TARGET)
    assert entry["replaced_by"] == replacement and entry["why"].startswith("busy: processes outside the run took")
    assert next(r for r in document["runs"] if r["index"] == TARGET)["busy"]["action"] == "replaced"
    rows = list(csv.DictReader(io.StringIO((folder / "report.csv").read_text())))
    row = next(r for r in rows if r["run"] == str(TARGET))
    assert row["status"] == "replaced" and row["error"].startswith(f"replaced by run {replacement}: busy")

