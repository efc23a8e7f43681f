"""Signals at random moments: a host and a Docker campaign are interrupted (SIGINT, SIGTERM or SIGHUP, seeded)
at TRIALS moments each, from Python's start-up through preflight, server start, the run and the cleanup. Right
after each exit nothing of this test's campaigns is left (processes, datadirs, owner records, private folders,
containers, volumes, networks, unfinished dataset builds), and at the end `resume` finishes every campaign
exactly: each scheduled run stored once, all ok.

First, BUILD_TRIALS interrupt a first build of the dataset (in a dataset folder of its own, empty) at the
moment a step of the build is seen to begin (polled, not guessed from the clock): the build folder,
mariadb-install-db, the build's server, its sysbench prepare. A SIGKILL there (no handler runs) is followed
by `layerbench clean`, which must leave nothing; and once by `resume`, whose build must take over what the
killed one left (its server stopped, its build folder finished).

Everything is this test's own: its work dir, temp dir, dataset dirs, store and campaign names, so other
campaigns running on the machine at the same time (and what other tests left in the cache) are never looked
at. Workloads are tiny (100 rows, 1 s runs) to keep it short.
"""

from __future__ import annotations

import contextlib
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

pytestmark = pytest.mark.integration

TRIALS = 20
SEED = 18
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# a signal before the handlers are installed (Python still importing) ends the process by the default action;
# nothing has been created by then
EXPECTED_EXITS = {0, 130, -signal.SIGTERM, -signal.SIGHUP}
# (step of a first dataset build, signal): each trial signals the moment the step is seen
BUILD_TRIALS = [("folder", signal.SIGTERM), ("install-db", signal.SIGINT), ("install-db", signal.SIGTERM),
                ("server", signal.SIGHUP), ("server", signal.SIGINT), ("sysbench", signal.SIGTERM),
                ("folder", signal.SIGKILL), ("install-db", signal.SIGKILL), ("server", signal.SIGKILL)]


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
        self.datasets = self.empty_datasets()
        self.campaign = write_campaign(folder, self.name, backend)

    def empty_datasets(self) -> Path:
        """A new, empty dataset folder for the next commands: the dataset is built there first."""
        self.datasets = self.folder / f"datasets-{len(list(self.folder.glob('datasets-*')))}"
        self.env["LAYERBENCH_DATASET_DIR"] = str(self.datasets)
        return self.datasets

    def built(self) -> bool:
        return any((self.datasets / name / "meta.json").is_file() for name in os.listdir(self.datasets)) \
            if self.datasets.is_dir() else False

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

    def interrupt_build(self, step: str, sig: int) -> tuple[int, str, bool]:
        """Start run/resume, signal it the moment `step` of the dataset build is seen; (exit code, output,
        whether the signal was sent while the dataset was not built yet)."""
        proc = subprocess.Popen(self.command(), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        seen = False
        while proc.poll() is None and not seen:
            seen = self.build_step_seen(step)
            time.sleep(0.005)
        inside = seen and proc.poll() is None and not self.built()
        if inside:
            proc.send_signal(sig)
        out, _ = proc.communicate(timeout=300)
        return proc.returncode, out, inside

    def build_step_seen(self, step: str) -> bool:
        if step == "folder":
            return any(self.datasets.glob(".build-*"))
        commands = processes_mentioning(str(self.folder))
        if step == "install-db":  # the script and its bootstrap server, on the build's datadir
            return any(f"--datadir={self.datasets}/" in cmd for cmd in commands)
        if step == "server":  # the build's own server (its init file lives in the build's private folder)
            return any("--defaults-file=" in cmd and "lb-prepare-" in cmd for cmd in commands)
        assert step == "sysbench"
        return any("sysbench" in cmd and "lb-prepare-" in cmd and cmd.rstrip().endswith("prepare")
                   for cmd in commands)

    def clean(self) -> str:
        done = subprocess.run([sys.executable, "-m", "layerbench", "clean"], env=self.env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def leftovers(self) -> list[str]:
        found = [f"process {cmd[:120]}" for cmd in processes_mentioning(str(self.folder))]
        # datadirs, docker bind dirs, owner records: any file under the work dir; private folders under TMPDIR
        found += [f"work: {p.relative_to(self.work)}" for p in self.work.rglob("*") if not p.is_dir()]
        found += [f"tmp: {p.name}" for p in self.tmp.iterdir()]
        found += [f"unfinished dataset build {p.parent.name}/{p.name}" for p in self.folder.glob("datasets-*/.build-*")]
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
    """Command lines (arguments joined by spaces) that contain text, except this test process's own. (Not "every
    one without 'pytest'": the test's folders are under /tmp/pytest-of-<user>/, so that matched nothing.)"""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            with contextlib.suppress(OSError):
                cmd = (proc / "cmdline").read_bytes().decode(errors="replace").replace("\0", " ")
                found += [cmd] if text in cmd else []
    return found


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
        from layerbench.backends.docker.daemon import docker_client
        from layerbench.server.image import ensure_docker_image

        ensure_docker_image(docker_client(), lambda _text: None)
    harness = Harness(tmp_path, backend)
    interrupt_first_builds(harness)
    harness.empty_datasets()  # the random moments start from a first build too, as on a new machine
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


def interrupt_first_builds(harness: Harness) -> None:
    """BUILD_TRIALS, each on a first build in an empty dataset folder: after SIGINT/SIGTERM/SIGHUP nothing is
    left; after SIGKILL, `clean` leaves nothing. At least one trial must have signalled inside a build."""
    inside_builds = 0
    for trial, (step, sig) in enumerate(BUILD_TRIALS, start=1):
        harness.empty_datasets()
        code, out, inside = harness.interrupt_build(step, sig)
        where = f"build trial {trial}: {signal.Signals(sig).name} when {step} was seen (exit {code})"
        print(f"{where}, inside the build: {inside}")
        assert "Traceback" not in out and "internal error" not in out, f"{where}\n{out[-3000:]}"
        if sig == signal.SIGKILL:
            assert code in {0, -signal.SIGKILL}, f"{where}\n{out[-3000:]}"
            cleaned = harness.clean()
            assert harness.leftovers() == [], f"{where}; clean said:\n{cleaned}"
        else:
            assert code in EXPECTED_EXITS, f"{where}\n{out[-3000:]}"
            assert harness.leftovers() == [], where
        inside_builds += inside and not harness.built()
    assert inside_builds >= 1, "no trial signalled inside a dataset build"


def test_resume_takes_over_a_dataset_build_killed_outright(tmp_path: Path) -> None:
    """SIGKILL of the harness while its first dataset build's server runs (the server is orphaned, its notes
    stay): `resume` stops that server, finishes the build in the same build folder and the campaign; what the
    killed run itself left (its private folder) is `clean`'s, which then leaves nothing."""
    harness = Harness(tmp_path, "host")
    try:
        code, out, inside = harness.interrupt_build("server", signal.SIGKILL)
        assert inside and code == -signal.SIGKILL, out[-3000:]
        assert [cmd for cmd in processes_mentioning(str(tmp_path)) if "lb-prepare-" in cmd], "no orphaned server"
        done = subprocess.run(harness.command(), env=harness.env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        said = done.stdout + done.stderr
        assert "cleaned up after a killed build of this dataset (stopped process" in said, said
        assert [cmd for cmd in processes_mentioning(str(tmp_path)) if "lb-prepare-" in cmd] == []
        assert harness.built() and list(harness.datasets.glob(".build-*")) == []
    finally:
        harness.clean()  # also what a failure above left running
    assert harness.leftovers() == []
    for cid, (schedule, runs, statuses) in harness.stored().items():
        assert schedule and runs == schedule and statuses <= {"ok", "replaced"}, f"campaign {cid}: {runs} {statuses}"
