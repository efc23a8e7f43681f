"""Neighbours while a run is measured: each load generator started where the campaign places it (placed.py: a
process here through hosts/procs.py, a labelled container, a labelled pod beside a kubernetes server, a process
on an ssh: host; a network neighbour's iperf3 server on its peer host; a database neighbour's server and sysbench
through the starter run/ hands in), with an owner record (hosts/owners.py) or a container or pod label written
before it starts, so that `layerbench clean` finds it after a SIGKILL of the harness; checked to be running at the
asked intensity; stopped at the end of the measured window; and its own report of what it achieved read back."""

from __future__ import annotations

import contextlib
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from layerbench.errors import RunFailed
from layerbench.hosts import owners, procs
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.inventory import HostEntry
from layerbench.measure.cpu import TICKS, all_processes, descendants
from layerbench.neighbours import tools
from layerbench.neighbours.model import Neighbour
from layerbench.neighbours.network import peer_of, start_peer
from layerbench.neighbours.placed import (
    ContainerRequest,
    ContainerStarter,
    DatabaseRequest,
    DatabaseStarter,
    LocalProcess,
    Placed,
)
from layerbench.neighbours.remote import RemoteNeighbour
from layerbench.records.neighbours import NeighbourRecords, NeighbourRun

PROBE_SECONDS = 1.0  # how long the start check watches the neighbours' CPU
LOW_SHARE = 0.5  # a CPU neighbour below this share of its asked duty cycle is said to be short of its intensity
HINTS = {"stress-ng": "install stress-ng (scripts/setup does it)", "fio": "install fio (scripts/setup does it)",
         "iperf3": "install iperf3 (scripts/setup does it)", "sysbench": "install sysbench (scripts/setup does it)"}
TOOL = {"cpu": "stress-ng", "memory": "stress-ng", "disk": "fio", "network": "iperf3", "database": "sysbench"}


@dataclass
class Started:
    """One neighbour's processes (the iperf3 server first, when it has one), its report file, its folder."""

    neighbour: Neighbour
    labels: list[str]
    processes: list[Placed]
    report: Path
    folder: Path | None = None
    check: dict[str, Any] = field(default_factory=dict)


class NeighboursRunning:
    """`with NeighboursRunning(...)`: the run's neighbours start on entry and stop on exit; `components`
    names their processes for the resource sampler (`neighbour:<name>`), `record()` is what they did."""

    def __init__(self, neighbours: list[Neighbour], run_dir: Path, label: str, data_folder: Path,
                 hosts: dict[str, HostEntry] | None = None, *, campaign: str = "",
                 containers: ContainerStarter | None = None, pods: ContainerStarter | None = None,
                 databases: DatabaseStarter | None = None) -> None:
        self.neighbours, self.folder, self.label = neighbours, run_dir / "neighbours", label
        self.data_folder, self.hosts, self.campaign = data_folder, hosts, campaign
        self.starters, self.databases = {"docker": containers, "kubernetes": pods}, databases  # who starts them
        self.started: list[Started] = []
        self.runs: list[NeighbourRun] = []  # what each did, once stopped
        self.facts: dict[str, Any] | None = None  # a run's facts: `neighbours` is written there on exit

    def __bool__(self) -> bool:
        return bool(self.neighbours)

    def __enter__(self) -> NeighboursRunning:
        try:
            for neighbour in self.neighbours:
                self.started.append(self._start(neighbour))
            if self.started:  # none: nothing to watch, no wait
                self._check()
        except BaseException:
            self._stop_all()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        with signals_deferred():
            self.runs = self._stop_all()
        if self.facts is not None and self.neighbours:
            self.facts["neighbours"] = self.record().to_json()

    def components(self) -> dict[str, list[int]]:
        return {f"neighbour:{s.neighbour.name}": [pid for p in s.processes for pid in p.pids()]
                for s in self.started}

    def on_host(self, host: str) -> dict[str, list[int]]:
        """The PIDs, in that host's kernel, of the neighbours placed there over SSH (`neighbour:<name>`): the host's
        CPU reading counts them as the neighbours', not as `other` (measure/remote_cpu.py)."""
        return {f"neighbour:{s.neighbour.name}": [p.pid for p in s.processes if isinstance(p, RemoteNeighbour)
                                                  and p.host.name == host and p.pid]
                for s in self.started if s.neighbour.placement == "ssh" and s.neighbour.host == host}

    def with_components(self, others: Callable[[], dict[str, list[int]]]) -> Callable[[], dict[str, list[int]]]:
        return lambda: {**others(), **self.components()}

    def record(self) -> NeighbourRecords:
        return NeighbourRecords(tuple(self.runs))

    # --- starting ------------------------------------------------------------------------------------------

    def _start(self, neighbour: Neighbour) -> Started:
        if neighbour.placement == "host" or (neighbour.kind == "network" and peer_of(neighbour, self.hosts).host
                                             is None):  # a container has its tools in its image; an ssh: host's:
            procs.require_program(TOOL[neighbour.kind], HINTS[TOOL[neighbour.kind]])  # checked by preflight
        self.folder.mkdir(parents=True, exist_ok=True)
        label = f"{self.label}-nb-{neighbour.name}"
        if neighbour.placement == "ssh" and neighbour.kind != "network":
            return self._start_remote(neighbour, label)
        if neighbour.kind in ("cpu", "memory"):
            report = self.folder / f"{neighbour.name}.stress-ng.yaml"
            return Started(neighbour, [label], [self._spawn(label, neighbour, tools.stress_ng_command(
                neighbour, report), str(report))], report)
        if neighbour.kind == "disk":
            return self._start_disk(neighbour, label)
        if neighbour.kind == "database":
            return self._start_database(neighbour, label)
        return self._start_network(neighbour, label)

    def _start_database(self, neighbour: Neighbour, label: str) -> Started:
        """Its own server, dataset and sysbench (run/neighbour_database.py, handed in as `databases`); what it
        achieved is read from its sysbench's output."""
        if self.databases is None:
            raise RunFailed(f"neighbour {neighbour.name}: a database neighbour, but no way to start one was given "
                            "to this run")
        report = self.folder / f"{neighbour.name}.sysbench.log"
        placed = self.databases(DatabaseRequest(label, self.campaign, neighbour, self.folder, self.data_folder,
                                                report))
        return Started(neighbour, [], [placed], report)

    def _spawn(self, label: str, neighbour: Neighbour, cmd: list[str], marker: str,
               paths: list[Path] | None = None, log: str = "", *, as_asked: bool = True,
               network: bool = False) -> Placed:
        """The owner record first (found by `clean` through `marker`, a path unique to this run), then the
        process, niced and pinned as asked, in one step that a signal cannot split. In a container or a pod: the
        container or pod (labelled, so `clean` finds it) with this run's folders mounted at their own paths, on
        Docker's bridge network when it needs one (`network`). `as_asked` False: a process here, neither niced
        nor pinned nor in a container (a network neighbour's peer)."""
        full = [*(["nice", "-n", str(neighbour.nice)] if neighbour.nice and as_asked else []), *cmd]
        log_path = self.folder / f"{neighbour.name}{log}.log"
        if neighbour.placement in self.starters and as_asked:
            starter = self.starters[neighbour.placement]
            if starter is None:
                raise RunFailed(f"neighbour {neighbour.name}: placement {neighbour.placement}, but this run's server "
                                "gave no such placement")
            with signals_deferred():
                owners.record(label, pid=None, marker="", paths=paths or [])
            return starter(ContainerRequest(label, self.campaign, neighbour, full, [self.folder, *(paths or [])],
                                            log_path, "bridge" if network else "none"))
        cpus = neighbour.cpus if as_asked else None
        with signals_deferred():
            owners.record(label, pid=None, marker=marker, paths=paths or [])
            return LocalProcess(procs.start(f"neighbour {neighbour.name}", procs.with_cpus(full, cpus),
                                            log_path=log_path))

    def _start_remote(self, neighbour: Neighbour, label: str) -> Started:
        """On an ssh: host: its own folder there (noted before it exists), the tool started with setsid, its
        report copied back here when it stops (neighbours/remote.py)."""
        entry = (self.hosts or {}).get(neighbour.host or "")
        if entry is None:
            raise RunFailed(f"neighbour {neighbour.name}: host {neighbour.host} is not in `hosts:`")
        suffix = {"cpu": "stress-ng.yaml", "memory": "stress-ng.yaml", "disk": "fio.json"}[neighbour.kind]
        report = self.folder / f"{neighbour.name}.{suffix}"
        placed = RemoteNeighbour.start(neighbour, label, entry, report, self.folder / f"{neighbour.name}.log")
        return Started(neighbour, [], [placed], report)

    def _start_disk(self, neighbour: Neighbour, label: str) -> Started:
        base = Path(neighbour.folder) if neighbour.folder else self.data_folder
        folder = base / f"lb-neighbour-{neighbour.name}-{secrets.token_hex(4)}"
        report = self.folder / f"{neighbour.name}.fio.json"
        with signals_deferred():  # noted before it exists: a SIGKILL in between leaves nothing `clean` misses
            owners.record(label, pid=None, marker=str(folder), paths=[folder])
            folder.mkdir(parents=True)
        proc = self._spawn(label, neighbour, tools.fio_command(neighbour, folder, report), str(folder), [folder])
        return Started(neighbour, [label], [proc], report, folder)

    def _start_network(self, neighbour: Neighbour, label: str) -> Started:
        """iperf3's server on its peer (here, or on an ssh: host), listening before its client starts where the
        neighbour is placed (here, in a container on Docker's bridge network, or on its ssh: host)."""
        peer = peer_of(neighbour, self.hosts)
        report = self.folder / f"{neighbour.name}.iperf3.json"
        spawn = lambda name, cmd, marker: self._spawn(name, neighbour, cmd, marker, log="-server",  # noqa: E731
                                                      as_asked=False)
        server, port = start_peer(neighbour, label, peer, self.folder, spawn)
        here = ([f"{label}-server"] if peer.host is None else []) + ([label] if neighbour.placement != "ssh" else [])
        started = Started(neighbour, here, [server], report)  # an ssh: host's records go when the host confirms
        try:
            if neighbour.placement == "ssh":
                entry = (self.hosts or {}).get(neighbour.host or "")
                if entry is None:
                    raise RunFailed(f"neighbour {neighbour.name}: host {neighbour.host} is not in `hosts:`")
                client = RemoteNeighbour.start(
                    neighbour, label, entry, report, self.folder / f"{neighbour.name}.log",
                    tool=lambda path: tools.iperf3_client_command(neighbour, peer.address, port, Path(path)))
            else:
                command = tools.iperf3_client_command(neighbour, peer.address, port, report)
                client = self._spawn(label, neighbour, command, str(report), network=True)
        except BaseException:
            self._stop_one(started)
            raise
        started.processes.append(client)
        return started

    # --- the check at the start -------------------------------------------------------------------------

    def _check(self) -> None:
        """Watch every neighbour for PROBE_SECONDS: each must still run; a CPU neighbour's workers are measured
        against the asked duty cycle (a shortfall is recorded as a warning: the CPUs are shared); start_share."""
        there = read_there(self.started)
        before = all_processes()
        time.sleep(PROBE_SECONDS)
        after = all_processes()
        there = {key: (there[key], found) for key, found in read_there(self.started).items() if key in there}
        for s in self.started:
            dead = [p for p in s.processes if not p.alive()]
            if dead:
                raise RunFailed(f"neighbour {s.neighbour.name}: {TOOL[s.neighbour.kind]} stopped at its start "
                                f"(exit code {dead[0].exit_code()}); {dead[0].tail(3) or 'no output'}")
            if s.neighbour.placement == "ssh":  # another kernel's processes: running, its CPU not read here
                s.check = {"running": True}
                continue
            s.check = {"running": True, "cpu_percent": round(start_share(s, before, after, there), 1)}
            for placed in s.processes:
                s.check |= placed.facts()
            if s.neighbour.kind == "cpu":
                asked = s.neighbour.worker_count * s.neighbour.duty_cycle
                s.check |= {"asked_cpu_percent": asked, "at_intensity": s.check["cpu_percent"] >= LOW_SHARE * asked}

    # --- stopping -------------------------------------------------------------------------------------------

    def _stop_all(self) -> list[NeighbourRun]:
        runs = []
        for s in reversed(self.started):
            runs.insert(0, self._stop_one(s))
        self.started = []
        return runs

    def _stop_one(self, s: Started) -> NeighbourRun:
        """Stop (SIGTERM: each tool writes its report), reap, read what it achieved, remove its files."""
        codes = [p.stop(timeout=15) for p in reversed(s.processes)]  # the client before the iperf3 server
        achieved, error = achieved_of(s)
        if s.folder is not None:
            shutil.rmtree(s.folder, ignore_errors=True)
        for label in s.labels:
            owners.forget(label)
        return run_record(s, achieved, error, codes)


def start_share(s: Started, before: dict[int, Any], after: dict[int, Any],
                there: dict[int, tuple[tuple[float, float], tuple[float, float]]]) -> float:
    """A neighbour's CPU percent over the start check: its processes in this machine's kernel (`before`, `after`:
    all_processes), plus those whose kernel this machine's is not (a pod on another machine's node), measured where
    they run (Placed.cpu_seconds: `there`, two readings and their times) over the time between their readings."""
    pids = descendants([pid for p in s.processes for pid in p.pids()], after)
    ticks = sum(after[p].ticks - (before[p].ticks if p in before and before[p].start == after[p].start else 0)
                for p in pids)
    share = 100 * ticks / TICKS / PROBE_SECONDS
    for (first, at), (last, then) in (there[id(p)] for p in s.processes if id(p) in there):
        share += 100 * max(0.0, last - first) / max(then - at, PROBE_SECONDS)
    return share


def read_there(started: list[Started]) -> dict[int, tuple[float, float]]:
    """The CPU seconds of each started process read where it runs (a pod off this machine), and when (the
    middle of its reading); RunFailed names the neighbour whose reading failed."""
    out = {}
    for s in started:
        for placed in s.processes:
            at = time.monotonic()
            try:
                used = placed.cpu_seconds()
            except RunFailed as error:
                raise RunFailed(f"neighbour {s.neighbour.name}: its CPU could not be read where it runs ({error})"
                                ) from None
            if used is not None:
                out[id(placed)] = (used, (at + time.monotonic()) / 2)
    return out


def achieved_of(s: Started) -> tuple[dict[str, float], str | None]:
    """What the neighbour's tool reported it achieved (a network neighbour's received rate from its peer's report
    when its stopped client says 0), or why that is missing."""
    parse = {"cpu": tools.stress_ng_achieved, "memory": tools.stress_ng_achieved, "disk": tools.fio_achieved,
             "network": tools.iperf3_achieved, "database": tools.sysbench_achieved}[s.neighbour.kind]
    try:
        achieved = parse(s.report.read_text(encoding="utf-8", errors="replace"))
        if s.neighbour.kind == "network" and not achieved.get("received_bits_per_second"):
            peer = s.report.with_name(f"{s.neighbour.name}.iperf3-server.json")
            with contextlib.suppress(OSError, ValueError):
                achieved["received_bits_per_second"] = tools.iperf3_peer_received(peer.read_text(encoding="utf-8"))
        return achieved, None
    except (OSError, ValueError, KeyError, IndexError, TypeError) as error:
        return {}, f"no report from {TOOL[s.neighbour.kind]} ({type(error).__name__}: {str(error)[:120]})"


def run_record(s: Started, achieved: dict[str, float], error: str | None, codes: list[int | None]) -> NeighbourRun:
    n, warnings = s.neighbour, []
    if s.check.get("at_intensity") is False:
        warnings.append(f"at its start it used {s.check['cpu_percent']:.0f} % CPU of the {s.check['asked_cpu_percent']}"
                        " % asked (the CPUs were shared)")
    return NeighbourRun(n.name, n.kind, n.placement, n.cpus, n.nice, n.intensity(), TOOL[n.kind],
                        n.model_dump(mode="json", exclude_none=True), dict(s.check), achieved, tuple(warnings), error,
                        tuple(c for c in codes if c is not None))
