"""A machine that stays busy: the test runs `stress-ng --cpu N` on every CPU for the whole of a real campaign of tiny
host runs with wait_for_quiet and busy: rerun. Its waits end at their limit, so by analysis/quiet.py's rule the
campaign stops waiting (run/quiet_waits.py): the stored records name the run after which it stopped, no later run
waits or is rerun, and `run`'s output and the report say so.

The test's own load keeps the machine busy whether other work runs or not, so it asserts the same on a loaded and
on a quiet machine; it checks only what its own campaign stored and printed, never a time."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.solo]  # see tests/lanes.py

NAME = "quiet-it-learn"


def campaign_file(tmp_path: Path) -> Path:
    data = {
        "name": NAME,
        "baseline": "base",
        "variants": [{"name": "base", "backend": "host"}, {"name": "same", "extends": "base"}],
        "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 2, "warmup": 1},
        "repetitions": 3,
        "wait_for_quiet": "3s",
        "busy": {"policy": "rerun", "max_reruns": 6, "wait": "3s"},
        "formats": ["md", "json"],
        "output": str(tmp_path / "out"),
    }
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run_under_load(tmp_path: Path) -> str:
    """`layerbench run` in a child process while stress-ng loads every CPU; the command's output."""
    env = {k: v for k, v in os.environ.items() if k != "LAYERBENCH_WAIT_FOR_QUIET"} | {"COLUMNS": "200"}
    stress = subprocess.Popen(["stress-ng", "--cpu", str(os.cpu_count() or 1), "--timeout", "900s", "--quiet"],
                              start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        done = subprocess.run([sys.executable, "-m", "layerbench", "run", str(campaign_file(tmp_path))],
                              capture_output=True, text=True, env=env, timeout=900)
    finally:
        os.killpg(stress.pid, signal.SIGKILL)
        stress.wait()
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng is not installed (scripts/setup does it)")
def test_on_a_machine_that_stays_busy_the_campaign_stops_waiting_and_says_so(tmp_path: Path) -> None:
    output = run_under_load(tmp_path)
    with Store(tmp_path / "out" / "layerbench.db") as store:
        campaign = store.campaign(NAME)
        runs = sorted(store.runs(campaign.id), key=lambda r: r.started_at or 0.0)
    waited = [r for r in runs if r.facts.quiet_wait is not None]
    stops = [r for r in waited if r.facts.quiet_wait.stopped_waiting]
    assert len(stops) == 1, [(r.idx, r.facts.quiet_wait) for r in waited]
    stop = stops[0]
    before = runs[:runs.index(stop) + 1]
    after = runs[runs.index(stop) + 1:]
    # every wait up to the stop ran out (the machine never got quiet), at most two of them in a row
    assert all(not r.facts.quiet_wait.quiet for r in waited) and 1 <= len(waited) <= 2
    assert all(r.facts.quiet_wait is None for r in after) and after, "a run waited after the stop"
    # no run after the stop was rerun: busy ones are kept, saying why
    assert all(r.status == "ok" for r in after)
    decided = [r.facts.busy for r in [stop, *after] if r.facts.busy is not None]
    assert decided and all(d.action == "kept" and d.waiting_stopped for d in decided)
    assert len(runs) - len([r for r in before if r.status == "replaced"]) == 6  # the planned runs, measured
    number = (stop.idx or 0) + 1
    said = f"stopped waiting for quiet after run {number}: {len(waited)} wait"
    assert said in output, output[-3000:]
    folder = next((tmp_path / "out").glob(f"*-{NAME}"))
    assert said in (folder / "report.md").read_text()
    document = json.loads((folder / "report.json").read_text())
    assert document["waiting"]["stopped_waiting_after_run"] == number
    assert document["waiting"]["waits"] == len(waited)
    assert any(said in w for w in document["warnings"])
