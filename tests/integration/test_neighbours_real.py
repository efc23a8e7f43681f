"""Neighbours on real stress-ng (docs/neighbours.md): a CPU neighbour on the server's CPU lowers the TPS of a
host server against the same runs without it (a ratio of medians with a generous margin, never a timing), and a
SIGKILL of the harness mid-run leaves a neighbour that `layerbench clean` finds and removes.

Tiny workloads (1 table x 1000 rows, 4 s runs). The test looks only at what it created: its own campaign, its own
run folders and the processes whose command line names them."""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from layerbench.hosts.owners import processes_with, recorded
from layerbench.store import Store

pytestmark = pytest.mark.integration

HOG = {"name": "hog", "kind": "cpu", "workers": 1, "load": 100, "cpus": "0"}


def campaign(tmp_path: Path, name: str, variants: list[dict], duration: int, repetitions: int) -> Path:
    data = {"name": name, "baseline": variants[0]["name"], "variants": variants,
            "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": duration, "warmup": 1},
            "repetitions": repetitions, "busy": "keep", "formats": ["md", "html"], "output": str(tmp_path / "out")}
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


def test_a_cpu_neighbour_on_the_servers_cpu_lowers_its_tps(tmp_path: Path) -> None:
    variants = [{"name": "pinned", "backend": "host", "cpus": "0", "client_cpus": "1"},
                {"name": "pinned-noisy", "extends": "pinned", "neighbours": [HOG]},
                {"name": "free", "backend": "host"},
                {"name": "free-noisy", "extends": "free",
                 "neighbours": [{"name": "hogs", "kind": "cpu", "workers": 2, "load": 100}]}]
    done = layerbench("run", str(campaign(tmp_path, "it-neighbours-tps", variants, 4, 3)))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tps = tps_by_variant(tmp_path / "out" / "layerbench.db")
    medians = {v: statistics.median(t) for v, t in tps.items()}
    print("median TPS:", {v: round(m, 1) for v, m in medians.items()}, "all:", tps)
    assert medians["pinned-noisy"] < 0.9 * medians["pinned"], medians
    assert medians["free-noisy"] < 0.9 * medians["free"], medians
    report = next((tmp_path / "out").glob("*-it-neighbours-tps/report.md")).read_text()
    assert "## Neighbours" in report and "hog" in report and "CPU per worker" in report


def test_the_neighbours_record_cpu_and_io_components(tmp_path: Path) -> None:
    disk = {"name": "disk", "kind": "disk", "pattern": "fsync", "size": "8M"}
    variants = [{"name": "base", "backend": "host", "cpus": "0", "client_cpus": "1", "neighbours": [HOG, disk]}]
    done = layerbench("run", str(campaign(tmp_path, "it-neighbours-record", variants, 3, 1)))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with Store(tmp_path / "out" / "layerbench.db") as store:
        run = store.runs(store.campaign("latest").id)[0]
    hog, _ = run.facts.neighbours.neighbours
    assert (hog.name, hog.kind, hog.tool, hog.cpus) == ("hog", "cpu", "stress-ng", "0")
    assert hog.check["running"] is True and hog.achieved["bogo_ops_per_second"] > 0
    assert run.facts.usage is not None and run.facts.usage.cpu_seconds["neighbour:hog"] > 0
    assert run.facts.io is not None and run.facts.io.processes["neighbour:disk"]["write_bytes"] > 0


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
    variants = [{"name": "base", "backend": "host", "neighbours": [HOG]}]
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
        done = layerbench("clean", timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert processes_with(marker) == [], done.stdout
        assert not any(o.marker == marker for o in recorded())
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        for pid in processes_with(str(tmp_path)):  # whatever of this test's campaign is still there
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


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
