"""Faults on real servers: the server killed mid-run, the harness SIGKILLed mid-campaign, too many failures."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_host_campaign import campaign_file, our_servers, run_cli

from helpers import stored_rows
from layerbench.campaign.models import parse_campaign
from layerbench.errors import RunFailed
from layerbench.run import orchestrator
from layerbench.store import Store

OWN = f"it-faults-{os.getpid()}"  # the Docker tests' campaign name: they check and kill only what it created

pytestmark = pytest.mark.integration


def server_pids(marker: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if "mariadbd" in cmd and str(marker) in cmd:
                pids.append(int(proc.name))
    return pids


def stored_runs(db: Path) -> int:
    try:
        return int(sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone()[0]) if db.exists() else 0
    except sqlite3.OperationalError:  # the store is being created
        return 0


def sigkill_during_a_run(proc: subprocess.Popen, marker: Path, ready, timeout: float = 300) -> None:
    """SIGKILL the harness at a moment when ready() holds and a server of this test is running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready() and server_pids(marker):
            proc.kill()
            proc.wait(timeout=10)
            return
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("no run was in flight before the deadline")


class KillServerOnce(orchestrator.SilentProgress):
    """kill -9 the server of the first run, two intervals into it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker
        self.killed = False

    def interval(self, spec, tps: float, elapsed: float) -> None:
        if not self.killed and elapsed >= 2:
            for pid in server_pids(self.marker):
                os.kill(pid, signal.SIGKILL)
            self.killed = True


def test_server_killed_mid_run_fails_that_run_only(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, repetitions=1, order="sequential",
                         workload={"tables": 1, "table_size": 1000, "threads": 2, "duration": 4, "warmup": 0})
    campaign = parse_campaign(yaml.safe_load(path.read_text()))
    spy = KillServerOnce(tmp_path)
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store, progress=spy)
        runs = stored_rows(store, outcome.campaign_id)
        assert spy.killed
        assert [r["status"] for r in runs] == ["failed", "ok"]
        first = runs[0]
        assert "FATAL" in first["error"] or "signal" in first["error"] or "exited" in first["error"]
        assert "server_log_tail" in first["details"]
        assert store.campaign(outcome.campaign_id).status == "finished with failures"
    report = subprocess.run([sys.executable, "-m", "layerbench", "report", "latest", "--db",
                             str(tmp_path / "out" / "layerbench.db")], capture_output=True, text=True)
    assert report.returncode == 0
    text = next((tmp_path / "out").glob("*/report.md")).read_text()
    assert "1 run(s) failed and are excluded from the statistics" in text
    assert our_servers(tmp_path) == []


def test_max_failures_stops_the_campaign(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, repetitions=2, max_failures=0, order="sequential", variants=[
        {"name": "base", "backend": "host", "server": {"config": {"character_set_server": "no_such_charset"}}}])
    campaign = parse_campaign(yaml.safe_load(path.read_text()))
    with Store(tmp_path / "out" / "layerbench.db") as store, pytest.raises(RunFailed, match="max_failures=0"):
        orchestrator.run_campaign(campaign, store)
    with Store(tmp_path / "out" / "layerbench.db") as store:
        assert len(store.runs(1)) == 1 and store.campaign(1).status == "failed"
    assert our_servers(tmp_path) == []


def test_sigkill_of_the_harness_then_clean_and_resume(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, repetitions=2,
                         workload={"tables": 1, "table_size": 1000, "threads": 1, "duration": 4, "warmup": 0})
    db = tmp_path / "out" / "layerbench.db"
    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    # SIGKILL: no handler runs, so the server of the run in flight is orphaned
    sigkill_during_a_run(proc, tmp_path, lambda: stored_runs(db) >= 1)
    assert server_pids(tmp_path), "the run in flight should have left its server running"
    stored_before = stored_runs(db)

    doctor = run_cli(["doctor"])
    assert doctor.returncode == 1 and "leftover of a crashed campaign" in doctor.stdout
    cleaned = run_cli(["clean"])
    assert cleaned.returncode == 0 and "stopped process" in cleaned.stdout
    assert "lb-private-" in cleaned.stdout  # the run's password files went with it
    assert server_pids(tmp_path) == []
    assert run_cli(["doctor"]).returncode == 0

    done = run_cli(["resume", "latest", "--db", str(db)])
    assert done.returncode == 0, done.stderr
    rows = sqlite3.connect(db).execute("SELECT idx, status, error FROM runs ORDER BY idx").fetchall()
    assert [r[0] for r in rows] == [0, 1, 2, 3] and {r[1] for r in rows} == {"ok"}, rows
    assert stored_before < 4
    assert our_servers(tmp_path) == []


@pytest.mark.docker
def test_docker_kill_of_the_server_container_fails_that_run_only(tmp_path: Path) -> None:
    import docker

    class KillContainerOnce(orchestrator.SilentProgress):
        killed = False

        def interval(self, spec, tps: float, elapsed: float) -> None:
            if not self.killed and elapsed >= 2:
                ours = ["layerbench.role=server", f"layerbench.campaign={OWN}"]
                for c in docker.from_env().containers.list(filters={"label": ours}):
                    if str(tmp_path) in str(c.attrs["Mounts"]):
                        c.kill()
                        self.killed = True

    path = campaign_file(tmp_path, name=OWN, repetitions=1, order="sequential", baseline="box", variants=[
        {"name": "box", "backend": "docker", "network": "bridge-direct"}, {"name": "host", "backend": "host"}],
        workload={"tables": 1, "table_size": 1000, "threads": 2, "duration": 4, "warmup": 0})
    campaign = parse_campaign(yaml.safe_load(path.read_text()))
    spy = KillContainerOnce()
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store, progress=spy)
        runs = stored_rows(store, outcome.campaign_id)
    assert spy.killed
    assert [(r["variant"], r["status"]) for r in runs] == [("box", "failed"), ("host", "ok")]
    assert docker.from_env().containers.list(all=True, filters={"label": f"layerbench.campaign={OWN}"}) == []


def test_two_campaigns_at_once_do_not_collide(tmp_path: Path) -> None:
    procs = []
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        path = campaign_file(folder, name=f"cc-{name}", repetitions=2,
                             workload={"tables": 1, "table_size": 1000, "threads": 1, "duration": 3, "warmup": 0})
        procs.append(subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    for name in ("one", "two"):
        rows = sqlite3.connect(tmp_path / name / "out" / "layerbench.db").execute("SELECT status FROM runs").fetchall()
        assert [r[0] for r in rows] == ["ok"] * 4
    assert our_servers(tmp_path) == []


def test_max_failures_flag(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, repetitions=3, variants=[
        {"name": "base", "backend": "host", "server": {"config": {"character_set_server": "no_such_charset"}}}])
    done = run_cli(["run", str(path), "--max-failures", "1"])
    assert done.returncode == 1 and "max_failures=1" in done.stderr
    assert stored_runs(tmp_path / "out" / "layerbench.db") == 2


@pytest.mark.docker
def test_an_oom_killed_container_fails_the_run_with_that_cause(tmp_path: Path) -> None:
    import docker

    path = campaign_file(tmp_path, name=OWN, repetitions=1, baseline="box", variants=[
        # a buffer pool as large as the limit (validate refuses a larger one) that the ~90 MB of data fills
        # completely: with the server's own memory on top, the container passes its limit
        {"name": "box", "backend": "docker", "network": "bridge-direct", "resources": {"memory": "64m"},
         "server": {"config": {"innodb_buffer_pool_size": "64M"}}}],
        workload={"tables": 4, "table_size": 100000, "threads": 2, "duration": 8, "warmup": 0,
                  "test": "oltp_read_only"})
    campaign = parse_campaign(yaml.safe_load(path.read_text()))
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store)
        (run,) = stored_rows(store, outcome.campaign_id)
    assert run["status"] == "failed" and "OOM-killed" in run["error"] and "resources.memory" in run["error"]
    assert docker.from_env().containers.list(all=True, filters={"label": f"layerbench.campaign={OWN}"}) == []
