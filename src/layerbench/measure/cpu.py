"""Where the CPU went during a run: CPU seconds per component (the server, sysbench, docker-proxy, qemu, the
containerd shim, everything else, idle), context switches, and cgroup CPU throttling, sampled from /proc and
/sys (through hosts/procfs.py) by one low-rate background thread; the result is the run's CPU record
(records/cpu.py Usage), as is wait_for_quiet's (QuietWait). Parsing is pure."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from layerbench.errors import RunFailed
from layerbench.hosts.procfs import (
    TICKS,
    ProcStat,
    all_processes,
    descendants,
    exists,
    parse_machine_stat,
    parse_steal,
    read,
    some_processes,
    tasks,
    uptime_ticks,
)
from layerbench.measure.pressure import pressure_files, pressure_window, read_pressure
from layerbench.records import QuietWait, Throttling, TopProcess, Usage

BUSY_SHARE = 0.15  # other processes above this share of all CPUs make a machine busy (analysis/busy.py)
FULL_SCAN_EVERY = 5


def top_processes(first: dict[int, ProcStat], last: dict[int, ProcStat], exclude: set[int],
                  count: int = 3) -> tuple[TopProcess, ...]:
    """The processes outside the run that used the most CPU between two full scans: pid, name, CPU seconds."""
    used = []
    for pid, stat in last.items():
        before = first.get(pid)
        ticks = stat.ticks - (before.ticks if before and before.start == stat.start else 0)
        if pid not in exclude and ticks > 0:
            used.append((ticks, pid))
    return tuple(TopProcess(last[pid].name or f"pid {pid}", round(ticks / TICKS, 2), pid)
                 for ticks, pid in sorted(used, reverse=True)[:count])


def parse_status(text: str) -> tuple[int, int]:
    """(voluntary, involuntary) context switches from /proc/<pid>/status (or a task's status)."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
            try:
                found[key] = int(value.strip())
            except ValueError:
                raise ValueError(f"non-numeric {key}") from None
    if len(found) != 2:
        raise ValueError("no context switch counts in status")
    return found["voluntary_ctxt_switches"], found["nonvoluntary_ctxt_switches"]


def parse_cpu_stat(text: str) -> dict[str, float]:
    """cgroup cpu.stat (v1: throttled_time in ns; v2: throttled_usec) as periods, throttled, seconds."""
    raw: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            raw[parts[0]] = int(parts[1])
    if "nr_periods" not in raw:
        raise ValueError("no nr_periods in cpu.stat")
    seconds = raw["throttled_time"] / 1e9 if "throttled_time" in raw else raw.get("throttled_usec", 0) / 1e6
    return {"nr_periods": raw["nr_periods"], "nr_throttled": raw.get("nr_throttled", 0), "throttled_seconds": seconds}


# --- reading ----------------------------------------------------------------------------------------------


def context_switches(pids: set[int]) -> tuple[int, int]:
    voluntary = involuntary = 0
    for pid in pids:
        for task in tasks(pid):
            text = read(f"/proc/{pid}/task/{task}/status")
            if text:
                try:
                    v, i = parse_status(text)
                except ValueError:
                    continue
                voluntary, involuntary = voluntary + v, involuntary + i
    return voluntary, involuntary


def cgroup_stats(dirs: list[Path]) -> dict[str, dict[str, float]]:
    out = {}
    for d in dirs:
        text = read(d / "cpu.stat")
        if text:
            try:
                out[str(d)] = parse_cpu_stat(text)
            except ValueError:
                continue
    return out


def busy_share(before: tuple[float, float], after: tuple[float, float]) -> float:
    """The share of all CPUs' time that was busy between two readings of /proc/stat."""
    busy, idle = after[0] - before[0], after[1] - before[1]
    return busy / (busy + idle) if busy + idle > 0 else 0.0


QUIET_STEP = 1.0  # seconds: wait_for_quiet's sample, so the shortest wait it can do (a campaign's waits are >= it)
HERE = "this machine"


@dataclass(frozen=True)
class QuietLoad:
    """Where wait_for_quiet reads the load of the machine the server runs on (`at`, for the record) and how: `read`
    gives cumulative (busy, not busy) counters of that machine, in any one unit (this machine's /proc/stat; an
    ssh: host's over its connection; a pod's node through the exec API, its server container's own CPU counted as
    not busy); None when it cannot be read yet (a pod off a node, before it starts: read after up())."""

    at: str
    read: Callable[[], tuple[float, float]] | None


def this_machine_load() -> tuple[float, float]:
    return parse_machine_stat(read("/proc/stat"))


LOCAL_LOAD = QuietLoad(HERE, this_machine_load)


def wait_for_quiet(max_seconds: float, threshold: float = BUSY_SHARE, step: float = QUIET_STEP,
                   load: QuietLoad = LOCAL_LOAD) -> QuietWait:
    """Before a run (nothing of the campaign's is running but, off a node, its idle server): wait, at most
    `max_seconds`, until the machine the server runs on (`load`) was busy for at most `threshold` of its CPU time
    during one `step`. Returns what happened, for the run's record; a reading that fails ends the wait, its error
    recorded (RunFailed or OSError from `load.read`)."""
    assert load.read is not None
    started, share = time.monotonic(), 0.0
    try:
        before = load.read()
        while True:
            time.sleep(step)
            after = load.read()
            share, before = busy_share(before, after), after
            waited = time.monotonic() - started
            if share <= threshold or waited >= max_seconds:
                return QuietWait(round(waited, 1), share <= threshold, round(share, 3), max_seconds, at=load.at)
    except (RunFailed, OSError, ValueError) as error:
        return QuietWait(round(time.monotonic() - started, 1), True, None, max_seconds, at=load.at,
                         error=f"{type(error).__name__}: {str(error)[:200]}")


def reaped_ticks(first: dict[int, ProcStat], last: dict[int, ProcStat], owner: dict[int, str],
                 present: set[int]) -> dict[str, int]:
    """Per component, the CPU of its processes that ended between two samples and were reaped by one of its own
    (a PostgreSQL backend whose connection closed in under a second, or before the last sample): the growth of its
    live processes' reaped-children time (cutime + cstime), less what the ended ones it reaped were last seen to have
    used (counted already). An ended process whose parent is not the component's (the client, reaped by the
    harness) is left as it was counted. `present`: the processes the last sample found."""
    out: dict[str, int] = {}
    for pid in present:
        name, stat = owner[pid], last[pid]
        out[name] = out.get(name, 0) + max(0, stat.child_ticks - first[pid].child_ticks)
    for pid, name in owner.items():
        stat = last[pid]
        if pid not in present and stat.ppid in present and owner[stat.ppid] == name:
            out[name] = out.get(name, 0) - stat.ticks - stat.child_ticks
    return {name: ticks for name, ticks in out.items() if ticks > 0}


# --- the sampler ------------------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the sampler has counted so far (its thread and stop() fill it; stop() makes the Usage record)."""

    samples: int = 0
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    ctx_voluntary: dict[str, int] = field(default_factory=dict)
    ctx_involuntary: dict[str, int] = field(default_factory=dict)


class ResourceSampler:
    """Samples once per `interval` in a daemon thread between start() and stop(); stop() gives the Usage."""

    def __init__(self, components: Callable[[], dict[str, list[int]]], cgroups: list[Path],
                 client_pids: Callable[[], list[int]], interval: float = 1.0) -> None:
        self.components, self.cgroups, self.client_pids, self.interval = components, cgroups, client_pids, interval
        self.first: dict[int, ProcStat] = {}  # pid -> first sample in the window (or a zero if born inside it)
        self.last: dict[int, ProcStat] = {}
        self.owner: dict[int, str] = {}
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="layerbench-sampler", daemon=True)
        self.tally = Tally()
        self.thread_cpu = 0.0
        self.scans: list[dict[int, ProcStat]] = []  # the first and the latest full scan, for the top others
        self.client_roots: list[int] = []
        self.rescan = False  # a full scan at the next sample: a new client process began (client_started)
        self.ctx_start: dict[str, tuple[int, int]] = {}
        self.present: set[int] = set()  # the component processes the latest sample found

    def start(self) -> None:
        self.started = time.monotonic()
        self.process_cpu = time.process_time()
        self.boot_ticks_at_start = uptime_ticks()
        text = read("/proc/stat")
        self.machine_start, self.steal_start = parse_machine_stat(text), parse_steal(text)
        self.cgroups_start = cgroup_stats(self.cgroups)
        self.pressure_files = pressure_files(self.cgroups)
        self.pressure_start = read_pressure(self.pressure_files)
        self.thread.start()

    def stop(self) -> Usage:
        harness = time.process_time() - self.process_cpu
        self.stop_event.set()
        self.thread.join(timeout=10)
        self._sample()
        return self._finish(harness)

    def _loop(self) -> None:
        began = time.thread_time()
        self._sample(ctx=True)
        while not self.stop_event.wait(self.interval):
            self._sample()
        self.thread_cpu = time.thread_time() - began

    def client_started(self) -> None:
        """A new client process has begun (pgbench's warm-up, then its measured run: a process each): look it up
        at the next sample, by a full scan that also finds the server processes its connections made (PostgreSQL
        forks one per connection), rather than at the next regular full scan, seconds later."""
        self.client_roots, self.rescan = [], True

    def _client_roots(self) -> list[int]:
        """The client's PIDs: looked up (a read of every process's command line, ~3 ms) only until found; a run
        has one client process, so the lookup is not repeated for the rest of the run."""
        if not self.client_roots:
            self.client_roots = self.client_pids()
        return self.client_roots

    def _members(self, procs: dict[int, ProcStat]) -> dict[int, str]:
        named = {**self.components(), "client": self._client_roots()}
        owner: dict[int, str] = {}
        for name, roots in named.items():
            for pid in descendants(list(roots), procs):
                owner.setdefault(pid, name)
        return owner

    def _sample(self, ctx: bool = False) -> None:
        """Every FULL_SCAN_EVERY-th sample scans all processes for new descendants; the others read only the
        processes already known (a server's process tree rarely changes), which keeps the sampler cheap."""
        if self.rescan or self.tally.samples % FULL_SCAN_EVERY == 0 or ctx:
            self.rescan = False
            procs = all_processes()
            owner = self._members(procs)
            self.scans = [*self.scans[:1], procs]
        else:
            procs = some_processes(list(self.owner))
            owner = {pid: self.owner[pid] for pid in procs}
        for pid, name in owner.items():
            stat = procs[pid]
            seen = self.first.get(pid)
            if seen is None or seen.start != stat.start:
                born_inside = stat.start >= self.boot_ticks_at_start
                self.first[pid] = ProcStat(pid, stat.ppid, 0, stat.start) if born_inside else stat
            self.last[pid] = stat
            self.owner[pid] = name
        self.present = set(owner)
        self.tally.samples += 1
        if ctx and not self.ctx_start:
            self.ctx_start = {n: context_switches({p for p, o in owner.items() if o == n}) for n in set(owner.values())}

    def _finish(self, harness_cpu: float) -> Usage:
        cpu = self.tally.cpu_seconds
        for pid, name in self.owner.items():
            ticks = self.last[pid].ticks - self.first[pid].ticks
            cpu[name] = cpu.get(name, 0.0) + max(ticks, 0) / TICKS
        for name, ticks in reaped_ticks(self.first, self.last, self.owner, self.present).items():
            cpu[name] = cpu.get(name, 0.0) + ticks / TICKS
        busy0, idle0 = self.machine_start
        text = read("/proc/stat")
        busy1, idle1 = parse_machine_stat(text)
        top = top_processes(self.scans[0], self.scans[-1], set(self.owner) | {os.getpid()}) if self.scans else ()
        cpu["other"] = max(0.0, (busy1 - busy0) / TICKS - sum(cpu.values()))
        cpu["idle"] = (idle1 - idle0) / TICKS
        self._context_switch_deltas()
        end = cgroup_stats(self.cgroups)
        throttling = {d: Throttling.from_json({k: end[d][k] - start.get(k, 0) for k in end[d]})
                      for d, start in self.cgroups_start.items() if d in end}
        pressure = pressure_window(self.pressure_start, read_pressure(self.pressure_files))
        t = self.tally
        return Usage(cpu, throttling, max(0, parse_steal(text) - self.steal_start) / TICKS, top,
                     time.monotonic() - self.started, t.samples, t.ctx_voluntary, t.ctx_involuntary, self.thread_cpu,
                     harness_cpu, pressure=pressure)

    def _context_switch_deltas(self) -> None:
        for name, (v0, i0) in self.ctx_start.items():
            pids = {p for p, o in self.owner.items() if o == name and exists(p)}
            v1, i1 = context_switches(pids)
            self.tally.ctx_voluntary[name] = max(0, v1 - v0)
            self.tally.ctx_involuntary[name] = max(0, i1 - i0)
