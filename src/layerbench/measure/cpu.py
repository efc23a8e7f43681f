"""Where the CPU went during a run: CPU seconds per component (the server, sysbench, docker-proxy, qemu, the
containerd shim, everything else, idle), context switches, and cgroup CPU throttling, sampled from /proc and
/sys by one low-rate background thread. Parsing is pure; reading /proc is kept to a few small functions."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

TICKS = os.sysconf("SC_CLK_TCK")
BUSY_SHARE = 0.15  # other processes above this share of all CPUs make a machine busy (analysis/busy.py)
FULL_SCAN_EVERY = 5


@dataclass(frozen=True)
class ProcStat:
    pid: int
    ppid: int
    ticks: int  # utime + stime, all threads
    start: int  # starttime in ticks since boot (detects PID reuse)
    name: str = ""  # the command name (comm), kept so a process that ended can still be named


def parse_proc_stat_line(text: str) -> ProcStat:
    """/proc/<pid>/stat; the command may hold spaces and parentheses, so split after the LAST ')'."""
    head, sep, tail = text.rpartition(")")
    if not sep or "(" not in head:
        raise ValueError("not a /proc/<pid>/stat line")
    fields = tail.split()
    if len(fields) < 20:
        raise ValueError("too few fields in /proc/<pid>/stat")
    try:
        pid, _, name = head.partition("(")
        return ProcStat(int(pid), int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[19]), name[:40])
    except ValueError:
        raise ValueError("non-numeric field in /proc/<pid>/stat") from None


def parse_machine_stat(text: str) -> tuple[int, int]:
    """(busy ticks, idle ticks) of all CPUs from /proc/stat's `cpu` line (idle includes iowait)."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            try:
                values = [int(v) for v in parts[1:9]]
            except ValueError:
                raise ValueError("non-numeric cpu line in /proc/stat") from None
            if len(values) < 5:
                raise ValueError("short cpu line in /proc/stat")
            idle = values[3] + values[4]
            return sum(values) - idle, idle
    raise ValueError("no cpu line in /proc/stat")


def parse_steal(text: str) -> int:
    """Steal ticks of all CPUs (time a hypervisor gave this VM's CPUs to others) from /proc/stat's `cpu` line."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            return int(parts[8]) if len(parts) > 8 and parts[8].isdigit() else 0
    return 0


def top_processes(first: dict[int, ProcStat], last: dict[int, ProcStat], exclude: set[int],
                  count: int = 3) -> list[dict[str, Any]]:
    """The processes outside the run that used the most CPU between two full scans: pid, name, CPU seconds."""
    used = []
    for pid, stat in last.items():
        before = first.get(pid)
        ticks = stat.ticks - (before.ticks if before and before.start == stat.start else 0)
        if pid not in exclude and ticks > 0:
            used.append((ticks, pid))
    return [{"pid": pid, "name": last[pid].name or f"pid {pid}", "cpu_seconds": round(ticks / TICKS, 2)}
            for ticks, pid in sorted(used, reverse=True)[:count]]


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


def read(path: str | Path) -> str | None:
    """A small /proc or /sys file, read with one system call (cheaper than open())."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 65536).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def some_processes(pids: list[int]) -> dict[int, ProcStat]:
    out = {}
    for pid in pids:
        text = read(f"/proc/{pid}/stat")
        if text:
            try:
                out[pid] = parse_proc_stat_line(text)
            except ValueError:
                continue
    return out


def all_processes() -> dict[int, ProcStat]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            text = read(f"/proc/{name}/stat")
            if text:
                try:
                    stat = parse_proc_stat_line(text)
                except ValueError:
                    continue
                out[stat.pid] = stat
    return out


def descendants(roots: list[int], procs: dict[int, ProcStat]) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in procs.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    found, stack = set(), [p for p in roots if p in procs]
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack += children.get(pid, [])
    return found


def context_switches(pids: set[int]) -> tuple[int, int]:
    voluntary = involuntary = 0
    for pid in pids:
        for task in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else []:
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


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of all CPUs' time that was busy between two readings of /proc/stat."""
    busy, idle = after[0] - before[0], after[1] - before[1]
    return busy / (busy + idle) if busy + idle > 0 else 0.0


def wait_for_quiet(max_seconds: float, threshold: float = BUSY_SHARE, step: float = 1.0) -> dict[str, Any]:
    """Before a run (nothing of the campaign's is running): wait, at most `max_seconds`, until the machine was
    busy for at most `threshold` of its CPU time during one `step`. Returns what happened, for the run's record."""
    started = time.monotonic()
    while True:
        before = parse_machine_stat(read("/proc/stat") or "")
        time.sleep(step)
        share = busy_share(before, parse_machine_stat(read("/proc/stat") or ""))
        waited = time.monotonic() - started
        if share <= threshold or waited >= max_seconds:
            return {"waited_seconds": round(waited, 1), "quiet": share <= threshold, "busy_share": round(share, 3),
                    "max_seconds": max_seconds}


# --- the result -------------------------------------------------------------------------------------------


@dataclass
class ResourceUsage:
    window_seconds: float = 0.0
    samples: int = 0
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # per component, plus "other" and "idle"
    ctx_voluntary: dict[str, int] = field(default_factory=dict)
    ctx_involuntary: dict[str, int] = field(default_factory=dict)
    throttling: dict[str, dict[str, float]] = field(default_factory=dict)  # cgroup -> deltas
    sampler_cpu_seconds: float = 0.0
    harness_cpu_seconds: float = 0.0  # all of layerbench's own CPU in the window (sampler included)
    harness_cpus: str | None = None  # the CPUs the harness was moved to, None: it was not (harness.py)
    steal_seconds: float = 0.0  # CPU time the hypervisor gave to other guests (/proc/stat), part of "other"
    top_other: list[dict[str, Any]] = field(default_factory=list)  # busiest processes outside the run
    # CPU per 1,000 transactions is computed by the analysis only (analysis/aggregate.py per_1000); stores of
    # earlier versions also hold a copy under "per_1000_transactions", which from_dict ignores

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResourceUsage:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


# --- the sampler ------------------------------------------------------------------------------------------


class ResourceSampler:
    """Samples once per `interval` in a daemon thread between start() and stop()."""

    def __init__(self, components: Callable[[], dict[str, list[int]]], cgroups: list[Path],
                 client_pids: Callable[[], list[int]], interval: float = 1.0) -> None:
        self.components, self.cgroups, self.client_pids, self.interval = components, cgroups, client_pids, interval
        self.first: dict[int, ProcStat] = {}  # pid -> first sample in the window (or a zero if born inside it)
        self.last: dict[int, ProcStat] = {}
        self.owner: dict[int, str] = {}
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="layerbench-sampler", daemon=True)
        self.usage = ResourceUsage()
        self.thread_cpu = 0.0
        self.scans: list[dict[int, ProcStat]] = []  # the first and the latest full scan, for the top others
        self.client_roots: list[int] = []

    def start(self) -> None:
        self.started = time.monotonic()
        self.process_cpu = time.process_time()
        self.boot_ticks_at_start = self._uptime_ticks()
        text = read("/proc/stat") or ""
        self.machine_start, self.steal_start = parse_machine_stat(text), parse_steal(text)
        self.cgroups_start = cgroup_stats(self.cgroups)
        self.thread.start()

    def stop(self) -> ResourceUsage:
        self.usage.harness_cpu_seconds = time.process_time() - self.process_cpu
        self.stop_event.set()
        self.thread.join(timeout=10)
        self._sample()
        self._finish()
        return self.usage

    def _loop(self) -> None:
        began = time.thread_time()
        self._sample(ctx=True)
        while not self.stop_event.wait(self.interval):
            self._sample()
        self.thread_cpu = time.thread_time() - began

    @staticmethod
    def _uptime_ticks() -> int:
        text = read("/proc/uptime") or "0"
        return int(float(text.split()[0]) * TICKS)

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
        if self.usage.samples % FULL_SCAN_EVERY == 0 or ctx:
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
        self.usage.samples += 1
        if ctx and not self.usage.ctx_voluntary:
            self.ctx_start = {n: context_switches({p for p, o in owner.items() if o == n}) for n in set(owner.values())}

    def _finish(self) -> None:
        u = self.usage
        u.window_seconds = time.monotonic() - self.started
        for pid, name in self.owner.items():
            ticks = self.last[pid].ticks - self.first[pid].ticks
            u.cpu_seconds[name] = u.cpu_seconds.get(name, 0.0) + max(ticks, 0) / TICKS
        busy0, idle0 = self.machine_start
        text = read("/proc/stat") or ""
        busy1, idle1 = parse_machine_stat(text)
        u.steal_seconds = max(0, parse_steal(text) - self.steal_start) / TICKS
        if self.scans:
            u.top_other = top_processes(self.scans[0], self.scans[-1], set(self.owner) | {os.getpid()})
        named = sum(u.cpu_seconds.values())
        u.cpu_seconds["other"] = max(0.0, (busy1 - busy0) / TICKS - named)
        u.cpu_seconds["idle"] = (idle1 - idle0) / TICKS
        self._context_switch_deltas()
        end = cgroup_stats(self.cgroups)
        u.throttling = {d: {k: end[d][k] - start.get(k, 0) for k in end[d]}
                        for d, start in self.cgroups_start.items() if d in end}
        u.sampler_cpu_seconds = self.thread_cpu

    def _context_switch_deltas(self) -> None:
        start = getattr(self, "ctx_start", {})
        for name in start:
            pids = {p for p, o in self.owner.items() if o == name and os.path.isdir(f"/proc/{p}")}
            v1, i1 = context_switches(pids)
            self.usage.ctx_voluntary[name] = max(0, v1 - start[name][0])
            self.usage.ctx_involuntary[name] = max(0, i1 - start[name][1])
