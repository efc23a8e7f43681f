"""PostgreSQL 18 from its sid rootfs (server/postgresql_rootfs.py), without building one: the pinned versions, the
script initdb starts as `postgres` (it must find the rootfs from where it lies and run the server through the
rootfs's loader with every argument kept), and the commands a built rootfs gives."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from layerbench.errors import BadInput
from layerbench.server import postgresql_rootfs as pgr
from layerbench.server.mysql_rootfs import pinned


def test_the_pinned_major_and_its_forms() -> None:
    assert pinned("18", pgr.POSTGRESQL) == pgr.RELEASES["18"]
    assert pinned("18.6", pgr.POSTGRESQL) == pgr.RELEASES["18"]
    assert pgr.is_rootfs_version("18") and not pgr.is_rootfs_version("15") and not pgr.is_rootfs_version("1")


def test_another_version_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", str(tmp_path))
    with pytest.raises(BadInput, match=r"^v: PostgreSQL '17' is not a version layerbench can build; use one of 18$"):
        pgr.require_rootfs("17", "v")
    with pytest.raises(BadInput, match=r"build it with: layerbench server build postgresql 18 \(about 2 minutes"):
        pgr.require_rootfs("18", "v")


def test_the_script_beside_initdb_runs_the_rootfs_server_through_its_loader(tmp_path: Path) -> None:
    """A rootfs of stand-ins: its loader prints what it was asked to run; the script must pass it the rootfs's
    library folder and server, and every argument as it came (spaces and quotes kept)."""
    root = tmp_path / "a folder" / "rootfs"
    (root / "usr/lib/postgresql/18/bin").mkdir(parents=True)
    (root / "usr/lib/postgresql/18/bin/initdb").write_text("initdb stand-in")
    (root / "lib64").mkdir()
    loader = root / pgr.LOADER
    loader.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    loader.chmod(0o755)
    (root / "usr/share").mkdir()
    pgr.add_wrapped_initdb(root)
    folder = pgr.wrapped_dir(root)
    assert (folder / "initdb").read_text() == "initdb stand-in"
    assert (root / pgr.WRAPPED / "usr/share").resolve() == (root / "usr/share").resolve()
    done = subprocess.run([str(folder / "postgres"), "--boot", "-c", "a b='c d'"], capture_output=True, text=True,
                          timeout=10, check=True)
    assert done.stdout.splitlines() == ["--library-path", str((root / pgr.LIBRARIES).resolve()),
                                        str((root / "usr/lib/postgresql/18/bin/postgres").resolve()),
                                        "--boot", "-c", "a b='c d'"]


def test_a_built_rootfs_gives_the_loader_commands(tmp_path: Path) -> None:
    built = pgr.PostgresqlRootfs(tmp_path / "postgresql-18.6-3-abc")
    root = str(built.root)
    assert built.server() == (f"{root}/lib64/ld-linux-x86-64.so.2", "--library-path",
                              f"{root}/usr/lib/x86_64-linux-gnu", f"{root}/usr/lib/postgresql/18/bin/postgres")
    assert built.initdb()[-1] == f"{root}/lb/usr/lib/postgresql/18/bin/initdb"
