"""Where the harness itself runs while sysbench measures: away from the CPUs the server and sysbench are pinned
to, when the machine has one left over (docs/fidelity.md).

Only when both the server (`cpus`, or a Docker `resources.cpuset`) and sysbench (`client_cpus`) are pinned on
this machine: sysbench is started by the harness and would otherwise inherit the harness's CPUs; with
`client_cpus` its taskset sets its own. With no CPU left over (a 2-core machine with server and client on one
core each) the harness stays where it is and is kept cheap instead; the run records which case it was.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from layerbench.backends.variant_base import VariantBase
from layerbench.hosts.procfs import tasks
from layerbench.vocabulary.cpus import cpu_set


def cpu_text(cpus: set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def harness_cpus(variant: VariantBase, allowed: set[int], remote: bool) -> set[int]:
    """The CPUs the harness moves to during the run: `allowed` minus the server's and sysbench's; empty when
    either is unpinned, a host is remote, or nothing is left over."""
    server = variant.server_cpu_list()
    if remote or not server or not variant.client_cpus:
        return set()
    return allowed - cpu_set(server) - cpu_set(variant.client_cpus)


def _threads() -> list[int]:
    return [int(tid) for tid in tasks(os.getpid())]


@contextlib.contextmanager
def pinned(cpus: set[int]) -> Iterator[str | None]:
    """Every thread of this process on `cpus` (threads started inside inherit it), restored afterwards; yields
    the CPU list, or None (nothing changed) when `cpus` is empty."""
    if not cpus:
        yield None
        return
    before = {tid: os.sched_getaffinity(tid) for tid in _threads()}
    try:
        for tid in before:
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(tid, cpus)
        yield cpu_text(cpus)
    finally:
        for tid in _threads():
            with contextlib.suppress(ProcessLookupError, OSError):
                os.sched_setaffinity(tid, before.get(tid, before[os.getpid()]))
