"""Which server a host variant runs, from its `server: {flavour, version}` (or its `mysqld:` binary): the
command that starts it, the settings that place its own files, its flavour (read from the server's own
`--version`) and the identity its dataset snapshots are keyed by. The host backend starts what this module
resolves and never names a server program itself (docs/servers.md).

| server:                          | runs                                                          |
|----------------------------------|---------------------------------------------------------------|
| (nothing), flavour: mariadb      | the host's mariadbd (or the variant's mysqld:)                |
| flavour: mysql, version: '9.7'   | mysqld of the cached MySQL rootfs, through the rootfs's loader |
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field, replace
from functools import lru_cache

from layerbench.campaign.models import ConfigValue, HostVariant, ServerSettings
from layerbench.errors import BadInput, shown
from layerbench.hosts.procs import require_program
from layerbench.server.flavour import Flavour, detect_flavour

DEFAULT_MYSQL = "9.7"
VERSION_TIMEOUT = 10.0
# A MySQL of the rootfs reads no file outside it: LOAD DATA / SELECT INTO OUTFILE are off (the option has no
# default directory there, and a benchmark needs none).
ROOTFS_MYSQL_DEFAULTS: dict[str, ConfigValue] = {"secure-file-priv": "NULL"}


@dataclass(frozen=True)
class ServerProgram:
    """A server to start: its flavour, the command that runs it, and where its own files are."""

    flavour: Flavour
    command: tuple[str, ...]  # the program, or a loader and its arguments then the program
    paths: dict[str, ConfigValue] = field(default_factory=dict)  # my.cnf settings layerbench owns for it

    @property
    def program(self) -> str:
        return self.command[-1]

    def path_options(self) -> list[str]:
        return [f"--{key}={value}" for key, value in self.paths.items()]

    def identity(self) -> str:
        """The server's own `--version` line: what a dataset snapshot made by it is keyed by."""
        return version_text(self.command)


@lru_cache(maxsize=32)
def version_text(command: tuple[str, ...]) -> str:
    try:
        done = subprocess.run([*command, "--version"], capture_output=True, text=True, check=False,
                              timeout=VERSION_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() or "unknown"


def host_binary(variant: HostVariant) -> str:
    if variant.mysqld:
        path = shutil.which(variant.mysqld)
        if not path:
            raise BadInput(f"variants.{variant.name}.mysqld: {shown(variant.mysqld)} is not an executable; fix the "
                           "path")
        return path
    return require_program("mariadbd", "install mariadb-server (scripts/setup does it)")


def resolve_server(variant: HostVariant) -> ServerProgram:
    """The variant's server, or a one-line BadInput (an unknown version, a server not built, a mismatch)."""
    chosen = variant.server
    where = f"variants.{variant.name}.server"
    if chosen.flavour == "mysql":
        if variant.mysqld:
            raise BadInput(f"variants.{variant.name}.mysqld: give server.flavour: mysql or mysqld:, not both; "
                           "remove one")
        return rootfs_mysql(chosen.version or DEFAULT_MYSQL, where)
    binary = host_binary(variant)
    flavour = detect_flavour(binary, f"variants.{variant.name}.mysqld")
    check_wanted(chosen, flavour, where)
    return ServerProgram(flavour, (binary,))


def check_wanted(chosen: ServerSettings, flavour: Flavour, where: str) -> None:
    """A server.flavour / server.version the variant asks for is the one its binary is."""
    if chosen.flavour and chosen.flavour != flavour.name:
        raise BadInput(f"{where}.flavour: {chosen.flavour} asked, but the server binary is {flavour.label}; "
                       "fix the flavour or the mysqld: binary")
    if chosen.version and not version_matches(chosen.version, flavour.version):
        raise BadInput(f"{where}.version: {flavour.label} is installed here, not {chosen.flavour} {chosen.version}; "
                       f"use version '{'.'.join(flavour.version.split('.')[:2])}' or name another build with "
                       "mysqld:")


def version_matches(wanted: str, actual: str) -> bool:
    return actual == wanted or actual.startswith(f"{wanted}.")


def rootfs_mysql(version: str, where: str) -> ServerProgram:
    from layerbench.server.mysql_rootfs import require_rootfs

    rootfs = require_rootfs(version, f"{where}.version")
    command = tuple(rootfs.command())
    flavour = detect_flavour(command, f"{where}.version")
    flavour = replace(flavour, defaults={**flavour.defaults, **ROOTFS_MYSQL_DEFAULTS})
    return ServerProgram(flavour, command, dict(rootfs.paths()))


def snapshot_server(variant: object) -> HostVariant:
    """The private host server that prepares (and checks) a variant's dataset snapshot: the variant's own server
    for a host variant on this machine (its datadir format), else this host's MariaDB (the server the Docker,
    VM and Kubernetes images are built from)."""
    if isinstance(variant, HostVariant) and variant.server_host is None:
        chosen = ServerSettings(flavour=variant.server.flavour, version=variant.server.version)
        return HostVariant(name="prepare", backend="host", mysqld=variant.mysqld, server=chosen)
    return HostVariant(name="prepare", backend="host")


def server_fields(variant: HostVariant) -> dict[str, str | None]:
    """What a snapshot's meta.json keeps of the server that made it (server_from_fields reads it back)."""
    return {"flavour": variant.server.flavour, "version": variant.server.version, "mysqld": variant.mysqld}


def server_from_fields(name: str, fields: object) -> HostVariant:
    """The server a snapshot's meta.json names (this host's MariaDB for a snapshot from before it was kept)."""
    if not isinstance(fields, dict):
        return HostVariant(name=name, backend="host")
    chosen = ServerSettings(flavour=fields.get("flavour"), version=fields.get("version"))
    return HostVariant(name=name, backend="host", mysqld=fields.get("mysqld"), server=chosen)
