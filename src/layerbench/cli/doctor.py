"""`layerbench doctor`: are the prerequisites here, and did a crashed campaign leave anything behind?"""

from __future__ import annotations

import shutil

from layerbench.hosts.workdirs import cache_dir, work_root
from layerbench.run.cleanup import leftovers
from layerbench.server.snapshot import server_version
from layerbench.versions import printed_version

PROGRAMS = {
    "sysbench": "apt-get install sysbench (scripts/setup does it)",
    "mariadbd": "apt-get install mariadb-server (scripts/setup does it)",
    "mariadb-install-db": "apt-get install mariadb-server (scripts/setup does it)",
    "taskset": "apt-get install util-linux",
}


def program_checks() -> list[tuple[bool, str]]:
    out = []
    for name, fix in PROGRAMS.items():
        path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
        out.append((bool(path), f"{name}: {path}" if path else f"{name}: missing; {fix}"))
    return out


def version_checks() -> list[tuple[bool, str]]:
    sysbench = printed_version(["sysbench"])
    return [(True, f"server: {server_version()}"), (bool(sysbench), f"sysbench: {sysbench or 'unknown'}")]


def leftover_checks() -> list[tuple[bool, str]]:
    from layerbench.run.cleanup import backend_leftovers

    found = leftovers()
    in_backends = backend_leftovers()  # Kubernetes namespaces, VM network devices
    if not found and not in_backends:
        return [(True, "leftovers: none")]
    return [(False, f"leftover of a crashed campaign: {o.label} (pid {o.pid}); run `layerbench clean`")
            for o in found] + [(False, line) for line in in_backends]


def diagnose() -> list[tuple[bool, str]]:
    checks = program_checks()
    if all(ok for ok, _ in checks[:2]):
        checks += version_checks()
    checks += [(True, f"cache: {cache_dir()}"), (True, f"work dir: {work_root()}")]
    return checks + leftover_checks()
