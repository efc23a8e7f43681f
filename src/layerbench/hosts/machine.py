"""This machine's ports, CPUs and memory as a backend asks for them: a free TCP port, a check of a CPU list, the
memory it has."""

from __future__ import annotations

import os
import socket

from layerbench.errors import BadInput


def free_port(address: str = "127.0.0.1") -> int:
    """A TCP port on `address` (one of this machine's) that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((address, 0))
        return int(probe.getsockname()[1])


def check_cpus(cpus: str | None, where: str) -> None:
    """BadInput naming `where` when the CPU list (`0-1,3`) names a CPU this process cannot use."""
    if not cpus:
        return
    available = os.sched_getaffinity(0)
    for part in cpus.split(","):
        low, _, high = part.partition("-")
        wanted = set(range(int(low), int(high or low) + 1))
        missing = sorted(wanted - available)
        if missing:
            raise BadInput(
                f"{where}: CPU {missing[0]} does not exist here; use CPUs among {sorted(available)}"
            )


def total_memory() -> int:
    """This machine's memory in bytes (0 when the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0
