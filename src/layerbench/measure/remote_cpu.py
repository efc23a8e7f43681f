"""Where the CPU went on a server's ssh: host during a run: one small sh script prints that host's clock tick,
uptime, /proc/stat `cpu` line (steal included), CPU pressure (/proc/pressure/cpu) and every process's
/proc/<pid>/stat; it runs at the start and at the end of the
window (two SSH round trips over the shared connection, no thread, nothing left on the host). The CPU seconds
of each component (the backend's PIDs on that host and their descendants), `other` and `idle` come from the two
readings with hosts/procfs.py's parsers, so a remote server is accounted like a local one.

io_reading() does the same for the I/O window of measure/io.py: one script prints every process's stat line and
its /proc/<pid>/io (shell builtins only, no process started per PID), read at the window's two marks; the
counters of the backend's processes on that host are kept under `<component>@<host>`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from layerbench.errors import RunFailed
from layerbench.hosts.inventory import Host
from layerbench.hosts.procfs import (
    ProcStat,
    descendants,
    parse_machine_stat,
    parse_namespace_lines,
    parse_proc_stat_line,
    parse_steal,
)
from layerbench.measure.cpu import QuietLoad, top_processes
from layerbench.measure.io import Procs, parse_proc_io
from layerbench.measure.pressure import parse_pressure, pressure_window
from layerbench.records.cpu import TopProcess, Usage

CLOCK = 'echo "TICK $(getconf CLK_TCK)"; echo "UPTIME $(cut -d" " -f1 /proc/uptime)"; '
# The host's own cgroup, when its init runs in one (a machine that shares a kernel: the isolated lab's hosts, an LXC
# container): `CG <CPU nanoseconds> <path>` from cpuacct (v1) or cpu.stat (v2); nothing on a machine of its own
# (init in the root cgroup, or in systemd's /init.scope on v2), whose /proc/stat is its own.
CGROUP = """c=$(awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ {print $3; exit}' /proc/1/cgroup 2>/dev/null)
if [ -n "$c" ]; then
  f=/sys/fs/cgroup/cpuacct$c/cpuacct.usage
  [ "$c" != / ] && [ -r "$f" ] && echo "CG $(cat "$f") $c"
else
  c=$(sed -n 's/^0:://p' /proc/1/cgroup 2>/dev/null)
  case $c in ""|/|/init.scope) ;; *) u=$(awk '$1 == "usage_usec" {print $2}' "/sys/fs/cgroup$c/cpu.stat" 2>/dev/null)
    [ -n "$u" ] && echo "CG ${u}000 $c";; esac
fi
"""
SCRIPT = (CLOCK + CGROUP + 'grep "^cpu " /proc/stat; sed "s/^/PSI /" /proc/pressure/cpu 2>/dev/null; '
          'for f in /proc/[0-9]*/stat; do read -r l < "$f" 2>/dev/null && echo "P $l"; done; true')
NAMESPACES = "; find /proc/[0-9]*/ns/net -maxdepth 0 -printf 'N %p %l\\n' 2>/dev/null; true"  # one process


IO_SCRIPT = (CLOCK +
             'for d in /proc/[0-9]*; do read -r l < "$d/stat" 2>/dev/null || continue; echo "P $l"; '
             '{ c=""; while read -r k v; do c="$c $k$v"; done < "$d/io"; echo "IO ${d#/proc/}$c"; } 2>/dev/null; '
             'done; true')


@dataclass
class Reading:
    tick: int = 100
    uptime_ticks: int = 0
    machine: tuple[int, int] = (0, 0)  # busy, idle ticks of all CPUs
    procs: dict[int, ProcStat] = field(default_factory=dict)
    steal: int = 0  # ticks of all CPUs
    namespaces: dict[int, str] = field(default_factory=dict)  # pid -> network namespace (with NAMESPACES)
    pressure: dict[str, int] = field(default_factory=dict)  # the host's CPU pressure (PSI) counters, microseconds
    cgroup: tuple[int, str] | None = None  # the host's own cgroup (CPU nanoseconds, path), when its init is in one


def parse_reading(text: str) -> Reading:
    """The script's output; unreadable lines are skipped (a process may end while it is read)."""
    reading = Reading()
    with contextlib.suppress(ValueError):
        reading.machine = parse_machine_stat(text)
        reading.steal = parse_steal(text)
    reading.namespaces = parse_namespace_lines(text)
    reading.pressure = parse_pressure("\n".join(line[4:] for line in text.splitlines() if line.startswith("PSI ")))
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        with contextlib.suppress(ValueError):
            if key == "TICK" and 0 < int(rest) < 100_000:
                reading.tick = int(rest)
            elif key == "UPTIME":
                reading.uptime_ticks = int(float(rest) * reading.tick)
            elif key == "CG":
                used, _, path = rest.partition(" ")
                reading.cgroup = (int(used), path.strip()) if int(used) >= 0 and path.startswith("/") else None
            elif key == "P":
                stat = parse_proc_stat_line(rest)
                reading.procs[stat.pid] = stat
    return reading


def component_seconds(first: Reading, last: Reading, roots: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds per component between two readings, plus `other` (the rest of the busy time) and `idle`. The
    busy time is the host's cgroup's when its init runs in one (CGROUP), else its /proc/stat's.
    A process born after the first reading counts from zero; a PID reused in between is not mixed up."""
    tick, out = last.tick, {}
    seen: set[int] = set()
    for name, pids in roots.items():
        ticks = 0
        for pid in descendants(list(pids), last.procs) - seen:
            seen.add(pid)
            stat, before = last.procs[pid], first.procs.get(pid)
            same = before is not None and before.start == stat.start
            ticks += max(0, stat.ticks - before.ticks) if same and before else \
                stat.ticks if stat.start >= first.uptime_ticks else 0
        out[name] = ticks / tick
    busy = max(0, last.machine[0] - first.machine[0]) / tick
    if first.cgroup is not None and last.cgroup is not None and first.cgroup[1] == last.cgroup[1]:
        busy = max(0, last.cgroup[0] - first.cgroup[0]) / 1e9  # the host's own, not its kernel's other tenants'
    out["other"] = max(0.0, busy - sum(out.values()))
    out["idle"] = max(0, last.machine[1] - first.machine[1]) / tick
    return out


def host_load(host: Host) -> QuietLoad:
    """wait_for_quiet's reading of an ssh: host over the shared connection, the busy time RemoteCpuWindow reads for
    the run's `other@<host>`: its own cgroup's when its init runs in one (CGROUP: a slice of a shared kernel, like
    the isolated lab's hosts), else its /proc/stat `cpu` line (a RunFailed or a ValueError ends the wait)."""

    def read() -> tuple[float, float]:
        done = host.shell(CLOCK + CGROUP + 'grep "^cpu " /proc/stat', name=f"load on {host.name}", timeout=30)
        return load_counters(parse_reading(done.output), parse_machine_stat(done.output))

    return QuietLoad(host.name, read)


def load_counters(reading: Reading, machine: tuple[int, int]) -> tuple[float, float]:
    """(busy, not busy) seconds of all CPUs: the host's cgroup's busy time against the kernel's whole time when
    there is one, else the kernel's own split."""
    if reading.cgroup is None:
        return float(machine[0]), float(machine[1])
    total = (machine[0] + machine[1]) / reading.tick
    busy = reading.cgroup[0] / 1e9
    return busy, max(0.0, total - busy)


class ServerCpuWindow(Protocol):
    """A reader of the server's CPU where it runs, when this machine's sampler cannot see it: start() and stop()
    around the measured window, then usage_of() the run's Usage with its figures (RemoteCpuWindow: an ssh: host;
    backends/kubernetes/podcpu.py: a pod off this machine), facts() what the run's record says about the source."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def result(self) -> dict[str, float]: ...
    def usage_of(self, usage: Usage) -> Usage: ...
    def facts(self) -> dict[str, Any]: ...
    def io_reader(self) -> Callable[[], tuple[int, Procs]] | None: ...


class RemoteCpuWindow:
    """start() and stop() around the measured window; result() the CPU seconds per component on the host, top()
    its busiest processes outside them, steal_seconds() its hypervisor steal. `sharers`: other hosts of the
    campaign on this host's kernel -> their network namespace (hosts/remote.py:kernel_sharers); their processes
    are counted as `other@<host>`, not as this host's `other`."""

    def __init__(self, host: Host, components: Callable[[], dict[str, list[int]]],
                 sharers: dict[str, str] | None = None) -> None:
        self.host, self.components, self.sharers = host, components, dict(sharers or {})
        self.first: Reading | None = None
        self.last: Reading | None = None
        self.error: str | None = None

    def _read(self) -> Reading | None:
        script = SCRIPT + (NAMESPACES if self.sharers else "")
        try:
            done = self.host.shell(script, name=f"cpu on {self.host.name}", timeout=30)
        except RunFailed as error:
            self.error = str(error)
            return None
        return parse_reading(done.output)

    def start(self) -> None:
        self.first = self._read()

    def stop(self) -> None:
        self.last = self._read()

    def roots(self) -> dict[str, list[int]]:
        """The components' PIDs, then each sharing host's processes (those of its namespace) as `other@<host>`."""
        found = self.components()
        if self.last is not None:
            for name, namespace in sorted(self.sharers.items()):
                found[f"other@{name}"] = [pid for pid, ns in self.last.namespaces.items() if ns == namespace]
        return found

    def result(self) -> dict[str, float]:
        if self.first is None or self.last is None:
            return {}
        return component_seconds(self.first, self.last, self.roots())

    def top(self) -> tuple[TopProcess, ...]:
        """The host's busiest processes outside the components (and outside the sharing hosts')."""
        if self.first is None or self.last is None:
            return ()
        counted = {pid for pids in self.roots().values() for pid in descendants(list(pids), self.last.procs)}
        return top_processes(self.first.procs, self.last.procs, counted)

    def pressure(self) -> dict[str, dict[str, float]]:
        """The host's CPU pressure over the window, as `system` (the machine the server ran on); {} without PSI."""
        if self.first is None or self.last is None or not self.first.pressure:
            return {}
        return pressure_window({"system": self.first.pressure}, {"system": self.last.pressure})

    def steal_seconds(self) -> float:
        if self.first is None or self.last is None:
            return 0.0
        return max(0, self.last.steal - self.first.steal) / self.last.tick

    def usage_of(self, usage: Usage) -> Usage:
        """With the server on an ssh: host, the busiest others, the steal and the CPU pressure are that host's, not
        the harness's (its CPU per component: run/execution.py placed_cpu)."""
        return replace(usage, top_other=self.top(), steal_seconds=self.steal_seconds(), pressure=self.pressure())

    def facts(self) -> dict[str, Any]:
        return {}  # the record's placement names the host

    def io_reader(self) -> Callable[[], tuple[int, Procs]] | None:
        return self.io_reading

    def io_reading(self) -> tuple[int, Procs]:
        """The I/O counters of the backend's processes on the host now (measure/io.py IoWindow's `remote`)."""
        roots = self.components()
        done = self.host.shell(IO_SCRIPT, name=f"I/O on {self.host.name}", timeout=30)
        return component_io(done.output, roots, self.host.name)


def parse_io_lines(text: str) -> dict[int, dict[str, int]]:
    """IO_SCRIPT's `IO <pid> rchar:1 wchar:2 ...` lines -> {pid: counters}; malformed lines are skipped."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[0] != "IO" or not parts[1].isdigit():
            continue
        with contextlib.suppress(ValueError):
            counters = parse_proc_io("\n".join(p.replace(":", ": ", 1) for p in parts[2:]))
            if counters:
                out[int(parts[1])] = counters
    return out


def component_io(text: str, roots: dict[str, list[int]], host: str) -> tuple[int, Procs]:
    """(the host's uptime in ticks, {pid: (component@host, start, counters)}) for the components' processes and
    their descendants in IO_SCRIPT's output; a process is counted under the first component that holds it."""
    reading, counters = parse_reading(text), parse_io_lines(text)
    out: Procs = {}
    for name, pids in roots.items():
        for pid in sorted(descendants(list(pids), reading.procs)):
            if pid not in out and pid in counters:
                out[pid] = (f"{name}@{host}", reading.procs[pid].start, counters[pid])
    return reading.uptime_ticks, out
