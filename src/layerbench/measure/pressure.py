"""CPU pressure (PSI) over a run's measured window: how long runnable tasks waited for a CPU, from the kernel's
own counters where it has them: /proc/pressure/cpu (the whole machine) and a server cgroup's cpu.pressure (cgroup
v2; on a hybrid cgroup v1 machine, the same cgroup's twin in the unified tree /sys/fs/cgroup/unified, as Docker
creates it there; or the cpuacct hierarchy when the kernel has cgroup v1 PSI). `some`: the time at
least one task waited; `full`: all non-idle tasks waited at once (the kernel reports 0 at the system level for
CPU). Counters are microseconds since boot; a window is the difference of two readings."""

from __future__ import annotations

import re
from pathlib import Path

from layerbench.hosts.procfs import CPU_PRESSURE, read_file

SYSTEM = CPU_PRESSURE
LINE = re.compile(r"^(some|full)\b.*\btotal=(\d{1,20})\b", re.MULTILINE)


def parse_pressure(text: str) -> dict[str, int]:
    """{"some": microseconds, "full": microseconds} from a pressure file; {} when it has neither line."""
    return {kind: int(total) for kind, total in LINE.findall(text)}


def pressure_files(cgroups: list[Path]) -> list[Path]:
    """The machine's file and, per cgroup, its cpu.pressure (or its twin in the unified or cpuacct tree of a
    cgroup v1 machine) where one exists."""
    found = [SYSTEM]
    for directory in cgroups:
        text = str(directory)
        twins = [Path(text.replace(f"/sys/fs/cgroup/{v1}/", f"/sys/fs/cgroup/{tree}/", 1))
                 for v1 in ("cpu", "cpu,cpuacct") for tree in ("unified", "cpuacct")]
        found += [p for p in (directory / "cpu.pressure", *(t / "cpu.pressure" for t in twins)) if p.exists()][:1]
    return found


def read_pressure(files: list[Path]) -> dict[str, dict[str, int]]:
    out = {}
    for path in files:
        text = read_file(path)
        if text is None:  # no PSI in this kernel (or it was not enabled at boot: psi=0)
            continue
        found = parse_pressure(text)
        if found:
            out["system" if path == SYSTEM else str(path.parent)] = found
    return out


def pressure_window(start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """Seconds of `some` and `full` CPU pressure between two readings, per source present in both."""
    return {source: {f"{kind}_seconds": round(max(0, end[source][kind] - counts[kind]) / 1e6, 3)
                     for kind in counts if kind in end[source]}
            for source, counts in start.items() if source in end}
