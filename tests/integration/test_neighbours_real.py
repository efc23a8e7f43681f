"""Neighbours on real stress-ng, fio and iperf3 (docs/neighbours.md): each kind runs, is checked and is recorded
with what it achieved and its own CPU; a CPU neighbour placed in a Docker container (a QoS preset) and one on an ssh:
host of the lab (scripts/lab-hosts) run where they were asked beside a pinned host server; the same campaign sends
network neighbours across the lab (from a container to an iperf3 peer on app, from app to one here) and places a
neighbour beside a server on an ssh: host. A database neighbour (its own server and sysbench) is recorded with its
own TPS and CPU. A SIGKILL of the harness mid-run leaves neighbours (a host process, a Docker container, a database)
that `layerbench clean` finds and removes. What a CPU neighbour does to TPS is a performance figure, measured side by
side in bench/neighbour_tps.py, not here.

Tiny workloads (1 table x 1000 rows, 2-3 s runs). The test looks only at what it created: its own campaign, its own
run folders and the processes whose command line names them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from layerbench.hosts.inventory import Host, HostEntry
from layerbench.hosts.owners import processes_with, recorded
from layerbench.store import Store

pytestmark = pytest.mark.integration

HOG = {"name": "hog", "kind": "cpu", "workers": 1, "load": 100, "cpus": "0"}


def campaign(tmp_path: Path, name: str, variants: list[dict], duration: int, repetitions: int,
             threads: int = 1, **more: object) -> Path:
    data = {**more, "name": name, "baseline": variants[0]["name"], "variants": variants,
            "workload": {"tables": 1, "table_size": 1000, "threads": threads, "duration": duration, "warmup": 1},
            "repetitions": repetitions, "busy": "keep", "formats": ["md", "html"], "output": str(tmp_path / "out")}
    if repetitions < 3:  # a tiny plan: estimates, not verdicts (run/answerable.py refuses fewer rounds otherwise)
        data["estimates_only"] = True
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def layerbench(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "layerbench", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "COLUMNS": "200"})


def tps_by_variant(db: Path) -> dict[str, list[float]]:
    with Store(db) as store:
        runs = store.runs(store.campaign("latest").id)
    out: dict[str, list[float]] = {}
    for run in runs:
        if run.status == "ok" and run.metrics.tps is not None:
            out.setdefault(run.variant, []).append(run.metrics.tps)
    return out


def test_the_neighbours_record_cpu_and_io_components(tmp_path: Path) -> None:
    """A CPU, a disk and a database neighbour (its own server and sysbench at 50 transactions per second): each one's
    CPU (and the disk's I/O) its own component, the database's own TPS recorded, its server and datadir gone."""
    disk = {"name": "disk", "kind": "disk", "pattern": "fsync", "size": "8M"}
    db = {"name": "db", "kind": "database", "table_size": 1000, "threads": 1, "rate": 50}
    variants = [{"name": "base", "backend": "host", "cpus": "0", "client_cpus": "1", "neighbours": [HOG, disk, db]}]
    done = layerbench("run", str(campaign(tmp_path, "it-neighbours-record", variants, 3, 1)))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with Store(tmp_path / "out" / "layerbench.db") as store:
        run = store.runs(store.campaign("latest").id)[0]
    assert run.status == "ok", run.error
    hog, _, base = run.facts.neighbours.neighbours
    assert (hog.name, hog.kind, hog.tool, hog.cpus) == ("hog", "cpu", "stress-ng", "0")
    assert hog.check["running"] is True and hog.achieved["bogo_ops_per_second"] > 0
    assert run.facts.usage is not None and run.facts.usage.cpu_seconds["neighbour:hog"] > 0
    assert run.facts.io is not None and run.facts.io.processes["neighbour:disk"]["write_bytes"] > 0
    assert (base.kind, base.tool) == ("database", "sysbench") and 0 < base.achieved["tps"] <= 50 * 1.5, base
    assert run.facts.usage.cpu_seconds["neighbour:db"] > 0
    report = next((tmp_path / "out").glob("*-it-neighbours-record/report.md")).read_text()
    assert "TPS" in report and "of its own sysbench" in report and "neighbour:db" in report
    assert "## Neighbours" in report and "hog" in report and "CPU per worker" in report
    assert processes_with(str(tmp_path / "out")) == []  # its mariadbd (my.cnf in the run's folder) and sysbench


def test_docker_and_ssh_placed_neighbours_run_where_asked_and_are_recorded(tmp_path: Path, lab_hosts: dict) -> None:
    """A guaranteed container (2 CPUs of weight, cpuset 0: in cgroup v1 a container's workers weigh as one group)
    and a process on the lab's app host (over SSH, pinned to CPU 0) beside a server pinned on CPU 0, network
    neighbours across the lab, and a neighbour beside a server on an ssh: host: each run's record says where each
    ran and what it achieved (CPU taken on the server's CPU); the report shows the placements and the servers' CPU
    contention, a Docker server's too. What they do to TPS is bench/neighbour_tps.py's (--hosts for the ssh one)."""
    docker_hog = {"name": "box", "kind": "cpu", "workers": 2, "load": 100, "placement": "docker", "qos": "guaranteed",
                  "resources": {"cpus": 2}, "cpus": "0"}
    ssh_hog = {"name": "far", "kind": "cpu", "workers": 2, "load": 100, "placement": "ssh", "host": "app",
               "cpus": "0"}
    # network neighbours across the lab's bridge, light (10 Mbit/s) not to blur the CPU neighbours' findings: a
    # container's iperf3 to its peer on app (over SSH), and app's iperf3 to its peer here (db's address)
    boxed_wire = {"name": "wire", "kind": "network", "placement": "docker", "to": "app", "bitrate": "10M"}
    far_wire = {"name": "wire", "kind": "network", "placement": "ssh", "host": "app", "to": "db", "bitrate": "10M"}
    variants = [{"name": "pinned", "backend": "host", "cpus": "0", "client_cpus": "1"},
                {"name": "docker-noisy", "extends": "pinned", "neighbours": [docker_hog, boxed_wire]},
                {"name": "ssh-noisy", "extends": "pinned", "neighbours": [ssh_hog, far_wire]},
                {"name": "far-server", "backend": "host", "server_host": "dbssh",  # its neighbour beside it there
                 "neighbours": [{"name": "near", "kind": "cpu", "load": 20, "placement": "ssh", "host": "dbssh"}]},
                {"name": "boxed-server", "backend": "docker", "qos": "guaranteed", "resources": {"cpus": 1},
                 "cpus": "0", "client_cpus": "1"}]  # a cgroup of its own: its throttling and CPU pressure
    path = campaign(tmp_path, "it-neighbours-placed", variants, 2, 1, hosts=lab_hosts)
    done = layerbench("run", str(path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with Store(tmp_path / "out" / "layerbench.db") as store:
        runs = {r.variant: r for r in store.runs(store.campaign("latest").id) if r.status == "ok"}
    (box, boxed_wire), (far, far_wire) = (runs["docker-noisy"].facts.neighbours.neighbours,
                                          runs["ssh-noisy"].facts.neighbours.neighbours)
    assert (box.placement, far.placement) == ("docker", "ssh")
    for wire in (boxed_wire, far_wire):  # sent across the lab's bridge, the peer's own figure too
        assert wire.kind == "network" and 0 < wire.achieved["bits_per_second"] <= 10e6 * 1.2, wire
        assert wire.achieved["received_bits_per_second"] > 0, wire
    (near,) = runs["far-server"].facts.neighbours.neighbours
    assert near.placement == "ssh" and near.achieved["bogo_ops_per_second"] > 0
    assert box.achieved["bogo_ops_per_second"] > 0 and far.achieved["bogo_ops_per_second"] > 0
    assert box.achieved["cpu_percent_per_worker"] >= 5 and far.achieved["cpu_percent_per_worker"] >= 5  # competed
    cpu = runs["docker-noisy"].facts.usage.cpu_seconds  # with hosts: each component named with its host (@local)
    assert sum(v for k, v in cpu.items() if k.startswith("neighbour:box")) > 0, cpu  # its container's, sampled here
    report = next((tmp_path / "out").glob("*-it-neighbours-placed/report.md")).read_text()
    assert "docker (qos guaranteed, 2 CPU), CPUs 0" in report and "ssh host app, CPUs 0" in report
    assert "TCP stream(s) to app at 10Mbit/s" in report and "TCP stream(s) to db at 10Mbit/s" in report
    assert "### The server's CPU contention" in report and "differs from `pinned` in neighbours" in report
    boxed = next(line for line in report.splitlines() if line.startswith("| boxed-server | none |"))
    throttled_share, _, _, cgroup_pressure = [c.strip() for c in boxed.split("|")[3:7]]
    assert throttled_share.endswith("%") and cgroup_pressure.endswith("%"), boxed  # measured, not "-"
    assert our_neighbour_containers("it-neighbours-placed") == []
    left = Host("app", HostEntry(**lab_hosts["app"])).shell("ls -d /tmp/lb*-nb-far /tmp/lb*-nb-wire* 2>/dev/null; "
                                                            "true").output
    assert left.strip() == ""
    assert processes_with(str(tmp_path / "out")) == []  # the iperf3 peer here, the neighbour beside far-server


def our_neighbour_containers(campaign_name: str) -> list[str]:
    import docker

    client = docker.from_env()
    found = client.containers.list(all=True, filters={"label": f"layerbench.campaign={campaign_name}"})
    return [c.name for c in found if c.labels.get("layerbench.role") == "neighbour"]


def wait_for_neighbour(out: Path, proc: subprocess.Popen[bytes], limit: float = 600) -> Path:
    """The stress-ng report path of the first run's neighbour, once a process names it (it is running)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the campaign ended before its neighbour started"
        found = list(out.glob("*-it-neighbours-kill/runs/*/neighbours/hog.log"))
        if found and processes_with(str(found[0].with_name("hog.stress-ng.yaml"))):
            return found[0].with_name("hog.stress-ng.yaml")
        time.sleep(0.1)
    raise AssertionError("the neighbour never started")


def test_sigkill_leaves_a_neighbour_that_clean_removes(tmp_path: Path) -> None:
    """A container and a database neighbour (its server and sysbench), then a host process: all run once the host
    one does."""
    boxed = {"name": "box", "kind": "cpu", "load": 20, "placement": "docker", "qos": "besteffort"}
    db = {"name": "db", "kind": "database", "table_size": 1000, "rate": 10}
    variants = [{"name": "base", "backend": "host", "neighbours": [boxed, db, HOG]}]
    path = campaign(tmp_path, "it-neighbours-kill", variants, 120, 1)
    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        marker = str(wait_for_neighbour(tmp_path / "out", proc))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        left = processes_with(marker)
        assert left, "the neighbour did not outlive the harness (nothing for clean to find)"
        assert any(o.marker == marker for o in recorded())
        assert len(our_neighbour_containers("it-neighbours-kill")) == 1, "the container did not outlive the harness"
        database = str(Path(marker).with_name("db"))  # its server's my.cnf and its sysbench's hook are there
        assert len(processes_with(database)) >= 2, "the database neighbour did not outlive the harness"
        done = layerbench("clean", timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert processes_with(marker) == [] and processes_with(database) == [], done.stdout
        assert not any(o.marker == marker for o in recorded())
        assert our_neighbour_containers("it-neighbours-kill") == [], done.stdout
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        for pid in processes_with(str(tmp_path)):  # whatever of this test's campaign is still there
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        remove_containers("it-neighbours-kill")


def remove_containers(campaign_name: str) -> None:
    import docker

    client = docker.from_env()
    for container in client.containers.list(all=True, filters={"label": f"layerbench.campaign={campaign_name}"}):
        container.remove(force=True)


def test_every_kind_runs_reports_what_it_achieved_and_leaves_nothing(tmp_path: Path) -> None:
    """stress-ng (cpu, memory), fio (fsync-heavy disk) and iperf3 (loopback) started, checked, stopped, read back;
    afterwards no process names this test's folders, no owner record is left, the disk folder is gone."""
    from layerbench.neighbours.model import Neighbour
    from layerbench.neighbours.running import NeighboursRunning

    neighbours = [Neighbour(name="hog", kind="cpu", load=50, cpus="0", nice=5),
                  Neighbour(name="mem", kind="memory", size="4M"),
                  Neighbour(name="disk", kind="disk", pattern="fsync", size="4M", folder=str(tmp_path)),
                  Neighbour(name="net", kind="network", bitrate="10M")]
    label = f"lbtest-neighbours-{os.getpid()}"
    running = NeighboursRunning(neighbours, tmp_path / "run", label, tmp_path)
    facts: dict = {}
    running.facts = facts
    with running:
        assert set(running.components()) == {"neighbour:hog", "neighbour:mem", "neighbour:disk", "neighbour:net"}
        assert len(list(tmp_path.glob("lb-neighbour-disk-*"))) == 1
        time.sleep(2)
    by_name = {n.name: n for n in running.record().neighbours}
    assert by_name["hog"].achieved["cpu_percent_per_worker"] > 0 and by_name["hog"].cpus == "0"
    assert by_name["mem"].achieved["bogo_ops_per_second"] > 0  # MB/s only after a longer run (stress-ng says)
    assert by_name["disk"].achieved["write_iops"] > 0 and by_name["disk"].achieved["fsyncs"] > 0
    assert by_name["net"].achieved["bits_per_second"] > 0
    assert all(n.check["running"] for n in by_name.values()) and facts["neighbours"]["format"] == 1
    assert processes_with(str(tmp_path)) == [] and list(tmp_path.glob("lb-neighbour-*")) == []
    assert not any(o.label.startswith(label) for o in recorded())
