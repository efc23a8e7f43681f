"""The environment fingerprint of a run: machine, kernel, versions, and the server's effective variables."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from functools import cache
from pathlib import Path, PurePath
from typing import Any

from layerbench.endpoint import Endpoint
from layerbench.measure.procfs import read_whole
from layerbench.server.datadir import query


def _first(pattern: str, text: str) -> str | None:
    match = re.search(pattern, text, re.MULTILINE)
    return match.group(1).strip() if match else None


@cache
def host_facts() -> dict[str, Any]:
    """Facts about this machine that do not change during a campaign."""
    cpuinfo, meminfo = read_whole("/proc/cpuinfo") or "", read_whole("/proc/meminfo") or ""
    mem_kb = _first(r"^MemTotal:\s+(\d+)", meminfo)
    sysbench = subprocess.run(["sysbench", "--version"], capture_output=True, text=True, check=False).stdout
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "cpu_model": _first(r"^model name\s*:\s*(.+)$", cpuinfo),
        "cpu_count": os.cpu_count(),
        "memory_bytes": int(mem_kb) * 1024 if mem_kb else None,
        "sysbench_version": sysbench.strip() or None,
        "python": platform.python_version(),
    }


def server_variables(endpoint: Endpoint) -> dict[str, str]:
    """SHOW GLOBAL VARIABLES of the server under test (what it really runs with)."""
    return {str(k): str(v) for k, v in query(endpoint, "SHOW GLOBAL VARIABLES")}


def read_text(path: str) -> str | None:
    """A /proc or /sys file through the one /proc reader (measure/procfs.py), stripped; None when unreadable."""
    text = read_whole(path)
    return None if text is None else text.strip()


MOUNT_ESCAPE = re.compile(r"\\([0-7]{3})")


def unescape_mount_field(field: str) -> str:
    """/proc/self/mounts writes space, tab, newline and backslash in a field as octal escapes (\\040 ...)."""
    return MOUNT_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mounts(text: str) -> list[dict[str, str]]:
    """Lines of /proc/self/mounts as device, mount point, filesystem type and options; malformed lines skipped."""
    mounts = []
    for line in text.split("\n"):  # only "\n" ends a line: other control characters are kept in fields
        parts = line.split(" ")
        if len(parts) >= 4 and all(parts[:4]):
            device, point, fstype, options = (unescape_mount_field(p) for p in parts[:4])
            mounts.append({"device": device, "mount_point": point, "fstype": fstype, "options": options})
    return mounts


def mount_of(path: PurePath, text: str | None = None) -> dict[str, str] | None:
    """Filesystem type, device and options of the mount holding path (the longest mount point that contains it;
    the last one listed when one point is mounted over)."""
    target = str(path.resolve()) if isinstance(path, Path) else str(path)  # a PurePath: another host's, resolved
    best: dict[str, str] | None = None
    for mount in parse_mounts(text if text is not None else read_text("/proc/self/mounts") or ""):
        point = mount["mount_point"]
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best["mount_point"])):
            best = mount
    return best


def io_scheduler(device: str) -> str | None:
    name = Path(device).name
    for candidate in (name, name.rstrip("0123456789"), name.split("p")[0]):
        text = read_text(f"/sys/block/{candidate}/queue/scheduler")
        if text:
            return text
    return None


@cache
def storage_facts(path: str) -> dict[str, Any]:
    """Where the run's datadir lives: the folder, its filesystem, device, mount options and I/O scheduler."""
    mount = mount_of(Path(path)) or {}
    return {"path": path, **mount, "io_scheduler": io_scheduler(mount.get("device", ""))}


@cache
def tuning_facts() -> dict[str, Any]:
    """Host-level tuning layerbench never changes itself but records (documented as manual steps)."""
    return {
        "transparent_hugepage": read_text("/sys/kernel/mm/transparent_hugepage/enabled"),
        "swappiness": read_text("/proc/sys/vm/swappiness"),
        "dirty_ratio": read_text("/proc/sys/vm/dirty_ratio"),
        "cpu_governor": read_text("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "cgroup_version": "v2" if Path("/sys/fs/cgroup/cgroup.controllers").exists() else "v1",
    }
