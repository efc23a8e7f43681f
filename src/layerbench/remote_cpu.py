"""Where the CPU went on a server's ssh: host during a run: one small sh script prints that host's clock tick,
uptime, /proc/stat `cpu` line and every process's /proc/<pid>/stat; it runs at the start and at the end of the
window (two SSH round trips over the shared connection, no thread, nothing left on the host). The CPU seconds
of each component (the backend's PIDs on that host and their descendants), `other` and `idle` come from the two
readings with resources.py's own parsers, so a remote server is accounted like a local one."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from layerbench.errors import RunFailed
from layerbench.hosts import Host
from layerbench.resources import ProcStat, descendants, parse_machine_stat, parse_proc_stat_line

SCRIPT = ('echo "TICK $(getconf CLK_TCK)"; echo "UPTIME $(cut -d" " -f1 /proc/uptime)"; grep "^cpu " /proc/stat; '
          'for f in /proc/[0-9]*/stat; do read -r l < "$f" 2>/dev/null && echo "P $l"; done; true')


@dataclass
class Reading:
    tick: int = 100
    uptime_ticks: int = 0
    machine: tuple[int, int] = (0, 0)  # busy, idle ticks of all CPUs
    procs: dict[int, ProcStat] = field(default_factory=dict)


def parse_reading(text: str) -> Reading:
    """The script's output; unreadable lines are skipped (a process may end while it is read)."""
    reading = Reading()
    with contextlib.suppress(ValueError):
        reading.machine = parse_machine_stat(text)
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        with contextlib.suppress(ValueError):
            if key == "TICK" and 0 < int(rest) < 100_000:
                reading.tick = int(rest)
            elif key == "UPTIME":
                reading.uptime_ticks = int(float(rest) * reading.tick)
            elif key == "P":
                stat = parse_proc_stat_line(rest)
                reading.procs[stat.pid] = stat
    return reading


def component_seconds(first: Reading, last: Reading, roots: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds per component between two readings, plus `other` (the rest of the busy time) and `idle`.
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
    out["other"] = max(0.0, busy - sum(out.values()))
    out["idle"] = max(0, last.machine[1] - first.machine[1]) / tick
    return out


class RemoteCpuWindow:
    """start() and stop() around the measured window; result() the CPU seconds per component on the host."""

    def __init__(self, host: Host, components: Callable[[], dict[str, list[int]]]) -> None:
        self.host, self.components = host, components
        self.first: Reading | None = None
        self.last: Reading | None = None
        self.error: str | None = None

    def _read(self) -> Reading | None:
        try:
            done = self.host.shell(SCRIPT, name=f"cpu on {self.host.name}", timeout=30)
        except RunFailed as error:
            self.error = str(error)
            return None
        return parse_reading(done.output)

    def start(self) -> None:
        self.first = self._read()

    def stop(self) -> None:
        self.last = self._read()

    def result(self) -> dict[str, float]:
        if self.first is None or self.last is None:
            return {}
        return component_seconds(self.first, self.last, self.components())
