"""The MySQL rootfs on a host: used in place only when the host sees the same package versions and the same mysqld
bytes at the same path (run against this machine as a local host: the same shell text an ssh: host runs)."""

from __future__ import annotations

import json
from pathlib import Path

from layerbench.hosts.inventory import Host
from layerbench.server.mysql_rootfs import MysqlRootfs
from layerbench.server.remote_rootfs import IN_PLACE, identity, rootfs_on_host, same_rootfs_there


def fake_rootfs(folder: Path, mysqld: bytes) -> MysqlRootfs:
    (folder / "rootfs/usr/sbin").mkdir(parents=True)
    (folder / "rootfs/usr/sbin/mysqld").write_bytes(mysqld)
    (folder / "versions.json").write_text(json.dumps({"mysql-server-core": "9.7.4-2"}, indent=1))
    return MysqlRootfs(folder)


def test_the_same_rootfs_at_the_same_path_is_used_in_place(tmp_path: Path) -> None:
    rootfs = fake_rootfs(tmp_path / "mysql-9.7.4-2-k", b"\x7fELF server bytes")
    there, facts = rootfs_on_host(Host("here"), rootfs, tmp_path, lambda _t: None)
    assert there == rootfs and facts == {"rootfs": str(rootfs.folder), "rootfs_how": IN_PLACE}


def test_other_mysqld_bytes_or_versions_are_not_the_same_rootfs(tmp_path: Path) -> None:
    rootfs = fake_rootfs(tmp_path / "a", b"\x7fELF server bytes")
    wanted = identity(rootfs.folder)
    other = fake_rootfs(tmp_path / "b", b"\x7fELF other bytes")
    assert same_rootfs_there(Host("here"), str(rootfs.folder), wanted)
    assert not same_rootfs_there(Host("here"), str(other.folder), wanted)
    (other.folder / "rootfs/usr/sbin/mysqld").write_bytes(b"\x7fELF server bytes")
    (other.folder / "versions.json").write_text("{}")
    assert not same_rootfs_there(Host("here"), str(other.folder), wanted)
    assert not same_rootfs_there(Host("here"), str(tmp_path / "missing"), wanted)
