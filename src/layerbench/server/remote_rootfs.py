"""The MySQL rootfs on an ssh: host, for a host variant whose server runs there (backends/host/remote.py): the
same bytes as this machine's cached rootfs (server/mysql_rootfs.py), run there through the rootfs's own loader.

Used in place when the host already sees this rootfs at the same path, with the same package versions
(versions.json) and the same mysqld bytes (sha256): a host that shares this machine's file system (the lab's
`dbssh`, which is this machine reached over SSH) or holds a copy at the same path. Otherwise it is sent once per
host into `<work_dir>/servers/<rootfs folder>/` with rsync (which checks every file it sends), checked there by
the same two facts, and marked (`shipped.json`) so later runs reuse it; one sender at a time (the host's lock)."""

from __future__ import annotations

import hashlib
import json
import shlex
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from layerbench.errors import RunFailed
from layerbench.hosts.inventory import Host
from layerbench.server.mysql_rootfs import MysqlRootfs
from layerbench.server.remote_files import host_lock

SHIPPED = "shipped.json"
MYSQLD = "rootfs/usr/sbin/mysqld"


@lru_cache(maxsize=8)
def identity(folder: Path) -> tuple[str, str]:
    """(versions.json text, sha256 of mysqld) of a rootfs folder here: what a copy elsewhere must match."""
    digest = hashlib.sha256()
    with (folder / MYSQLD).open("rb") as handle:
        for block in iter(lambda: handle.read(8 << 20), b""):
            digest.update(block)
    return (folder / "versions.json").read_text(), digest.hexdigest()


def same_rootfs_there(host: Host, folder: str, wanted: tuple[str, str]) -> bool:
    """The host has a rootfs at `folder` with the same versions.json and the same mysqld bytes."""
    q = shlex.quote(folder)
    done = host.shell(f"cat {q}/versions.json 2>/dev/null && echo LB-SUM && sha256sum {q}/{MYSQLD} 2>/dev/null; "
                      "true", name=f"MySQL rootfs on {host.name}", timeout=120)
    versions, _, summed = done.output.partition("LB-SUM\n")
    return versions.strip() == wanted[0].strip() and summed.split(" ")[0].strip() == wanted[1]


Where = tuple[MysqlRootfs, dict[str, object]]
IN_PLACE = "in place (the same path, package versions and mysqld bytes as this machine's)"


def rootfs_on_host(host: Host, rootfs: MysqlRootfs, log_dir: Path | None, say: Callable[[str], None]) -> Where:
    """The rootfs as the host sees it, and what happened (for the run's record): used in place, reused from an
    earlier shipment, or shipped now."""
    wanted = identity(rootfs.folder)
    if same_rootfs_there(host, str(rootfs.folder), wanted):
        return rootfs, {"rootfs": str(rootfs.folder), "rootfs_how": IN_PLACE}
    target = f"{host.work_dir}/servers/{rootfs.folder.name}"
    with host_lock(host, f"{target}.lock", f"MySQL rootfs {rootfs.folder.name}"):
        how = ship_locked(host, rootfs, target, wanted, log_dir, say)
    return MysqlRootfs(Path(target)), {"rootfs": target, "rootfs_how": how}


def ship_locked(host: Host, rootfs: MysqlRootfs, target: str, wanted: tuple[str, str], log_dir: Path | None,
                say: Callable[[str], None]) -> str:
    q, mark = shlex.quote(target), hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:32]
    if mark in host.shell(f"cat {q}/{SHIPPED} 2>/dev/null; true", name=f"marker on {host.name}").output:
        return "shipped earlier"
    started = time.monotonic()
    say(f"shipping the MySQL rootfs {rootfs.folder.name} to host {host.name} (about 420 MB, once per host)")
    host.shell(f"rm -f {q}/{SHIPPED} && mkdir -p {q}", name=f"mkdir on {host.name}")
    log = log_dir / "ship-rootfs.log" if log_dir is not None else None
    done = host.rsync_to(rootfs.folder, target, log_path=log, timeout=None)
    if done.returncode != 0:
        raise RunFailed(f"hosts.{host.name}: shipping the MySQL rootfs failed: "
                        f"{(done.output.strip().splitlines() or ['no output'])[-1][:200]}")
    if not same_rootfs_there(host, target, wanted):
        raise RunFailed(f"hosts.{host.name}: the MySQL rootfs sent to {target} does not match this machine's "
                        "(versions.json or mysqld's sha256)")
    note = json.dumps({"mark": mark, "seconds": round(time.monotonic() - started, 3)})
    host.shell(f"cat > {q}/{SHIPPED}", input_text=note, name=f"marker on {host.name}")
    return f"shipped now in {time.monotonic() - started:.1f} s"
