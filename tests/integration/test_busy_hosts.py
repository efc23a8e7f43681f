"""The busy rule reads the server's host (issue #42 item 4 and its done-when; analysis/busy.py busy_run,
measure/remote_cpu.py), on the isolated lab (the session's `isolated_lab`): db is a host of its own cgroup, PID
namespace and firewall, so its CPU is its cgroup's, not the shared kernel's /proc/stat. A stress-ng the test
starts outside the campaign during one run each (over SSH on app, which serves no server; on this machine, the
harness; over SSH on db, the server's host) makes only the run loaded on db busy, and `busy: rerun` replaces it.
Other work may load this shared machine too: a load outside db is not db's, so no run but db's is busy. Each run
first waits for quiet (1 s) on the server's host, which its record names (`quiet_wait.at`)."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import pytest

from helpers import stored_rows
from layerbench.campaign.models import parse_campaign
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.slow]
LAB_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lab-hosts"
PORTS = (41580, 41589)  # opened on db: the direct path, with no SSH forward's sshd on db to count
LOAD = "setsid stress-ng --cpu 2 --timeout 300 >/dev/null 2>&1 < /dev/null & echo PID $!"


class LoadDuringRuns(orchestrator.SilentProgress):
    """stress-ng (two CPU workers, a timeout as a safety net) from the start of a run until it is stored: on a
    host of the inventory (its PID group stopped there over the same Host), or on this machine (`here`)."""

    def __init__(self, hosts: dict, load_on: dict[int, str]) -> None:
        self.hosts = {name: Host(name, HostEntry(**entry)) for name, entry in hosts.items()}
        self.load_on = load_on  # run index -> where the test loads during it (a rerun: nowhere)
        self.remote: tuple[Host, int] | None = None
        self.here: subprocess.Popen | None = None

    def run_started(self, spec, position: int, total: int) -> None:
        where = self.load_on.get(spec.idx)
        if where == "here":
            self.here = subprocess.Popen(["stress-ng", "--cpu", "2", "--timeout", "300"], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        elif where is not None:
            host = self.hosts[where]
            done = host.shell(LOAD, name=f"load on {host.name}", timeout=60)
            self.remote = (host, int(next(ln for ln in done.output.splitlines() if ln.startswith("PID ")).split()[1]))

    def run_finished(self, spec, record) -> None:
        self.stop()

    def stop(self) -> None:
        if self.remote is not None:
            host, pid = self.remote
            host.shell(f"kill -TERM -{pid} 2>/dev/null; true", timeout=60)
            self.remote = None
        if self.here is not None:
            self.here.terminate()
            self.here.wait(timeout=60)
            self.here = None


def test_only_a_load_on_the_server_host_makes_a_run_busy_and_replaced(isolated_lab: dict, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_WAIT_FOR_QUIET", "always")  # each run waits, whatever the shared machine's load
    tag = secrets.token_hex(3)
    low, high = PORTS
    subprocess.run([str(LAB_SCRIPT), "open", f"{low}-{high}"], env=isolated_lab["env"], check=True, timeout=60)
    hosts = {name: {**entry, "ports": f"{low}-{high}"} if name == "db" else entry
             for name, entry in isolated_lab["hosts"].items()}
    data = {"name": f"done-busy-{tag}", "baseline": f"done-{tag}", "hosts": hosts,
            "variants": [{"name": f"done-{tag}", "backend": "host", "server_host": "db", "client_host": "app"}],
            "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 6, "warmup": 1},
            "repetitions": 3, "order": "sequential", "busy": {"policy": "rerun", "max_reruns": 1, "wait": "0s"},
            "wait_for_quiet": "1s",
            "output": str(tmp_path / "out"), "formats": ["md"]}
    load = LoadDuringRuns(hosts, {0: "app", 1: "here", 2: "db"})
    try:
        with Store(tmp_path / "out" / "layerbench.db") as store:
            outcome = orchestrator.run_campaign(parse_campaign(data), store, progress=load)
            runs = stored_rows(store, outcome.campaign_id)
    finally:
        load.stop()
    assert [r["status"] for r in runs] == ["ok", "ok", "replaced", "ok"], [(r["status"], r["error"]) for r in runs]
    on_app, here, on_db, rerun = (json.loads(r["details"]) for r in runs)
    for details in (on_app, here):  # other work on the machine, even a stress-ng of 2 CPUs, is not db's
        cpu = details["resources"]["cpu_seconds"]
        assert details.get("busy") is None and cpu["other@db"] < 0.5, (cpu, details.get("busy"))
    cpu = on_db["resources"]["cpu_seconds"]
    assert cpu["other@db"] >= 1.0 and on_db["busy"]["action"] == "replaced", (cpu, on_db["busy"])
    assert any(name.startswith("stress-ng") for name, _ in on_db["busy"]["top"]), on_db["busy"]
    assert on_db["busy"]["replaced_by"] == 3 and rerun.get("busy") is None, rerun.get("busy")  # the 4th run
    for details in (on_app, here, on_db):  # the wait for quiet read the server's host, over its SSH
        wait = details["quiet_wait"]
        assert wait["at"] == "db" and "error" not in wait and wait["busy_share"] is not None, wait
