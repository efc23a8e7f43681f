"""Reclaiming what the owner records (owners.py) name: stop the processes we started if they are still ours,
remove their folders, forget the record; for `clean`, `doctor` and a build that takes over a killed one."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

from layerbench.errors import RunFailed
from layerbench.hosts.host_owners import list_script, parse_records
from layerbench.hosts.inventory import Host
from layerbench.hosts.lease import (
    State,
    may_sweep,
    own_leases,
    parse_probe,
    probe_local,
    probe_script,
    remove_dead_local,
)
from layerbench.hosts.owners import Owned, cmdline, forget, processes_with, recorded
from layerbench.hosts.procs import pid_alive
from layerbench.hosts.remote import clean_remote, remove_remote_folder
from layerbench.hosts.workdirs import work_root


def stop_process(pid: int, marker: str, timeout: float = 30.0) -> bool:
    """SIGTERM, then SIGKILL, the process if it is still the one we started; True if one was stopped."""
    if not pid_alive(pid) or marker not in cmdline(pid):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and pid_alive(pid) and marker in cmdline(pid):
        time.sleep(0.2)
    if pid_alive(pid) and marker in cmdline(pid):
        os.kill(pid, signal.SIGKILL)
    return True


def clean_recorded(include_live: bool = False) -> list[str]:
    """Remove what crashed harnesses left; with include_live also what live harnesses own. Returns a log."""
    done = []
    for owned in recorded():
        if include_live or gone(owned):
            done += clean_owned(owned)
    remove_dead_local(work_root())  # the empty lease files of ended harnesses (none of them names a thing left)
    return done


def gone(owned: Owned) -> bool:
    """Whether the record's harness has ended (or is this process): by its lease (lease.py), or, in a record
    older than leases, by its PID."""
    if owned.lease is None:
        return not pid_alive(owned.harness_pid) or owned.harness_pid == os.getpid()
    return may_sweep(owned.lease, probe_local({owned.lease}), cleaner=own_leases())


def clean_owned(owned: Owned, keep: frozenset[Path] = frozenset()) -> list[str]:
    """Stop the processes of one owner record, remove its folders (except those in `keep`), then forget it (a
    remote host that does not answer keeps it for the next `clean`). Returns a log."""
    done = []
    pids = set(processes_with(owned.marker)) | ({owned.pid} if owned.pid else set())
    for pid in sorted(pids):
        if stop_process(pid, owned.marker):
            done.append(f"stopped process {pid} ({owned.label})")
    for path in owned.paths:
        if Path(path).exists() and Path(path) not in keep:
            remove_path(Path(path))
            done.append(f"removed {path}")
    if owned.remote:
        said, removed = clean_remote(owned.remote)
        done += said
        if not removed:
            return done  # the host did not answer: keep the record for the next `clean`
    forget(owned.label)
    return done


def remove_path(path: Path) -> None:
    """A folder with its contents, or one file (a half-built image)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def leftovers() -> list[Owned]:
    """What crashed harnesses left behind (for `layerbench doctor`)."""
    return [o for o in recorded() if gone(o) and o.harness_pid != os.getpid()]


def sweep_host(host: Host, include_live: bool = False) -> list[str]:
    """Remove what dead harnesses left on an ssh: host by its own records (with include_live, also what live ones
    own); a host that does not answer is said so, and keeps its records for the next `clean`."""
    try:
        records = parse_records(host.shell(list_script(host), name=f"owner records on {host.name}",
                                           timeout=60).output)
        leases = {r.lease for r in records if r.lease}
        states = parse_probe(host.shell(probe_script(leases), name=f"leases on {host.name}", timeout=60).output)
    except (RunFailed, OSError) as error:
        return [f"host {host.name} did not answer ({str(error)[:120]}); its records stay for the next clean"]
    done = []
    for rec in records:
        if not may_sweep(rec.lease, states, cleaner=own_leases(), include_live=include_live):
            if states.get(rec.lease or "") is State.LIVE:
                done.append(f"kept {rec.folder} on host {host.name}: its campaign is running")
            continue
        if remove_remote_folder(host, rec.folder):  # and its record (named after it)
            done.append(f"removed {rec.folder} (and stopped what ran from it) on host {host.name}")
        else:
            done.append(f"host {host.name} did not answer; {rec.folder} may remain there (run `layerbench clean` "
                        "again)")
    return done
