"""Owner records on the ssh: hosts themselves, so that a harness with empty state (another machine, a new CI
runner) finds what a killed one left there.

Before a harness makes a folder on a host (a server's run folder, sysbench's, a neighbour's), it notes it here
(owners.py), takes its lease on the host (lease.py) and writes `<work_dir>/owners/<folder's name>.rec` there:
`lease=<its lease file>` and `folder=<the folder>`. remote.remove_remote_folder removes the record with the folder.
`reclaim.sweep_host` reads a host's records, asks the host which leases are still held, and removes the folders (and
stops what runs from them) of the dead ones only."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

from layerbench.errors import RunFailed
from layerbench.hosts import owners
from layerbench.hosts.inventory import Host
from layerbench.hosts.lease import host_lease

RECORD_MARK = "LB-RECORD"
NAME = re.compile(r"[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]{0,200}")


@dataclass(frozen=True)
class HostRecord:
    """One owner record read on a host: its file there, its harness's lease file, the folder it owns."""

    file: str
    lease: str | None
    folder: str


def claim_on_host(host: Host, label: str, folder: str) -> None:
    """Note `folder` on `host` before it exists: here (owner record `label`), then the lease on the host, then the
    record there. RunFailed when the host does not answer or refuses."""
    remote = {"host": host.name, "entry": host.entry.model_dump(exclude_none=True), "folder": folder}
    owners.record(label, pid=None, marker="", paths=[], remote=remote)
    if host.is_local:
        return
    lease = host_lease(host)
    path = host_record(host, folder)
    q = shlex.quote(path)
    done = host.shell(f"umask 077 && mkdir -p $(dirname {q}) && cat > {q}", input_text=record_text(lease, folder),
                      name=f"owner record on {host.name}", timeout=60)
    if done.returncode != 0:
        raise RunFailed(f"hosts.{host.name}: cannot write the owner record {path}: {done.output.strip()[:200]}")


def host_record(host: Host, folder: str) -> str:
    """The owner record on the host of what runs from `folder`: named after the folder."""
    return f"{host.work_dir}/owners/{folder.rstrip('/').rsplit('/', 1)[-1]}.rec"


def record_text(lease: str, folder: str) -> str:
    return f"lease={lease}\nfolder={folder}\n"


def safe_folder(folder: str, record_file: str) -> bool:
    """A folder a record may name for removal: absolute, normal (no `.`/`..`, no doubled slash), two levels deep
    at least, and named as the record is (`<name>.rec` owns `.../<name>`): a record written by hand or by
    anyone else never names `/`, `/tmp` or a folder of another record."""
    parts = folder.split("/")
    name = record_file.rsplit("/", 1)[-1].removesuffix(".rec")
    return (folder.startswith("/") and len(parts) >= 3 and all(parts[1:]) and "." not in parts and ".." not in parts
            and NAME.fullmatch(name) is not None and parts[-1] == name and os.path.normpath(folder) == folder
            and folder.isprintable())


def parse_records(text: str) -> list[HostRecord]:
    """`LB-RECORD <file>` lines, each followed by that record's `key=value` lines -> the well-formed records (a
    record without a folder, or with a folder safe_folder refuses, is left out)."""
    found: list[HostRecord] = []
    current: dict[str, str] | None = None
    for line in [*text.splitlines(), f"{RECORD_MARK} "]:
        if line.startswith(f"{RECORD_MARK} "):
            if current is not None and safe_folder(current.get("folder", ""), current["file"]):
                found.append(HostRecord(current["file"], current.get("lease"), current["folder"]))
            current = {"file": line[len(RECORD_MARK) + 1:]}
        elif current is not None:
            key, sep, value = line.partition("=")
            if sep and key in ("lease", "folder") and key not in current:
                current[key] = value
    return found


def list_script(host: Host) -> str:
    folder = shlex.quote(f"{host.work_dir}/owners")
    return (f"for f in {folder}/*.rec; do [ -f \"$f\" ] || continue; echo \"{RECORD_MARK} $f\"; "
            "head -c 4096 \"$f\"; echo; done; true")
