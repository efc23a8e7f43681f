"""The server pod's CPU, throttling and its node's other load, read where the pod runs rather than in this machine's
/proc (which holds them only when the harness is a node): one `sh` script of shell builtins, run in the server
container through the exec API (`pods/exec`) at the start and at the end of the measured window, prints the
container's own cgroup (cgroup v1: cpuacct.usage in ns and cpu.stat's nr_periods, nr_throttled, throttled_time;
v2: cpu.stat's usage_usec and throttled_usec), its cpuset (the CPUs it may run on), the node kernel's /proc/stat
and /proc/pressure/cpu. Two readings give:

- `server@<node>`: the container's CPU seconds (every process of the server container);
- `other@<node>`: the busy time of the container's CPUs (their /proc/stat lines) minus the server's, the busy rule's
  figure for the server's node (analysis/busy.py); `idle`: those CPUs' idle time;
- the container cgroup's throttling, the node's steal and its CPU pressure.

Chosen over the kubelet's stats summary (`nodes/<node>/proxy/stats/summary`) by the figures measured in
docs/backends/kubernetes.md: its container figure is as exact, but it has no throttling, its node figure is
cadvisor's, refreshed by its housekeeping (it lagged /proc/stat by up to 2.8 s of a 20 s window), and it needs the
cluster-scoped `nodes/proxy` that namespace-scoped mode lacks. Parsing is pure
and takes hostile text (missing keys, garbage, huge numbers) without raising."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from layerbench.backends.kubernetes.podexec import pod_exec
from layerbench.errors import RunFailed
from layerbench.measure.cpu import QuietLoad
from layerbench.measure.pressure import parse_pressure, pressure_window
from layerbench.records import Throttling, Usage

TICKS = 100  # USER_HZ: /proc/stat's unit on every Linux architecture (sysconf(_SC_CLK_TCK) reports it too)
MAX_OUTPUT = 1 << 20  # a reading is a few kB; more is not a reading
MAX_COUNTER = 1 << 64  # a kernel counter is an unsigned 64-bit number; a larger one is garbage
SOURCE = "exec in the server container: its cgroup, its cpuset's lines of the node's /proc/stat"

_READ = 'r() { while IFS= read -r l || [ -n "$l" ]; do echo "$1 $l"; done < "$2"; } 2>/dev/null; '
SCRIPT = (_READ +
          "r USAGE /sys/fs/cgroup/cpuacct/cpuacct.usage || r USAGE /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage; "
          "r STAT /sys/fs/cgroup/cpu/cpu.stat || r STAT /sys/fs/cgroup/cpu,cpuacct/cpu.stat || "
          "r STAT /sys/fs/cgroup/cpu.stat; "
          "r PERCPU /sys/fs/cgroup/cpuacct/cpuacct.usage_percpu || "
          "r PERCPU /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage_percpu; "
          "r CPUS /sys/fs/cgroup/cpuset/cpuset.effective_cpus || r CPUS /sys/fs/cgroup/cpuset/cpuset.cpus || "
          "r CPUS /sys/fs/cgroup/cpuset.cpus.effective; "
          "r PROC /proc/stat; r PSI /proc/pressure/cpu; true")


@dataclass(frozen=True)
class PodReading:
    """One reading of the script's output."""

    usage_ns: int | None = None  # the container cgroup's CPU time
    stat: dict[str, int] = field(default_factory=dict)  # its cpu.stat
    cpus: frozenset[int] = frozenset()  # its cpuset (empty: unknown, then every CPU of /proc/stat)
    node: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # CPU -> busy, idle, steal ticks
    pressure: dict[str, int] = field(default_factory=dict)  # the node's CPU pressure, microseconds
    per_cpu: tuple[int, ...] = ()  # the container cgroup's CPU time on each CPU, ns (cgroup v1's usage_percpu)


def counter(text: str) -> int | None:
    """A kernel counter: ASCII digits, below 2**64; None otherwise."""
    text = text.strip()
    if not text or len(text) > 20 or not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if value < MAX_COUNTER else None


def cpu_set_text(text: str) -> frozenset[int]:
    """A cpuset file's list (`0-3,6`); empty when it is not one (or names more than 4096 CPUs)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        first, last = counter(low), counter(high or low)
        if first is None or last is None or last < first or last - first >= 4096 or len(cpus) > 4096:
            return frozenset()
        cpus |= set(range(first, last + 1))
    return frozenset(cpus)


def cpu_ticks(fields: list[str]) -> tuple[int, int, int] | None:
    """(busy, idle, steal) of one /proc/stat CPU line's numbers (idle with iowait, busy with steal, as
    hosts/procfs.py:parse_machine_stat counts them)."""
    values = [counter(v) for v in fields[:8]]
    if len(values) < 5 or any(v is None for v in values):
        return None
    known = [v for v in values if v is not None]
    idle = known[3] + known[4]
    return sum(known) - idle, idle, known[7] if len(known) > 7 else 0


def parse_reading(text: str) -> PodReading:
    """The script's output; a line that does not parse is left out (the reading then lacks that figure)."""
    usage: int | None = None
    stat: dict[str, int] = {}
    cpus: frozenset[int] = frozenset()
    node: dict[int, tuple[int, int, int]] = {}
    psi: list[str] = []
    per_cpu: tuple[int, ...] = ()
    for line in text[:MAX_OUTPUT].splitlines():
        key, _, rest = line.partition(" ")
        parts = rest.split()
        if key == "USAGE":
            usage = counter(rest)
        elif key == "STAT" and len(parts) == 2 and (value := counter(parts[1])) is not None:
            stat[parts[0]] = value
        elif key == "PERCPU" and len(parts) <= 4096:
            values = [counter(part) for part in parts]
            per_cpu = tuple(v for v in values if v is not None) if None not in values else ()
        elif key == "CPUS":
            cpus = cpu_set_text(rest)
        elif key == "PROC" and parts and parts[0].startswith("cpu") and parts[0][3:].isdigit():
            cpu = counter(parts[0][3:])
            ticks = cpu_ticks(parts[1:])
            if cpu is not None and ticks is not None:
                node[cpu] = ticks
        elif key == "PSI":
            psi.append(rest)
    if usage is None and "usage_usec" in stat:  # cgroup v2
        usage = stat["usage_usec"] * 1000
    return PodReading(usage, stat, cpus, node, parse_pressure("\n".join(psi)), per_cpu)


def throttling(first: PodReading, last: PodReading) -> Throttling | None:
    """The container cgroup's throttling between two readings (v1: throttled_time ns; v2: throttled_usec)."""
    if "nr_periods" not in first.stat or "nr_periods" not in last.stat:
        return None

    def delta(key: str) -> int:
        return max(0, last.stat.get(key, 0) - first.stat.get(key, 0))

    seconds = delta("throttled_time") / 1e9 if "throttled_time" in last.stat else delta("throttled_usec") / 1e6
    return Throttling(delta("nr_periods"), delta("nr_throttled"), seconds)


def node_window(first: PodReading, last: PodReading) -> tuple[float, float, float]:
    """Busy, idle and steal seconds of the container's CPUs (every CPU when its cpuset is unknown) between two
    readings; a CPU missing from either reading is left out."""
    cpus = last.cpus or frozenset(last.node)
    busy = idle = steal = 0
    for cpu in cpus:
        if cpu in first.node and cpu in last.node:
            (b0, i0, s0), (b1, i1, s1) = first.node[cpu], last.node[cpu]
            busy, idle, steal = busy + max(0, b1 - b0), idle + max(0, i1 - i0), steal + max(0, s1 - s0)
    return busy / TICKS, idle / TICKS, steal / TICKS


def cpu_seconds(first: PodReading, last: PodReading, node: str) -> dict[str, float]:
    """`server@<node>`, `other@<node>` and `idle` over the window; {} without the container's usage in both."""
    if first.usage_ns is None or last.usage_ns is None:
        return {}
    server = max(0, last.usage_ns - first.usage_ns) / 1e9
    busy, idle, _ = node_window(first, last)
    out = {f"server@{node}": round(server, 3)}
    if busy or idle:
        out |= {f"other@{node}": round(max(0.0, busy - server), 3), "idle": round(idle, 3)}
    return out


def used_seconds(first: PodReading, last: PodReading) -> float | None:
    """A container cgroup's CPU seconds between two readings; None without its usage in both."""
    if first.usage_ns is None or last.usage_ns is None:
        return None
    return max(0, last.usage_ns - first.usage_ns) / 1e9


def seconds_on(first: PodReading, last: PodReading, cpus: frozenset[int]) -> float:
    """The part of a container's CPU seconds spent on `cpus` (another container's, the server's): per CPU where the
    cgroup gives it (v1's usage_percpu), else all of it when its cpuset meets `cpus` (or either is unknown), none
    when they are apart (a pinned neighbour on exclusive cores)."""
    used = used_seconds(first, last) or 0.0
    if first.per_cpu and len(first.per_cpu) == len(last.per_cpu) and cpus:
        return sum(max(0, last.per_cpu[c] - first.per_cpu[c]) for c in cpus if c < len(last.per_cpu)) / 1e9
    return used if not cpus or not last.cpus or cpus & last.cpus else 0.0


@dataclass(frozen=True)
class PodRef:
    """A neighbour's pod whose CPU is read in it (backends/kubernetes/neighbours.py): the neighbour, its pod, its
    container and its node."""

    name: str
    pod: str
    container: str
    node: str


def with_neighbours(found: dict[str, float], server: PodReading, node: str,
                    neighbours: list[tuple[PodRef, PodReading, PodReading]]) -> dict[str, float]:
    """The window's figures with each neighbour pod's CPU as `neighbour:<name>@<its node>`, and on the server's node
    its share on the server's CPUs taken out of `other@<node>`: a neighbour is never the node's other load, as on a
    node (measure/cpu.py counts its processes as its own component)."""
    out = dict(found)
    for ref, first, last in neighbours:
        used = used_seconds(first, last)
        if used is None:
            continue
        out[f"neighbour:{ref.name}@{ref.node}"] = round(used, 3)
        other = f"other@{node}"
        if ref.node == node and other in out:
            cpus = server.cpus or frozenset(server.node)
            out[other] = round(max(0.0, out[other] - seconds_on(first, last, cpus)), 3)
    return out


def node_load(reading: PodReading) -> tuple[float, float] | None:
    """wait_for_quiet's counters in one reading: (the busy seconds of the container's CPUs less the server
    container's own, the rest), so that two readings' busy share is other@<node>'s (cpu_seconds); None without the
    container's usage or any CPU line of /proc/stat."""
    cpus = reading.cpus or frozenset(reading.node)
    lines = [reading.node[cpu] for cpu in cpus if cpu in reading.node]
    if reading.usage_ns is None or not lines:
        return None
    server = reading.usage_ns / 1e9
    busy, idle = sum(line[0] for line in lines) / TICKS, sum(line[1] for line in lines) / TICKS
    return busy - server, idle + server


def cpus_text(cpus: frozenset[int]) -> str:
    """The CPU list of a set (`0-2,5`)."""
    ranges: list[list[int]] = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def source_facts(on_node: bool, node: str) -> dict[str, str]:
    """For the run's record: where the server's CPU is read; off a node also `server_cpu_node`, the node whose
    other load the busy rule reads (`other@<node>`: records/run.py Environment.server_place)."""
    if on_node:
        return {"server_cpu_source": "this machine's /proc (the harness is a node of the cluster)"}
    return {"server_cpu_source": f"the pod's node, through the exec API ({SOURCE})", "server_cpu_node": node}


def exec_reading(core: Any, ns: str, pod: str, container: str) -> PodReading:
    """One reading of a container (its cgroup, its node's /proc/stat) through the exec API; RunFailed (one line)
    when it cannot be read."""
    try:
        status, text, _ = pod_exec(core, ns, pod, ["sh", "-c", SCRIPT], container)
    except Exception as error:  # the API refused, the pod is gone
        raise RunFailed(f"{type(error).__name__}: {str(error)[:200]}") from None
    if status is None:
        raise RunFailed("the reading did not end within 30 s")
    return parse_reading(text)


class PodCpuWindow:
    """start() and stop() around the measured window (a reading each, through the exec API); usage_of() the run's
    Usage with the pod's figures in place of this machine's. `exec_seconds`: what the readings cost (wall time).
    `neighbours`: the run's neighbour pods read the same way (PodRef), each its own component."""

    def __init__(self, core: Any, ns: str, pod: str, container: str, node: str,
                 neighbours: Callable[[], list[PodRef]] = list) -> None:
        self.core, self.ns, self.pod, self.container, self.node = core, ns, pod, container, node
        self.neighbours = neighbours
        self.first: PodReading | None = None
        self.last: PodReading | None = None
        self.beside: dict[PodRef, list[PodReading]] = {}  # a neighbour pod's readings at the start and the end
        self.exec_seconds: list[float] = []
        self.error: str | None = None

    def read(self, pod: str | None = None, container: str | None = None) -> PodReading | None:
        started = time.monotonic()
        try:
            return exec_reading(self.core, self.ns, pod or self.pod, container or self.container)
        except RunFailed as error:  # the run is recorded without the figures
            self.error = str(error) if pod is None else self.error
            return None
        finally:
            self.exec_seconds.append(round(time.monotonic() - started, 3))

    def _read_neighbours(self, first: bool) -> None:
        for ref in self.neighbours() if first else list(self.beside):
            reading = self.read(ref.pod, ref.container)
            if reading is not None and (first or len(self.beside.get(ref, [])) == 1):
                self.beside.setdefault(ref, []).append(reading)

    def load(self) -> tuple[float, float]:
        """One reading's node_load, for wait_for_quiet (QuietLoad); RunFailed when it could not be read."""
        reading = self.read()
        found = None if reading is None else node_load(reading)
        if found is None:
            raise RunFailed(self.error or "a reading without the container cgroup's usage or the node's CPU lines")
        return found

    def quiet_load(self) -> QuietLoad:
        return QuietLoad(f"node {self.node}", self.load)

    def start(self) -> None:
        self.beside = {}
        self._read_neighbours(first=True)
        self.first = self.read()

    def stop(self) -> None:
        self.last = self.read()
        self._read_neighbours(first=False)

    def result(self) -> dict[str, float]:
        if self.first is None or self.last is None:
            return {}
        pairs = [(ref, found[0], found[1]) for ref, found in self.beside.items() if len(found) == 2]
        return with_neighbours(cpu_seconds(self.first, self.last, self.node), self.last, self.node, pairs)

    def io_reader(self) -> None:
        return None  # the pod's I/O counters are not read off a node (measure/io.py: this machine's only)

    def steal_seconds(self) -> float:
        return 0.0 if self.first is None or self.last is None else node_window(self.first, self.last)[2]

    def pressure(self) -> dict[str, dict[str, float]]:
        if self.first is None or self.last is None or not self.first.pressure:
            return {}
        # `system`: the machine the server ran on, as an ssh: host's (measure/remote_cpu.py), here the node's kernel
        return pressure_window({"system": self.first.pressure}, {"system": self.last.pressure})

    def usage_of(self, usage: Usage) -> Usage:
        """The run's Usage with the pod's node's figures: its CPU per component, the container's throttling, the
        node's steal and pressure; this machine's `other` and `idle` are not the server's node's, so they go."""
        found = self.result()
        read_there = {f"neighbour:{ref.name}" for ref in self.beside}  # here: no process of theirs, 0 s
        kept = {k: v for k, v in usage.cpu_seconds.items() if k not in ("other", "idle", "server", *read_there)}
        if not found:  # this machine's other and idle are still not the node's
            why = self.error or "a reading without the container cgroup's usage"
            return replace(usage, cpu_seconds=kept, top_other=(), throttling={}, pressure={}, notes=(
                f"the server's CPU was not read in its pod on node {self.node} ({why}); this machine is not a node, "
                "so its /proc holds none of it",))
        throttled = throttling(self.first, self.last) if self.first and self.last else None
        return replace(usage, cpu_seconds={**kept, **found}, top_other=(), steal_seconds=self.steal_seconds(),
                       throttling={f"{self.ns}/{self.pod}/{self.container}": throttled} if throttled else {},
                       pressure=self.pressure())

    def facts(self) -> dict[str, Any]:
        """For the run's record: the source, the node, the CPUs read and what the readings cost."""
        cpus = self.last.cpus if self.last else frozenset()
        return {"source": SOURCE, "node": self.node, "cpus": cpus_text(cpus) or "all",
                "exec_seconds": list(self.exec_seconds), "complete": bool(self.result())} | (
                    {"error": self.error} if self.error else {}) | (
                    {"neighbours": sorted(ref.name for ref in self.beside)} if self.beside else {})
