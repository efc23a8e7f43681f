"""The environment fingerprint of a run: machine, kernel, versions, and the server's effective variables."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

from layerbench.backends.base import Endpoint
from layerbench.server.datadir import query


def _first(pattern: str, text: str) -> str | None:
    match = re.search(pattern, text, re.MULTILINE)
    return match.group(1).strip() if match else None


@cache
def host_facts() -> dict[str, Any]:
    """Facts about this machine that do not change during a campaign."""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
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
