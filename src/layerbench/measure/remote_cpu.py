"""Where the CPU went on a server's ssh: host during a run: one small sh script prints that host's clock tick,
uptime, /proc/stat `cpu` line (steal included), CPU pressure (/proc/pressure/cpu) and every process's
/proc/<pid>/stat; it runs at the start and at the end of the
window (two SSH round trips over the shared connection, no thread, nothing left on the host). The CPU seconds
of each component (the backend's PIDs on that host and their descendants), `other` and `idle` come from the two
readings with hosts/procfs.py's parsers, so a remote server is accounted like a local one. The sshd sessions
that serve this harness there (the shared connection that runs the script, and the connections of its SSH forwards,
whose CPU grows with the traffic they carry) are `transport@<host>`, not the host's `other`.

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
    parse_socket_lines,
    parse_steal,
    parse_tcp_connections,
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
# The harness's own SSH sessions there (`transport@<host>`): this connection's peer (SSH_CONNECTION), the script's
# PID (its sshd session is its nearest sshd ancestor), and the sockets of every sshd process (find -printf, one
# process per sshd) with the host's TCP table, where the sessions carrying this harness's forwards are those whose
# peer is one of the forwards' source ports here (hosts/forward.py source_ports).
TRANSPORT = (' echo "CONN $SSH_CONNECTION"; echo "SELF $$"; '
             'for d in /proc/[0-9]*; do read -r c < "$d/comm" 2>/dev/null || continue; '
             'case $c in sshd*) find "$d/fd" -lname "socket:*" -printf "S %p %l\\n" 2>/dev/null;; esac; '
             'done; sed "s/^/T /" /proc/net/tcp /proc/net/tcp6 2>/dev/null; true')
SCRIPT = (CLOCK + CGROUP + 'grep "^cpu " /proc/stat; sed "s/^/PSI /" /proc/pressure/cpu 2>/dev/null; '
          'for f in /proc/[0-9]*/stat; do read -r l < "$f" 2>/dev/null && echo "P $l"; done; true;' + TRANSPORT)
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
    connection: tuple[str, int, int] | None = None  # SSH_CONNECTION: the harness's address and port, sshd's port
    script: int | None = None  # the script's PID
    sockets: dict[int, set[int]] = field(default_factory=dict)  # an sshd process -> its socket inodes
    tcp: dict[int, tuple[str, int, str, int]] = field(default_factory=dict)  # the host's TCP table by inode


def parse_reading(text: str) -> Reading:
    """The script's output; unreadable lines are skipped (a process may end while it is read)."""
    reading = Reading()
    with contextlib.suppress(ValueError):
        reading.machine = parse_machine_stat(text)
        reading.steal = parse_steal(text)
    reading.namespaces = parse_namespace_lines(text)
    reading.sockets = parse_socket_lines(text)
    reading.tcp = parse_tcp_connections("\n".join(line[2:] for line in text.splitlines() if line.startswith("T ")))
    reading.pressure = parse_pressure("\n".join(line[4:] for line in text.splitlines() if line.startswith("PSI ")))
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        with contextlib.suppress(ValueError):
            if key == "TICK" and 0 < int(rest) < 100_000:
                reading.tick = int(rest)
            elif key == "UPTIME":
                reading.uptime_ticks = int(float(rest) * reading.tick)
            elif key == "CONN" and len(rest.split()) == 4:
                there, port, _, sshd_port = rest.split()
                reading.connection = (there, int(port), int(sshd_port))
            elif key == "SELF":
                reading.script = int(rest)
            elif key == "CG":
                used, _, path = rest.partition(" ")
                reading.cgroup = (int(used), path.strip()) if int(used) >= 0 and path.startswith("/") else None
            elif key == "P":
                stat = parse_proc_stat_line(rest)
                reading.procs[stat.pid] = stat
    return reading


def component_seconds(first: Reading, last: Reading, roots: dict[str, list[int]],
                      exact: dict[str, list[int]] | None = None) -> dict[str, float]:
    """CPU seconds per component between two readings, plus `other` (the rest of the busy time) and `idle`. The
    busy time is the host's cgroup's when its init runs in one (CGROUP), else its /proc/stat's. A root counts
    with its descendants; an `exact` one (the harness's sshd sessions, whose children include what the harness
    runs there) alone. A process born after the first reading counts from zero; a PID reused in between is not
    mixed up; a process is counted under the first component that holds it."""
    tick, out = last.tick, {}
    seen: set[int] = set()
    wanted = [(name, descendants(list(pids), last.procs)) for name, pids in roots.items()]
    wanted += [(name, {pid for pid in pids if pid in last.procs}) for name, pids in (exact or {}).items()]
    for name, pids in wanted:
        ticks = 0
        for pid in pids - seen:
            seen.add(pid)
            stat, before = last.procs[pid], first.procs.get(pid)
            same = before is not None and before.start == stat.start
            ticks += max(0, stat.ticks - before.ticks) if same and before else \
                stat.ticks if stat.start >= first.uptime_ticks else 0
        if name in roots:
            ticks += reaped_ticks(first, last, roots[name])
        out[name] = ticks / tick
    busy = max(0, last.machine[0] - first.machine[0]) / tick
    if first.cgroup is not None and last.cgroup is not None and first.cgroup[1] == last.cgroup[1]:
        busy = max(0, last.cgroup[0] - first.cgroup[0]) / 1e9  # the host's own, not its kernel's other tenants'
    out["other"] = max(0.0, busy - sum(out.values()))
    out["idle"] = max(0, last.machine[1] - first.machine[1]) / tick
    return out


def reaped_ticks(first: Reading, last: Reading, roots: list[int]) -> int:
    """The CPU of a component's processes that ended inside the window (a PostgreSQL backend whose client left before
    the last reading): the growth of its live processes' reaped-children time (cutime + cstime), less what the ended
    ones had used before the first reading. A child that ended with its parent is not counted."""
    def same(pid: int) -> bool:
        return pid in last.procs and pid in first.procs and last.procs[pid].start == first.procs[pid].start

    grown = 0
    for pid in descendants(list(roots), last.procs):
        stat = last.procs[pid]
        grown += max(0, stat.child_ticks - first.procs[pid].child_ticks) if same(pid) else \
            stat.child_ticks if stat.start >= first.uptime_ticks else 0
    ended = sum(first.procs[pid].ticks + first.procs[pid].child_ticks
                for pid in descendants(list(roots), first.procs) if not same(pid))
    return max(0, grown - ended)


def is_sshd(stat: ProcStat | None) -> bool:
    return stat is not None and stat.name.startswith("sshd")  # sshd, sshd-session (OpenSSH 9.8+), sshd-auth


def harness_sessions(reading: Reading, ports: set[int]) -> set[int]:
    """The sshd processes on the host that serve this harness's SSH connections: the session that ran the
    reading's script (its nearest sshd ancestor: the campaign's shared connection), and those holding a TCP
    connection from the harness's address (SSH_CONNECTION's) and one of `ports` (its forwards' source ports) to
    that sshd's port; each with its sshd ancestors but the listener (an sshd whose parent is not one). Another
    client's session, from another port or address, is never one; nothing without SSH_CONNECTION."""
    if reading.connection is None:
        return set()
    there, port, sshd_port = reading.connection
    peers = {(there, p) for p in {port, *ports}}
    found = {pid for pid, inodes in reading.sockets.items()
             if any((t := reading.tcp.get(inode)) and t[1] == sshd_port and (t[2], t[3]) in peers for inode in inodes)}
    pid = reading.procs[reading.script].ppid if reading.script in reading.procs else 0
    while pid in reading.procs and not is_sshd(reading.procs[pid]):
        pid = reading.procs[pid].ppid
    found |= {pid} if pid in reading.procs else set()
    out = set()
    for pid in found:
        while is_sshd(reading.procs.get(pid)) and is_sshd(reading.procs.get(reading.procs[pid].ppid)):
            out.add(pid)
            pid = reading.procs[pid].ppid
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
    are counted as `other@<host>`, not as this host's `other`. The sshd sessions there that serve this harness
    (its shared connection, and its forwards' connections: `forward_ports`, hosts/forward.py source_ports) are
    `transport@<host>`: the harness's own transport, which a busy rule of the host's other load does not count."""

    def __init__(self, host: Host, components: Callable[[], dict[str, list[int]]],
                 sharers: dict[str, str] | None = None,
                 forward_ports: Callable[[], set[int]] | None = None) -> None:
        self.host, self.components, self.sharers = host, components, dict(sharers or {})
        self.forward_ports = forward_ports or (lambda: set())
        self.first: Reading | None = None
        self.last: Reading | None = None
        self.error: str | None = None
        self.sessions: set[int] = set()

    def _read(self) -> Reading | None:
        script = SCRIPT + (NAMESPACES if self.sharers else "")
        ports = self.forward_ports()
        try:
            done = self.host.shell(script, name=f"cpu on {self.host.name}", timeout=30)
        except RunFailed as error:
            self.error = str(error)
            return None
        reading = parse_reading(done.output)
        self.sessions |= harness_sessions(reading, ports)
        return reading

    def start(self) -> None:
        self.sessions = set()
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

    def transport(self) -> dict[str, list[int]]:
        """The harness's sshd sessions on the host, each counted alone (not its children)."""
        return {f"transport@{self.host.name}": sorted(self.sessions)}

    def result(self) -> dict[str, float]:
        if self.first is None or self.last is None:
            return {}
        return component_seconds(self.first, self.last, self.roots(), self.transport())

    def top(self) -> tuple[TopProcess, ...]:
        """The host's busiest processes outside the components (and outside the sharing hosts')."""
        if self.first is None or self.last is None:
            return ()
        counted = {pid for pids in self.roots().values() for pid in descendants(list(pids), self.last.procs)}
        counted |= self.sessions
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
