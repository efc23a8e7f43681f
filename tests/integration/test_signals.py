"""Signals at random moments: a host and a Docker campaign are interrupted (SIGINT, SIGTERM or SIGHUP, seeded)
at TRIALS moments each, from Python's start-up through preflight, server start, the run and the cleanup. Right
after each exit nothing of this test's campaigns is left (processes, datadirs, owner records, private folders,
containers, volumes, networks), and at the end `resume` finishes every campaign exactly: each scheduled run
stored once, all ok.

Everything is this test's own: its work dir, temp dir, store and campaign names, so other campaigns running on
the machine at the same time are never looked at. Workloads are tiny (100 rows, 1 s runs) to keep it short.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_host_campaign import all_cmdlines

pytestmark = pytest.mark.integration

TRIALS = 20
SEED = 18
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# a signal before the handlers are installed (Python still importing) ends the process by the default action;
# nothing has been created by then
EXPECTED_EXITS = {0, 130, -signal.SIGTERM, -signal.SIGHUP}


def write_campaign(folder: Path, name: str, backend: str) -> Path:
    variant = {"name": "v", "backend": backend, **({"network": "bridge"} if backend == "docker" else {})}
    data = {"name": name, "baseline": "v", "variants": [variant], "repetitions": 3, "output": str(folder / "out"),
            "formats": ["json"],
            "workload": {"tables": 1, "table_size": 100, "threads": 1, "duration": 1, "warmup": 0}}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


class Harness:
    """Runs `layerbench run/resume` for one backend in its own work and temp folders, and looks at what is left."""

    def __init__(self, folder: Path, backend: str) -> None:
        self.folder, self.backend = folder, backend
        self.name = f"sig-{backend}-{os.getpid()}"
        self.db = folder / "out" / "layerbench.db"
        self.work, self.tmp = folder / "work", folder / "tmp"
        self.tmp.mkdir(parents=True)
        self.env = {**os.environ, "LAYERBENCH_WORK_DIR": str(self.work), "TMPDIR": str(self.tmp)}
        self.campaign = write_campaign(folder, self.name, backend)

    def command(self) -> list[str]:
        unfinished = self.unfinished()
        verb = ["resume", str(unfinished)] if unfinished else ["run", str(self.campaign)]
        return [sys.executable, "-m", "layerbench", *verb, "--db", str(self.db)]

    def unfinished(self) -> int | None:
        if not self.db.exists():
            return None
        row = sqlite3.connect(self.db).execute(
            "SELECT MAX(id) FROM campaigns WHERE status NOT IN ('finished', 'finished with failures')").fetchone()
        return row[0]

    def interrupt_once(self, delay: float, sig: int) -> tuple[int, str]:
        proc = subprocess.Popen(self.command(), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(sig)
        out, _ = proc.communicate(timeout=300)
        return proc.returncode, out

    def leftovers(self) -> list[str]:
        found = [f"process {cmd[:120]}" for cmd in processes_mentioning(str(self.folder))]
        # datadirs, docker bind dirs, owner records: any file under the work dir; private folders under TMPDIR
        found += [f"work: {p.relative_to(self.work)}" for p in self.work.rglob("*") if not p.is_dir()]
        found += [f"tmp: {p.name}" for p in self.tmp.iterdir()]
        from layerbench.workdirs import datasets_dir

        found += [f"unfinished dataset build {p.name}" for p in datasets_dir().glob(".build-*")]
        if self.backend == "docker":
            found += docker_leftovers(self.name)
        return found

    def finish_all(self) -> None:
        while self.unfinished():
            done = subprocess.run(self.command(), env=self.env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stdout + done.stderr

    def stored(self) -> dict[int, tuple[list[int], list[int], set[str]]]:
        db = sqlite3.connect(self.db)
        out = {}
        for (cid,) in db.execute("SELECT id FROM campaigns"):
            schedule = [r[0] for r in db.execute("SELECT idx FROM schedule WHERE campaign_id=? ORDER BY idx",
                                                 (cid,))]
            runs = [r[0] for r in db.execute("SELECT idx FROM runs WHERE campaign_id=? ORDER BY idx", (cid,))]
            statuses = {r[0] for r in db.execute("SELECT status FROM runs WHERE campaign_id=?", (cid,))}
            out[cid] = (schedule, runs, statuses)
        return out


def processes_mentioning(text: str) -> list[str]:
    return [cmd.replace("\0", " ") for cmd in all_cmdlines().split("\n") if text in cmd and "pytest" not in cmd]


def docker_leftovers(campaign: str) -> list[str]:
    import docker

    client = docker.from_env()
    label = {"label": f"layerbench.campaign={campaign}"}
    found = [f"container {c.name}" for c in client.containers.list(all=True, filters=label)]
    found += [f"volume {v.name}" for v in client.volumes.list(filters=label)]
    return found + [f"network {n.name}" for n in client.networks.list(filters=label)]


def schedule_table_exists(db: Path) -> bool:
    names = {r[0] for r in sqlite3.connect(db).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return "schedule" in names


@pytest.mark.parametrize("backend", ["host", pytest.param("docker", marks=pytest.mark.docker)])
def test_signals_at_random_moments_leave_nothing_and_resume_exactly(backend: str, tmp_path: Path) -> None:
    if backend == "docker":  # the image is built before, so no trial interrupts a build of minutes
        from layerbench.backends.docker_daemon import docker_client
        from layerbench.server.image import ensure_docker_image

        ensure_docker_image(docker_client(), lambda _text: None)
    harness = Harness(tmp_path, backend)
    rng = random.Random(f"{SEED}-{backend}")
    longest = 12.0 if backend == "docker" else 8.0  # past start-up, preflight, a few runs and their cleanups
    interrupted = 0
    for trial in range(TRIALS):
        delay, sig = rng.uniform(0.05, longest), rng.choice(SIGNALS)
        started = time.monotonic()
        code, out = harness.interrupt_once(delay, sig)
        where = f"trial {trial + 1}: {signal.Signals(sig).name} at {delay:.2f} s (exit {code})"
        assert code in EXPECTED_EXITS, f"{where}\n{out[-3000:]}"
        assert "Traceback" not in out and "internal error" not in out, f"{where}\n{out[-3000:]}"
        assert harness.leftovers() == [], where
        interrupted += code != 0
        print(f"{where}, {time.monotonic() - started:.1f} s")
    harness.finish_all()
    assert harness.leftovers() == []
    assert schedule_table_exists(harness.db)
    for cid, (schedule, runs, statuses) in harness.stored().items():
        assert schedule and runs == schedule, f"campaign {cid}: runs {runs} for schedule {schedule}"
        assert statuses <= {"ok", "replaced"}, f"campaign {cid}: {statuses}"  # busy: rerun on a busy machine
    assert interrupted >= TRIALS // 2, f"only {interrupted} of {TRIALS} trials were interrupted"
