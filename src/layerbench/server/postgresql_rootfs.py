"""A newer PostgreSQL than Debian 12's, from Debian's unstable archive, as a cached root filesystem (the recipe of
server/mysql_rootfs.py: `debootstrap --variant=minbase sid` plus the pinned `postgresql-18`, its packages kept),
built when asked (`layerbench server build postgresql 18`). Its programs run as plain host processes through the
rootfs's own loader and libraries, as MySQL 9.7's mysqld does:

- postgres (the server, `--describe-config`, `-C`): `<root>/lib64/ld-linux-x86-64.so.2 --library-path
  <root>/usr/lib/x86_64-linux-gnu <root>/usr/lib/postgresql/18/bin/postgres`;
- initdb: the same loader, on a copy of initdb in `<root>/lb/usr/lib/postgresql/18/bin/`, beside a `postgres`
  script that runs the real server through that loader (initdb starts the `postgres` beside it, which, run
  directly, would load this machine's older C library).

Each program finds its own files (`share/`, `lib/`) relative to where it lies, so the server reads the rootfs's
and never this machine's PostgreSQL 15's; `<root>/lb/usr/share` points at the rootfs's `usr/share` for initdb's
copy. The package's own cluster is never made (`create_main_cluster = false` before the install) and nothing is
started in the rootfs (a policy-rc.d that refuses)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import BadInput, shown
from layerbench.server.mysql_rootfs import (
    Recipe,
    Say,
    build_command,
    built_folders,
    ensure_folder,
    find_folder,
    known_versions,
    pinned,
)

MAJOR = "18"
RELEASES = {MAJOR: "18.6-3"}  # sid's postgresql-18 on 2026-11-29; its packages are kept once downloaded
LOADER = "lib64/ld-linux-x86-64.so.2"
LIBRARIES = "usr/lib/x86_64-linux-gnu"
WRAPPED = "lb"  # <root>/lb/usr/lib/postgresql/<major>/bin: initdb's copy and the postgres it starts
SERVER_SCRIPT = """#!/bin/sh
# written by layerbench: initdb starts the postgres beside it; this one runs the rootfs's server through the
# rootfs's own loader and libraries (server/postgresql_rootfs.py)
root=$(cd "$(dirname "$0")/../../../../../.." && pwd -P)
exec "$root/{loader}" --library-path "$root/{libraries}" "$root/usr/lib/postgresql/{major}/bin/postgres" "$@"
"""
BEFORE_INSTALL = ("mkdir -p /etc/postgresql-common && echo 'create_main_cluster = false' > "
                  "/etc/postgresql-common/createcluster.conf && printf '#!/bin/sh\\nexit 101\\n' > "
                  "/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d")
AFTER_INSTALL = "rm -f /usr/sbin/policy-rc.d"


def bin_dir(root: Path, major: str = MAJOR) -> Path:
    return root / "usr/lib/postgresql" / major / "bin"


def wrapped_dir(root: Path, major: str = MAJOR) -> Path:
    return root / WRAPPED / "usr/lib/postgresql" / major / "bin"


def add_wrapped_initdb(root: Path) -> None:
    """initdb's copy and the postgres script beside it (the table above); share/ reached through a link."""
    folder = wrapped_dir(root)
    folder.mkdir(parents=True)
    shutil.copy2(bin_dir(root) / "initdb", folder / "initdb")
    script = folder / "postgres"
    script.write_text(SERVER_SCRIPT.format(loader=LOADER, libraries=LIBRARIES, major=MAJOR))
    script.chmod(0o755)
    (root / WRAPPED / "usr/share").symlink_to("../../usr/share")


POSTGRESQL = Recipe("postgresql", "PostgreSQL", f"postgresql-{MAJOR}", RELEASES,
                    f"usr/lib/postgresql/{MAJOR}/bin/postgres", before_install=BEFORE_INSTALL,
                    after_install=AFTER_INSTALL, finish=add_wrapped_initdb, size="300 MB",
                    also=("systemd-standalone-sysusers", "systemd-standalone-tmpfiles"), with_apt=True,
                    with_proc=True)
BUILD_SECONDS = 120


@dataclass(frozen=True)
class PostgresqlRootfs:
    """A built rootfs: where it is and the commands of its server and initdb."""

    folder: Path

    @property
    def root(self) -> Path:
        return self.folder / "rootfs"

    def through_loader(self, program: Path) -> tuple[str, ...]:
        return (str(self.root / LOADER), "--library-path", str(self.root / LIBRARIES), str(program))

    def server(self) -> tuple[str, ...]:
        return self.through_loader(bin_dir(self.root) / "postgres")

    def initdb(self) -> tuple[str, ...]:
        return self.through_loader(wrapped_dir(self.root) / "initdb")


def is_rootfs_version(version: str) -> bool:
    """A version a rootfs provides ('18', '18.6'), rather than this machine's."""
    return pinned(version, POSTGRESQL) is not None


def require_rootfs(version: str, where: str) -> PostgresqlRootfs:
    """The built rootfs of a PostgreSQL version a campaign names, or one line with the command that builds it."""
    package_version = pinned(version, POSTGRESQL)
    if package_version is None:
        raise BadInput(f"{where}: PostgreSQL {shown(version)} is not a version layerbench can build; use one of "
                       f"{known_versions(POSTGRESQL)}")
    folder = find_folder(package_version, POSTGRESQL)
    if folder is None:
        raise BadInput(f"{where}: PostgreSQL {version} is not built on this machine; build it with: "
                       f"{build_command(version, POSTGRESQL)} (about {BUILD_SECONDS // 60} minutes, "
                       f"{POSTGRESQL.size})")
    return PostgresqlRootfs(folder)


def ensure_rootfs(version: str = MAJOR, say: Say | None = None) -> PostgresqlRootfs:
    """The rootfs of a PostgreSQL version, built now when missing (from the kept packages when they are cached)."""
    return PostgresqlRootfs(ensure_folder(version, POSTGRESQL, say))


def built_rootfses() -> list[tuple[str, PostgresqlRootfs]]:
    """(package version, rootfs) of every built PostgreSQL rootfs in the cache."""
    return [(version, PostgresqlRootfs(folder)) for version, folder in built_folders(POSTGRESQL)]
