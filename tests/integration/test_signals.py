"""Signals at random moments of every phase: a host and a Docker campaign are interrupted (SIGINT, SIGTERM or
SIGHUP, seeded) in each phase of a `run`/`resume` invocation: Python's start-up, preflight (up to the stored
schedule), a run's server start, its sysbench, its cleanup and store, the next run's start after a run was stored,
and the report at the end. Right after each exit nothing of this test's campaigns is left (processes, datadirs,
owner records, private folders, containers, volumes, networks, unfinished dataset builds), and at the end
`resume` finishes every campaign exactly: each scheduled run stored once, all ok.

A first, uninterrupted `run` on a new machine (an empty dataset folder: it builds the dataset) measures when each
phase begins and ends; each trial then waits until its phase is seen to begin (polled: the store's file open,
the lines the command prints, the run's sysbench process) and signals at a moment drawn uniformly within the
phase's measured length (or the moment its end is seen, if it ends sooner). The Docker campaign is interrupted
only in the phases where its code differs from the host's (preflight's image check, the container's start,
sysbench against it, its removal); start-up, the store and the report are the same code for both.

First (host), BUILD_TRIALS interrupt a first build of the dataset (in a dataset folder of its own, empty) at the
moment a step of the build is seen to begin (polled, not guessed from the clock): the build folder,
mariadb-install-db, the build's server, its sysbench prepare. A SIGKILL there (no handler runs) is followed
by `layerbench clean`, which must leave nothing; and once by `resume`, whose build must take over what the
killed one left (its server stopped, its build folder finished). A Docker variant's dataset is built by the same
code on this host's MariaDB (variant_base.snapshot_server), so the Docker case does not repeat these.

Everything is this test's own: its work dir, temp dir, dataset dirs, store and campaign names, so other
campaigns running on the machine at the same time (and what other tests left in the cache) are never looked
at. Workloads are tiny (100 rows, 1 s runs) to keep it short.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration

SEED = 18
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# a signal before the handlers are installed (Python still importing) ends the process by the default action;
# nothing has been created by then
EXPECTED_EXITS = {0, 130, -signal.SIGTERM, -signal.SIGHUP}
RUNS = 2  # the campaign's repetitions: one variant, so one run per round
# The phases each backend's trials signal, in this order. The host's walk through a campaign: interrupted before its
# first run (imports, preflight), in each phase of that run, after a run was stored (next-up), and in the report of
# the `resume` that ran the rest (finish). Docker: only where its code differs from the host's, and after a stored
# run, so that the closing `resume` finishes a Docker campaign that has runs stored.
PHASES = {"host": ("imports", "preflight", "up", "bench", "down", "next-up", "finish"),
          "docker": ("preflight", "up", "bench", "down", "next-up")}
FIRST_MOMENT = 0.05  # before it, Python itself is starting (no layerbench code has run: its own SIGINT traceback)
# (step of a first dataset build, signal): each trial signals the moment the step is seen. SIGINT, SIGTERM and
# SIGHUP reach one handler (cli/terminal.py: SIGTERM and SIGHUP raise KeyboardInterrupt as Ctrl-C does;
# hosts/critical.py defers all three alike), so each step gets one of them, and SIGKILL where a process is left
BUILD_TRIALS = [("folder", signal.SIGTERM), ("install-db", signal.SIGINT), ("server", signal.SIGHUP),
                ("sysbench", signal.SIGTERM), ("folder", signal.SIGKILL), ("install-db", signal.SIGKILL),
                ("server", signal.SIGKILL)]
CAMPAIGN_LINE = re.compile(r"campaign \d+: \d+ runs \(")  # cli/progress.py's RichProgress: after the schedule is stored
RUN_LINE = re.compile(r"\s+run \d+: ")  # after a run was stored


def trial_events(phase: str, runs: int) -> tuple[str, str]:
    """The events (Watch.events) that begin and end `phase` of an invocation that has `runs` runs to do."""
    return {"imports": ("launch", "store"), "preflight": ("store", "campaign"), "up": ("campaign", "sysbench-1"),
            "bench": ("sysbench-1", "sysbench-1-done"), "down": ("sysbench-1-done", "run-1"),
            "next-up": ("run-1", "sysbench-2" if runs > 1 else "exit"), "finish": (f"run-{runs}", "exit")}[phase]


def phase_lengths(at: dict[str, float]) -> dict[str, float]:
    """Each phase's length in seconds, from the events of an uninterrupted invocation of RUNS runs; a run's start
    is measured on the second run (the first one's includes the first build of the dataset)."""
    spans = {"imports": ("launch", "store"), "preflight": ("store", "campaign"), "up": ("run-1", "sysbench-2"),
             "bench": ("sysbench-2", "sysbench-2-done"), "down": ("sysbench-2-done", "run-2"),
             "next-up": ("run-1", "sysbench-2"), "finish": (f"run-{RUNS}", "exit")}
    return {phase: at[end] - at[begin] for phase, (begin, end) in spans.items()}


def write_campaign(folder: Path, name: str, backend: str) -> Path:
    variant = {"name": "v", "backend": backend, **({"network": "bridge"} if backend == "docker" else {})}
    # busy: keep: this test's own polling of /proc (every few ms) is CPU outside the campaign, so on a loaded CI
    # machine its 1 s runs were called busy and replaced, each replacement after a wait for quiet (up to 30 s): the
    # test took 35 s in one CI and 155-161 s in others. Busy replacement has its own test (test_busy_rerun.py).
    data = {"name": name, "baseline": "v", "variants": [variant], "repetitions": RUNS, "output": str(folder / "out"),
            "formats": ["json"], "busy": "keep",
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

    def remaining(self) -> int:
        """The runs the next command has to do: the unfinished campaign's not stored yet, else a new campaign's."""
        unfinished = self.unfinished()
        if unfinished is None:
            return RUNS
        with contextlib.closing(sqlite3.connect(self.db)) as db:
            (scheduled,), (stored,) = (db.execute(f"SELECT COUNT(*) FROM {table} WHERE campaign_id=?",
                                                  (unfinished,)).fetchone() for table in ("schedule", "runs"))
        return scheduled - stored

    def calibrate(self) -> dict[str, float]:
        """One uninterrupted command of RUNS runs: the length of each phase (phase_lengths), measured."""
        assert self.remaining() == RUNS
        proc = subprocess.Popen(self.command(), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        watch = Watch(self, proc, RUNS)
        while proc.poll() is None:
            watch.poll()
            time.sleep(0.01)
        watch.poll()
        out = watch.finish()
        assert proc.returncode == 0, out[-3000:]
        lengths = phase_lengths(watch.at)
        # an event seen only with a later one (at the same moment) would make its phase 0 s long
        assert all(length > 0 for length in lengths.values()), f"{watch.at}\n{out[-3000:]}"
        return lengths

    def interrupt_in(self, phase: str, delay: float, sig: int) -> tuple[int, str, bool, bool]:
        """Start run/resume, signal it `delay` seconds after `phase` is seen to begin, or when it is seen to end if
        that comes first; (exit code, output, whether the signal was sent, whether inside the phase)."""
        runs = self.remaining()
        begins, ends = trial_events(phase, runs)
        proc = subprocess.Popen(self.command(), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        watch = Watch(self, proc, runs, sysbench=any(e.startswith("sysbench") for e in (begins, ends)))
        begun, sent, inside = None, False, False
        while proc.poll() is None and not sent:
            watch.poll()
            begun = time.monotonic() if begun is None and watch.seen(begins) else begun
            if begun is not None and (watch.seen(ends) or time.monotonic() >= begun + delay):
                inside = not watch.seen(ends)
                proc.send_signal(sig)
                sent = True
            assert time.monotonic() < watch.at["launch"] + 600, f"{phase}: never ended\n{''.join(watch.lines)}"
            time.sleep(0.01)
        out = watch.finish()
        assert sent or ends == "exit", f"{phase}: the command ended before it\n{out[-3000:]}"  # only the report
        return proc.returncode, out, sent, inside

    def interrupt_build(self, step: str, sig: int) -> tuple[int, str, bool]:
        """Start run/resume, signal it the moment `step` of the dataset build is seen (or, if the build ends unseen,
        the moment it is built); (exit code, output, whether the signal was sent while the dataset was not built
        yet)."""
        proc = subprocess.Popen(self.command(), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        seen = built = False
        while proc.poll() is None and not seen and not built:
            seen = self.build_step_seen(step)
            built = not seen and self.built()
            time.sleep(0.005)
        inside = seen and proc.poll() is None and not self.built()
        if (inside or built) and proc.poll() is None:
            # a step too short to be seen (a loaded machine): the build ended without it; the signal still lands
            # in the campaign's first run instead of letting it run the whole campaign (tens of seconds a trial)
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


class Watch:
    """Follows one `run`/`resume` command of `runs` runs through its events, which come in this order: launch, store
    (its store's file is open: Python started, the command line parsed), campaign (its "campaign N:" line: preflight
    done, the schedule stored), then for each run sysbench-K (its sysbench is running), sysbench-K-done and run-K
    (its line: stored), and exit. `at`: when each event was first seen (an event seen also marks those before it)."""

    def __init__(self, harness: Harness, proc: subprocess.Popen, runs: int, sysbench: bool = True) -> None:
        self.harness, self.proc, self.runs = harness, proc, runs
        self.sysbench = sysbench  # whether to look for sysbench-K events (else they are marked with run-K)
        self.events = ["launch", "store", "campaign"]
        for k in range(1, runs + 1):
            self.events += [f"sysbench-{k}", f"sysbench-{k}-done", f"run-{k}"]
        self.events.append("exit")
        self.at = {"launch": time.monotonic()}
        self.lines: list[str] = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(iter(proc.stdout.readline, "")), daemon=True)
        self.reader.start()

    def seen(self, event: str) -> bool:
        return event in self.at

    def poll(self) -> None:
        now, reached = time.monotonic(), self.reached()
        for event in self.events[len(self.at):reached + 1]:
            self.at[event] = now

    def reached(self) -> int:
        """The index of the latest event seen so far."""
        latest = len(self.at) - 1
        if self.proc.poll() is not None:
            return len(self.events) - 1
        lines = list(self.lines)
        stored = min(sum(bool(RUN_LINE.match(line)) for line in lines), self.runs)
        if stored:
            latest = max(latest, self.events.index(f"run-{stored}"))
        elif any(CAMPAIGN_LINE.match(line) for line in lines):
            latest = max(latest, self.events.index("campaign"))
        elif latest == 0 and self.store_open():
            latest = 1
        following = self.events[latest + 1]
        if self.sysbench and following.startswith("sysbench-"):
            latest += self.sysbench_running() != following.endswith("-done")
        return latest

    def sysbench_running(self) -> bool:
        """A measured run's sysbench (not a build's prepare: a run's ends with `run`) among the command's children
        (the only processes read: a scan of all of /proc every few ms would take a good part of a CPU)."""
        children: list[str] = []
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
                children += (task / "children").read_text().split()
        commands = [cmdline(int(pid)) for pid in children]
        return any("sysbench" in cmd and cmd.rstrip().endswith(" run") for cmd in commands)

    def store_open(self) -> bool:
        fds, store = Path(f"/proc/{self.proc.pid}/fd"), os.path.realpath(self.harness.db)
        with contextlib.suppress(OSError):
            return any(os.readlink(fds / fd) == store for fd in os.listdir(fds))
        return False

    def finish(self) -> str:
        self.proc.wait(timeout=300)
        self.reader.join(timeout=60)
        return "".join(self.lines)


def cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").replace("\0", " ")
    return ""


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
    if backend == "host":  # a Docker variant's dataset is built by the same code (the module's docstring)
        interrupt_first_builds(harness)
    harness.empty_datasets()  # the measured run starts from a first build, as on a new machine
    lengths = harness.calibrate()
    print("phases (s): " + ", ".join(f"{phase} {length:.2f}" for phase, length in lengths.items()))
    rng = random.Random(f"{SEED}-{backend}")
    inside = 0
    for trial, phase in enumerate(PHASES[backend], start=1):
        first = FIRST_MOMENT if phase == "imports" else 0.0
        delay, sig = rng.uniform(first, max(first, lengths[phase])), rng.choice(SIGNALS)
        started = time.monotonic()
        code, out, sent, within = harness.interrupt_in(phase, delay, sig)
        moment = "inside it" if within else "at its end" if sent else "not sent: the command ended first"
        where = f"trial {trial}: {signal.Signals(sig).name} {delay:.2f} s into {phase}, {moment} (exit {code})"
        assert code in EXPECTED_EXITS, f"{where}\n{out[-3000:]}"
        assert "Traceback" not in out and "internal error" not in out, f"{where}\n{out[-3000:]}"
        assert harness.leftovers() == [], where
        inside += within
        print(f"{where}, {time.monotonic() - started:.1f} s")
    harness.finish_all()
    assert harness.leftovers() == []
    assert schedule_table_exists(harness.db)
    for cid, (schedule, runs, statuses) in harness.stored().items():
        assert schedule and runs == schedule, f"campaign {cid}: runs {runs} for schedule {schedule}"
        assert statuses <= {"ok", "replaced"}, f"campaign {cid}: {statuses}"  # busy: rerun on a busy machine
    # a phase shorter than measured (the machine got quieter) is signalled at its end: still a moment of the
    # command, but most moments must fall inside their phase, or the phases were not covered
    assert inside >= len(PHASES[backend]) // 2 + 1, f"only {inside} of {len(PHASES[backend])} inside their phase"


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
    if harness.remaining() != RUNS:  # a signal at a build's end that came after a run was stored: finish that one
        harness.finish_all()


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
