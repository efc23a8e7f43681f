"""Which server a private server on this host runs (a host variant's, or the one that prepares a dataset), from
its `server: {flavour, version}` (or its `mysqld:` binary): the
command that starts it, the settings that place its own files, its flavour (read from the server's own
`--version`) and the identity its dataset snapshots are keyed by. The host backend starts what this module
resolves and never names a server program itself (docs/servers.md).

| server:                          | runs                                                          |
|----------------------------------|---------------------------------------------------------------|
| (nothing), flavour: mariadb      | the host's mariadbd (or the variant's mysqld:)                |
| flavour: mysql, version: '9.7'   | mysqld of the cached MySQL rootfs, through the rootfs's loader |
| flavour: postgresql              | this machine's PostgreSQL 15 (server/postgresql.py)            |
| mysqld: ROOT/usr/sbin/mysqld     | that binary through ROOT's own loader (server/binary_root.py)  |

A server in a container of the local images (the Docker backend) is named by `image_server`: the same flavour,
the program as the image runs it (the MySQL image is the rootfs itself, so its mysqld needs no loader there); a
`mysqld:` variant's image or guest (made from the binary's root) by `rooted_image_server`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Protocol

from layerbench.errors import BadInput, shown
from layerbench.hosts.procs import require_program
from layerbench.server.flavour import MARIADB, MYSQL_DEFAULTS, Flavour, detect_flavour, parse_postgres_version
from layerbench.server.postgresql_rootfs import RELEASES as ROOTFS_POSTGRESQL
from layerbench.server.postgresql_rootfs import is_rootfs_version
from layerbench.server.settings import ConfigValue, ServerSettings
from layerbench.versions import printed_version

DEFAULT_MYSQL = "9.7"
DEFAULT_POSTGRESQL = "15"  # Debian 12's
VERSION_TIMEOUT = 10.0
# A MySQL of the rootfs reads no file outside it: LOAD DATA / SELECT INTO OUTFILE are off (the option has no
# default directory there, and a benchmark needs none).
ROOTFS_MYSQL_DEFAULTS: dict[str, ConfigValue] = {"secure-file-priv": "NULL"}


class ChosenServer(Protocol):
    """What names a server to run: a host variant, or a ServerChoice."""

    @property
    def name(self) -> str: ...
    @property
    def server(self) -> ServerSettings: ...
    @property
    def mysqld(self) -> str | None: ...


@dataclass(frozen=True)
class ServerChoice:
    """A server named by its flavour and version (or its binary), without a variant: the one that prepares or
    checks a dataset snapshot."""

    name: str
    flavour: str | None = None
    version: str | None = None
    mysqld: str | None = None

    @property
    def server(self) -> ServerSettings:
        return ServerSettings(flavour=self.flavour, version=self.version)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ServerProgram:
    """A server to start: its flavour, the command that runs it, and where its own files are."""

    flavour: Flavour
    command: tuple[str, ...]  # the program, or a loader and its arguments then the program
    paths: dict[str, ConfigValue] = field(default_factory=dict)  # my.cnf settings layerbench owns for it
    initdb: tuple[str, ...] = ()  # PostgreSQL's initdb when it is not this machine's (a rootfs's, through its loader)

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
    return printed_version(command, timeout=VERSION_TIMEOUT) or "unknown"


def host_binary(variant: ChosenServer) -> str:
    if variant.mysqld:
        path = shutil.which(variant.mysqld)
        if not path:
            raise BadInput(f"variants.{variant.name}.mysqld: {shown(variant.mysqld)} is not an executable; fix the "
                           "path")
        return path
    return require_program("mariadbd", "install mariadb-server (scripts/setup does it)")


def resolve_server(variant: ChosenServer) -> ServerProgram:
    """The variant's server, or a one-line BadInput (an unknown version, a server not built, a mismatch)."""
    chosen = variant.server
    where = f"variants.{variant.name}.server"
    if chosen.flavour == "postgresql":
        if variant.mysqld:
            raise BadInput(f"variants.{variant.name}.mysqld: a postgresql variant runs this machine's PostgreSQL; "
                           "remove mysqld:")
        version = chosen.version or DEFAULT_POSTGRESQL
        if is_rootfs_version(version):
            return rootfs_postgresql(version, where)
        return host_postgresql(version, where)
    if chosen.flavour == "mysql":
        if variant.mysqld:
            raise BadInput(f"variants.{variant.name}.mysqld: give server.flavour: mysql or mysqld:, not both; "
                           "remove one")
        return rootfs_mysql(chosen.version or DEFAULT_MYSQL, where)
    binary = host_binary(variant)
    rooted = root_server(binary, f"variants.{variant.name}.mysqld") if variant.mysqld else None
    if rooted is not None:
        check_wanted(chosen, rooted.flavour, where)
        return rooted
    flavour = detect_flavour(binary, f"variants.{variant.name}.mysqld")
    check_wanted(chosen, flavour, where)
    return ServerProgram(flavour, (binary,))


def root_server(binary: str, where: str) -> ServerProgram | None:
    """A `mysqld:` inside a root filesystem (server/binary_root.py), run here through that root's own loader and
    libraries with the root's own files, or None when the binary is not inside one (it runs as it is). A MariaDB
    there is refused: its install script would run the binary without the root's loader."""
    from layerbench.server.binary_root import check_libraries, find_root

    found = find_root(binary)
    if found is None:
        return None
    check_libraries(found, where)
    flavour = detect_flavour(found.command(), where)
    if flavour.is_mariadb:
        raise BadInput(f"{where}: {flavour.label} inside a root filesystem ({shown(str(found.root))}): not yet (its "
                       "install script runs the server without the root's loader); use a MySQL or Percona Server "
                       "binary there, or this machine's MariaDB")
    flavour = replace(flavour, defaults={**flavour.defaults, **ROOTFS_MYSQL_DEFAULTS})
    return ServerProgram(flavour, found.command(), found.paths())


def rooted_image_server(variant: ChosenServer) -> ServerProgram:
    """The server of an image (or guest) made from the root of the variant's `mysqld:`: its flavour read here
    through the root's loader, the program and its files at their paths inside; a one-line BadInput when the
    binary is not inside a root, needs a library the root lacks, or is not a server layerbench knows."""
    from layerbench.server.binary_root import require_root

    where = f"variants.{variant.name}.mysqld"
    if variant.server.flavour == "mysql":
        raise BadInput(f"{where}: give server.flavour: mysql or mysqld:, not both; remove one")
    found = require_root(host_binary(variant), where)
    on_host = root_server(str(found.binary), where)
    assert on_host is not None  # require_root found the root
    check_wanted(variant.server, on_host.flavour, f"variants.{variant.name}.server")
    return ServerProgram(on_host.flavour, (found.inside,), found.paths_inside())


def check_rooted_binary(variant: ChosenServer, programs: tuple[str, ...], runner: str) -> ServerProgram:
    """A container, guest or pod variant's `mysqld:`: a server layerbench knows, inside a root that holds its
    libraries and the `programs` that `runner` (the container's command, the guest's init, the pod) runs besides
    it; else one line naming what is missing. Returns the server as the image or guest made from the root runs it."""
    from layerbench.server.binary_root import require_root

    where = f"variants.{variant.name}.mysqld"
    found = require_root(str(variant.mysqld), where)
    missing = found.missing_programs(programs)
    if missing:
        raise BadInput(f"{where}: its root {shown(str(found.root))} has no {', '.join(missing)}, which {runner} "
                       "runs; install them in that root (debootstrap's minbase has them)")
    return rooted_image_server(variant)


def check_wanted(chosen: ServerSettings, flavour: Flavour, where: str) -> None:
    """A server.flavour / server.version the variant asks for is the one its binary is."""
    if chosen.flavour and chosen.flavour != flavour.name:
        raise BadInput(f"{where}.flavour: {chosen.flavour} asked, but the server binary is {flavour.label}; "
                       "fix the flavour or the mysqld: binary")
    if chosen.version and not version_matches(chosen.version, flavour.version):
        raise BadInput(f"{where}.version: {flavour.label} is installed here, not {chosen.flavour} {chosen.version}; "
                       f"use version '{'.'.join(flavour.version.split('.')[:2])}' or name another build with "
                       "mysqld:")


def host_postgresql(version: str, where: str) -> ServerProgram:
    """Debian's PostgreSQL of this machine (server/postgresql.py), its version read from `postgres --version`; a
    one-line BadInput when it is not installed or is not the version asked for."""
    from layerbench.server.postgresql import program

    postgres = program("postgres")
    if not postgres.is_file():
        raise BadInput(f"{where}.flavour: PostgreSQL is not installed here ({postgres} is missing); install "
                       "postgresql-15 (scripts/setup does it)")
    said = version_text((str(postgres),))
    flavour = parse_postgres_version(said)
    if flavour is None:
        raise BadInput(f"{where}.flavour: {postgres} --version says {shown(said, 120)}, not a PostgreSQL layerbench "
                       "knows; reinstall postgresql-15")
    if not version_matches(version, flavour.version):
        raise BadInput(f"{where}.version: {flavour.label} is installed here, not PostgreSQL {version}; use version "
                       f"'{flavour.major}', or {' or '.join(repr(v) for v in ROOTFS_POSTGRESQL)} from a rootfs "
                       f"(layerbench server build postgresql {next(iter(ROOTFS_POSTGRESQL))})")
    return ServerProgram(flavour, (str(postgres),))


def rootfs_postgresql(version: str, where: str) -> ServerProgram:
    """A newer PostgreSQL from its cached sid rootfs (server/postgresql_rootfs.py), run through the rootfs's loader;
    one line when it is not built, or says another version."""
    from layerbench.server.postgresql_rootfs import require_rootfs

    rootfs = require_rootfs(version, f"{where}.version")
    command = rootfs.server()
    said = version_text(command)
    flavour = parse_postgres_version(said)
    if flavour is None or not version_matches(version, flavour.version):
        raise BadInput(f"{where}.version: the PostgreSQL {version} rootfs's postgres --version says "
                       f"{shown(said, 120)}; rebuild it (remove {rootfs.folder}, then layerbench server build "
                       f"postgresql {version})")
    return ServerProgram(flavour, command, initdb=rootfs.initdb())


def version_matches(wanted: str, actual: str) -> bool:
    return actual == wanted or actual.startswith(f"{wanted}.")


def rootfs_mysql(version: str, where: str) -> ServerProgram:
    from layerbench.server.mysql_rootfs import require_rootfs

    rootfs = require_rootfs(version, f"{where}.version")
    command = tuple(rootfs.command())
    flavour = detect_flavour(command, f"{where}.version")
    flavour = replace(flavour, defaults={**flavour.defaults, **ROOTFS_MYSQL_DEFAULTS})
    return ServerProgram(flavour, command, dict(rootfs.paths()))


IMAGE_PROGRAMS = {"mariadb": "mariadbd", "mysql": "/usr/sbin/mysqld"}  # the server program of each local image


def image_server(variant: ChosenServer) -> ServerProgram:
    """The server of the locally built image a container variant runs: MariaDB (the host's package), the MySQL
    of the cached rootfs (its flavour read from the rootfs's own mysqld, here) or PostgreSQL (the image holds this
    machine's postgresql-15: the same program at the same path); a one-line BadInput when the rootfs is not built
    (with the command that builds it) or PostgreSQL is not installed here."""
    if variant.server.flavour == "postgresql":
        return host_postgresql(variant.server.version or DEFAULT_POSTGRESQL, f"variants.{variant.name}.server")
    if variant.server.flavour == "mysql":
        on_host = rootfs_mysql(variant.server.version or DEFAULT_MYSQL, f"variants.{variant.name}.server")
        return ServerProgram(on_host.flavour, (IMAGE_PROGRAMS["mysql"],))
    return ServerProgram(MARIADB, (IMAGE_PROGRAMS["mariadb"],))


def own_image_mysql() -> ServerProgram:
    """The MySQL of an image of the user's (a variant's image: with flavour mysql, a pushed one among them): the
    program where layerbench's MySQL image has it, its version unknown until it runs (what the image must hold:
    docs/backends/kubernetes.md)."""
    flavour = Flavour("mysql", "", {**MYSQL_DEFAULTS, **ROOTFS_MYSQL_DEFAULTS})
    return ServerProgram(flavour, (IMAGE_PROGRAMS["mysql"],))


def own_image_postgresql() -> ServerProgram:
    """The PostgreSQL of a registry's image (a variant's image: with flavour postgresql: the one `layerbench image
    push` pushed): the program where layerbench's PostgreSQL image has it (this machine's postgresql-15 paths), its
    exact version unknown until it runs (what the image must hold: docs/backends/kubernetes.md#postgresql)."""
    from layerbench.server.postgresql import program

    return ServerProgram(Flavour("postgresql", ""), (str(program("postgres")),))


def server_fields(variant: ChosenServer) -> dict[str, str | None]:
    """What a snapshot's meta.json keeps of the server that made it (server_from_fields reads it back)."""
    return {"flavour": variant.server.flavour, "version": variant.server.version, "mysqld": variant.mysqld}


def server_from_fields(name: str, fields: object) -> ServerChoice:
    """The server a snapshot's meta.json names (this host's MariaDB for a snapshot from before it was kept)."""
    if not isinstance(fields, dict):
        return ServerChoice(name)
    return ServerChoice(name, fields.get("flavour"), fields.get("version"), fields.get("mysqld"))
