"""The busy rule on the campaign's hosts (issue #42 item 4, analysis/busy.py busy_run; the lab of
scripts/lab-hosts): a stress-ng the test starts over SSH on the app host (the client's host) during one run does
not make that run busy, and its CPU is stored under `other@app`; a stress-ng started the same way on the server's
host (db, this machine; or dbssh, the same reached over SSH, whose CPU is read there by a script) during another
run makes that run busy, its CPU stored under `other@<that host>`. The load goes through the inventory's Host, so
the test says the same on a lab whose hosts are separate machines. Other work may load this shared machine too:
the test asserts what its own load did, never that a run was quiet. Each run first waits for quiet (1 s) on the
server's host, which its record names (`quiet_wait.at`)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from helpers import stored_rows
from layerbench.campaign.models import parse_campaign
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = pytest.mark.integration


class LoadDuringRuns(orchestrator.SilentProgress):
    """stress-ng (two CPU workers, a timeout as a safety net) on a host of the inventory from the start of a run
    until it is stored; its PID group is stopped there over the same Host."""

    def __init__(self, hosts: dict, load_on: dict[int, str]) -> None:
        self.hosts = {name: Host(name, HostEntry(**entry)) for name, entry in hosts.items()}
        self.load_on = load_on  # run index -> the host the test loads during it
        self.running: tuple[Host, int] | None = None

    def run_started(self, spec, position: int, total: int) -> None:
        host = self.hosts[self.load_on[spec.idx]]
        done = host.shell("setsid stress-ng --cpu 2 --timeout 300 >/dev/null 2>&1 < /dev/null & echo PID $!",
                          name=f"load on {host.name}", timeout=60)
        pid = int(next(line for line in done.output.splitlines() if line.startswith("PID ")).split()[1])
        self.running = (host, pid)

    def run_finished(self, spec, record) -> None:
        self.stop()

    def stop(self) -> None:
        if self.running is not None:
            host, pid = self.running
            host.shell(f"kill -TERM -{pid} 2>/dev/null; true", timeout=60)
            self.running = None


@pytest.mark.parametrize("server", ["db", "dbssh"])  # this machine's sampler; the CPU window read over SSH
def test_only_the_server_hosts_load_makes_a_run_busy(lab_hosts: dict, tmp_path: Path, server: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_WAIT_FOR_QUIET", "always")  # each run waits, whatever the shared machine's load
    tag = secrets.token_hex(3)
    data = {"name": f"reach-busy-{tag}", "baseline": f"reach-{tag}", "hosts": lab_hosts,
            "variants": [{"name": f"reach-{tag}", "backend": "host", "server_host": server, "client_host": "app"}],
            "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 6, "warmup": 1},
            "repetitions": 2, "order": "sequential", "busy": "keep", "wait_for_quiet": "1s",
            "output": str(tmp_path / "out"), "formats": ["md"]}
    load = LoadDuringRuns(lab_hosts, {0: "app", 1: server})
    try:
        with Store(tmp_path / "out" / "layerbench.db") as store:
            outcome = orchestrator.run_campaign(parse_campaign(data), store, progress=load)
            runs = stored_rows(store, outcome.campaign_id)
    finally:
        load.stop()
    assert [r["status"] for r in runs] == ["ok", "ok"], [r["error"] for r in runs]
    on_app, on_db = (json.loads(r["details"]) for r in runs)
    # the wait for quiet read the server's host: db, this machine (local: true), or dbssh over its SSH connection
    for details in (on_app, on_db):
        wait = details["quiet_wait"]
        assert wait["at"] == ("this machine" if server == "db" else "dbssh") and "error" not in wait, wait
        assert wait["busy_share"] is not None and wait["waited_seconds"] >= 1.0, wait
    app_cpu, db_cpu = on_app["resources"]["cpu_seconds"], on_db["resources"]["cpu_seconds"]
    # attribution by host key: the load on app is app's other, the load on the server's host is that host's
    assert app_cpu["other@app"] >= 1.0 and db_cpu.get("other@app", 0.0) < 0.5, (app_cpu, db_cpu)
    assert db_cpu[f"other@{server}"] >= 1.0, db_cpu
    top_app = [p["name"] for p in on_app["resources"]["top_other"]]
    assert not any(name.startswith("stress-ng") for name in top_app), top_app  # not the server host's other
    # the busy rule: the run loaded on db is busy; the one loaded on app is busy only by db's own other
    assert on_db.get("busy") and on_db["busy"]["action"] == "kept", on_db.get("busy")  # busy: keep
    if on_app.get("busy"):  # other work loaded this shared machine: its share is db's other alone
        assert on_app["busy"]["share"] == pytest.approx(app_cpu[f"other@{server}"] / sum(app_cpu.values()), abs=1e-3)
