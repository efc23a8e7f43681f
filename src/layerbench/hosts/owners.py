"""Owner records: a note of every server process and work folder layerbench starts, written before the thing
exists and removed after it is gone, so that after a crash (even SIGKILL of the harness) `layerbench clean`
(cleanup.py) removes exactly those, and nothing else. A leaf module: backends write records, `clean` reads them."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from layerbench.hosts import procfs
from layerbench.hosts.lease import local_lease
from layerbench.hosts.workdirs import work_root


def owners_dir() -> Path:
    return work_root() / "owners"


@dataclass(frozen=True)
class Owned:
    """One resource layerbench created: a process and/or a folder, and the harness that owns it."""

    label: str
    harness_pid: int
    pid: int | None
    marker: str  # a string the process's command line must contain (so a reused PID is never killed)
    paths: tuple[str, ...]
    remote: dict | None = None  # {"host": name, "entry": inventory entry, "folder": path} on a host over SSH
    lease: str | None = None  # its harness's lease file on this machine (lease.py); None in older records

    @property
    def file(self) -> Path:
        return owners_dir() / f"{self.label}.json"


def record(label: str, *, pid: int | None, marker: str, paths: list[Path], remote: dict | None = None) -> Owned:
    owned = Owned(label, os.getpid(), pid, marker, tuple(str(p) for p in paths), remote, local_lease())
    owners_dir().mkdir(parents=True, exist_ok=True)
    owned.file.write_text(json.dumps(owned.__dict__))
    return owned


def private_folder(label: str, prefix: str, also: list[Path] | None = None) -> Path:
    """A new folder only this user can read, under the temp dir, noted (with the folders `also` names, which
    the caller creates next) before it exists: a SIGKILL between the two leaves nothing `clean` cannot find."""
    folder = Path(tempfile.gettempdir()) / f"{prefix}{secrets.token_hex(6)}"
    record(label, pid=None, marker="", paths=[*(also or []), folder])
    folder.mkdir(mode=0o700)
    return folder


def forget(label: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (owners_dir() / f"{label}.json").unlink()


def recorded() -> list[Owned]:
    out = []
    for file in sorted(owners_dir().glob("*.json")) if owners_dir().exists() else []:
        try:
            data = json.loads(file.read_text())
            out.append(Owned(data["label"], int(data["harness_pid"]), data.get("pid"), data["marker"],
                             tuple(data.get("paths", ())), data.get("remote"),
                             data["lease"] if isinstance(data.get("lease"), str) else None))
        except (ValueError, KeyError, TypeError, OSError):
            file.unlink(missing_ok=True)
    return out


def cmdline(pid: int) -> str:
    return " ".join(procfs.cmdline(pid))


def processes_with(marker: str) -> list[int]:
    """PIDs whose command line contains marker (a path unique to one server: its my.cnf)."""
    if not marker:
        return []
    found = []
    for pid in procfs.pids():
        if pid != os.getpid() and marker in cmdline(pid):
            found.append(pid)
    return found
