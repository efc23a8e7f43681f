"""The environment fingerprint of a run: machine, kernel, versions, and the server's effective variables."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from layerbench.endpoint import Endpoint
from layerbench.hosts.procfs import mount_of, read_whole
from layerbench.server.datadir import query
from layerbench.versions import printed_version

VERSION_TIMEOUT = 30.0  # sysbench --version, once per campaign, on a machine that may be busy


def _first(pattern: str, text: str) -> str | None:
    match = re.search(pattern, text, re.MULTILINE)
    return match.group(1).strip() if match else None


@cache
def host_facts() -> dict[str, Any]:
    """Facts about this machine that do not change during a campaign."""
    cpuinfo, meminfo = read_whole("/proc/cpuinfo") or "", read_whole("/proc/meminfo") or ""
    mem_kb = _first(r"^MemTotal:\s+(\d+)", meminfo)
    sysbench = printed_version(["sysbench"], timeout=VERSION_TIMEOUT)
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "cpu_model": _first(r"^model name\s*:\s*(.+)$", cpuinfo),
        "cpu_count": os.cpu_count(),
        "memory_bytes": int(mem_kb) * 1024 if mem_kb else None,
        "sysbench_version": sysbench or None,
        "python": platform.python_version(),
    }


SYSBENCH_BANNER = re.compile(r"^\ufeff?(sysbench \d+\.\d+[0-9A-Za-z.\-+~]*)", re.MULTILINE)


def client_sysbench(output: str) -> str | None:
    """The version line a sysbench run prints first ("sysbench 1.0.20 (using bundled LuaJIT ...)"), in the form
    `sysbench --version` prints it ("sysbench 1.0.20"); None when the output has none."""
    match = SYSBENCH_BANNER.search(output[:4096])
    return match.group(1) if match else None


def with_client_sysbench(env: dict[str, Any], output: str, where: str) -> dict[str, Any]:
    """The environment record with the sysbench that ran the benchmark elsewhere (a Job's image): its version from
    the run's own output and where it came from (None, never this machine's, when the output names none)."""
    version = client_sysbench(output)
    host = dict(env.get("host") or {})
    host |= {"sysbench_version": version, "sysbench_version_from": where if version else f"none in {where}"}
    return env | {"host": host}


def with_client_tool(env: dict[str, Any], line: str) -> dict[str, Any]:
    """The environment record with the load generator that drove the run when it is not sysbench (pgbench: its
    banner's version), which the report's software line names instead of sysbench."""
    return env | {"host": {**(env.get("host") or {}), "client_tool": line}}


def server_variables(endpoint: Endpoint, through: Callable[[str], list[tuple[Any, ...]]] | None = None
                     ) -> dict[str, str]:
    """SHOW GLOBAL VARIABLES of the server under test (what it really runs with): through a connection to the
    endpoint, or `through` the backend's own path to the server's SQL (Backend.server_sql). PostgreSQL's: every
    row of pg_settings (name, setting in its unit) and `version`, its server_version."""
    if endpoint.is_postgresql:
        sql = "SELECT name, setting FROM pg_settings UNION ALL SELECT 'version', current_setting('server_version')"
        rows = through(sql) if through is not None else query(endpoint, sql)
        return {str(row[0]): str(row[1]) for row in rows if len(row) >= 2}
    rows = through("SHOW GLOBAL VARIABLES") if through is not None else query(endpoint, "SHOW GLOBAL VARIABLES")
    return {str(row[0]): str(row[1]) for row in rows if len(row) >= 2}


def read_text(path: str) -> str | None:
    """A /proc or /sys file through the one /proc reader (hosts/procfs.py), stripped; None when unreadable."""
    text = read_whole(path)
    return None if text is None else text.strip()


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


def datadir_storage(described: dict[str, Any], work_dir: Path) -> dict[str, Any]:
    """The run's environment.storage. A backend that describes where its datadir lives (`storage`: a dict, e.g. a
    server on an ssh: host: its folder's filesystem there) gives it, taken out of its own facts; one that names its
    storage mode only (docker's `volume` or `tmpfs`, a pod's `pvc`) keeps that name in its facts, and the record says
    that mode, never this machine's work folder, where such a datadir need not be (a pod's node is another machine);
    otherwise the filesystem of the run's work folder here."""
    storage = described.get("storage")
    if isinstance(storage, dict):
        return described.pop("storage")
    if isinstance(storage, str):
        return {"volume": storage}
    return storage_facts(str(work_dir))


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
