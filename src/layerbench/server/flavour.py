"""Server flavours: which server a binary is (MariaDB, MySQL 8.0/8.4/9.x, Percona Server 8), read from its
`--version`, and what differs between them for layerbench: how an empty datadir is made, the account SQL
(its authentication plugin) and the my.cnf defaults a flavour needs on top
of the shared ones. Backends ask the flavour; they never name a server program themselves.

| `--version` says                                   | flavour  | datadir made by                      |
|----------------------------------------------------|----------|--------------------------------------|
| `Ver 10.11.6-MariaDB-...`, `Ver 11.4.2-MariaDB...`  | mariadb  | mariadb-install-db (or mysql_install_db) |
| `Ver 8.0.36 for Linux ... (MySQL Community Server` | mysql    | mysqld --initialize-insecure         |
| `Ver 8.4.0 for Linux ...`, `Ver 9.7.4-2 for Linux` | mysql    | mysqld --initialize-insecure         |
| `Ver 8.0.36-28 for Linux ... (Percona Server`      | percona  | mysqld --initialize-insecure         |
| anything else (MariaDB before 10.4, MySQL 5.7, no `Ver`, no answer) | refused at validate time (BadInput, exit 2) |

(MariaDB before 10.4: its install script has no `--auth-root-authentication-method`, which layerbench passes.)

MySQL 8.4 and 9 create accounts with caching_sha2_password (mysql_native_password is gone in 9): the account
SQL names that plugin, and Debian 12's sysbench (libmariadb) logs in to it over plain TCP, fetching the
server's RSA key, also right after a restart. MariaDB keeps its default (mysql_native_password).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from layerbench.errors import BadInput, shown
from layerbench.hosts.procs import TimedOut
from layerbench.secrets import Secret
from layerbench.server.settings import ConfigValue
from layerbench.versions import version_output

VERSION_TIMEOUT = 10.0
SUPPORTED = "MariaDB 10.4 or later, MySQL 8.0/8.4/9 or Percona Server 8"
MARIADB_OLDEST = (10, 4)  # mariadb-install-db --auth-root-authentication-method (install_db_command) came in 10.4
_VERSION = re.compile(r"\bVer\s+(?P<version>(?P<major>\d+)\.(?P<minor>\d+)\.\d+)(?P<suffix>\S*)")


@dataclass(frozen=True)
class Flavour:
    """One server family at one version, and what layerbench does differently for it."""

    name: str  # "mariadb", "mysql" or "percona"
    version: str  # "10.11.6", "8.0.36"
    defaults: dict[str, ConfigValue] = field(default_factory=dict)  # my.cnf settings on top of the shared ones

    @property
    def is_mariadb(self) -> bool:
        return self.name == "mariadb"

    @property
    def is_postgresql(self) -> bool:
        return self.name == "postgresql"

    @property
    def driver(self) -> str:
        """sysbench's --db-driver for this server (and how layerbench's own client connects)."""
        return "pgsql" if self.is_postgresql else "mysql"

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0]) if self.version[:1].isdigit() else 0

    @property
    def label(self) -> str:
        """MariaDB 10.11.6, MySQL 9.7.4 (what a user reads)."""
        name = {"mariadb": "MariaDB", "mysql": "MySQL", "percona": "Percona Server",
                "postgresql": "PostgreSQL"}.get(self.name, self.name)
        return f"{name} {self.version}".strip()

    def init_command(self, server: str | Sequence[str], datadir: Path, extra: list[str] | None = None,
                     paths: Sequence[str] = ()) -> list[str]:
        """The command that makes an empty datadir with only a root account (no password over TCP). `server` is the
        program, or the command that runs it (a rootfs's loader first); `paths`: options naming where the server's
        own files are (a rootfs's plugin and message folders)."""
        command = [server] if isinstance(server, str) else list(server)
        if self.is_mariadb:  # a bare program name (a container's): the install script on that PATH too
            install = install_db_program(command[-1]) if "/" in command[-1] else "mariadb-install-db"
            return install_db_command(install, datadir, extra)
        return [*command, "--no-defaults", "--initialize-insecure", f"--datadir={datadir}", "--user=root",
                *paths, *(extra or [])]

    def ready_command(self, socket: str) -> list[str]:
        """A command that succeeds once the server listens on `socket`: MariaDB's admin ping; for MySQL the socket
        file itself, which mysqld creates when it starts listening (what a `mysqld:` root of a user's holds
        beside mysqld is not known: no client is assumed). Layerbench's own SQL login over TCP follows it in every
        backend."""
        if self.is_mariadb:
            return ["mariadb-admin", f"--socket={socket}", "ping"]
        return ["test", "-S", socket]

    def account_sql(self, user: str, password: Secret, database: str) -> str:
        """The benchmark database and account, as this flavour's server accepts it (see init_sql)."""
        plugin = "caching_sha2_password" if self.name != "mariadb" and self.major >= 8 else None
        return init_sql(user, password, database, plugin)

    def facts(self) -> dict[str, str]:
        """What a run's record keeps of it (no version when it is not known: an image's MariaDB, before it runs)."""
        return {"server_flavour": self.name, **({"server_version": self.version} if self.version else {})}


MARIADB = Flavour("mariadb", "")

# MySQL 8 starts the X Plugin on port 33060 by default: two servers of two runs (or two helpers) would fight
# for it. layerbench's own servers speak the classic protocol only.
MYSQL_DEFAULTS: dict[str, ConfigValue] = {"mysqlx": "OFF"}


def parse_version(text: str) -> Flavour | None:
    """The flavour a `--version` line names, or None when it is not a server layerbench can start."""
    match = _VERSION.search(text)
    if match is None:
        return None
    version, major = match.group("version"), int(match.group("major"))
    if "mariadb" in text.lower():
        return Flavour("mariadb", version) if (major, int(match.group("minor"))) >= MARIADB_OLDEST else None
    if major not in (8, 9):
        return None
    name = "percona" if "percona" in text.lower() else "mysql"
    return Flavour(name, version, dict(MYSQL_DEFAULTS))


_POSTGRES_VERSION = re.compile(r"^postgres \(PostgreSQL\) (?P<version>(?P<major>\d+)\.\d+)\b")


def parse_postgres_version(text: str) -> Flavour | None:
    """The flavour `postgres --version` names (`postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`), or None."""
    match = _POSTGRES_VERSION.match(text.strip())
    return Flavour("postgresql", match.group("version")) if match else None


def flavour_of_server(version: str, comment: str) -> Flavour | None:
    """The flavour a running server names itself by (`SELECT VERSION(), @@version_comment`: `8.4.0` and `MySQL
    Community Server - GPL`, `11.4.2-MariaDB-ubu2404` and `mariadb.org binary distribution`, `8.0.36-28` and
    `Percona Server (GPL), Release 28, ...`), read like a `--version` line; None when layerbench does not know it."""
    return parse_version(f"Ver {version} {comment}")


@lru_cache(maxsize=16)
def detect_flavour(binary: str | tuple[str, ...], where: str) -> Flavour:
    """Run `binary --version` (bounded in time; `binary` may be a command: a loader, then the program) and name
    its flavour, or a one-line BadInput naming `where`."""
    command = [binary] if isinstance(binary, str) else list(binary)
    name = command[-1]
    try:
        done = version_output(command, timeout=VERSION_TIMEOUT)
        said = (done.stdout or done.stderr).strip()
    except TimedOut:
        raise BadInput(f"{where}: {name} --version did not answer within {VERSION_TIMEOUT:.0f} s; give a "
                       f"{SUPPORTED} server binary") from None
    except OSError as error:
        raise BadInput(f"{where}: {name} cannot be run ({error.strerror}); fix the path") from None
    flavour = parse_version(said)
    if flavour is None:
        first = said.splitlines()[0] if said else "nothing"
        raise BadInput(f"{where}: {name} is not a server layerbench can start (--version says {shown(first, 120)}); "
                       f"give a {SUPPORTED} server binary")
    return flavour


def install_db_program(server: str) -> str:
    """mariadb-install-db next to the server binary (a build of its own), else the one on PATH."""
    folder = Path(server).resolve().parent
    for candidate in (folder / "mariadb-install-db", folder.parent / "scripts" / "mariadb-install-db",
                      folder / "mysql_install_db"):
        if candidate.is_file():
            return str(candidate)
    return shutil.which("mariadb-install-db") or shutil.which("mysql_install_db") or "mariadb-install-db"


def install_db_command(install_db: str, datadir: Path, extra: list[str] | None = None) -> list[str]:
    """mariadb-install-db for a private datadir: no test db, root only through the unix socket."""
    return [
        install_db, "--no-defaults", f"--datadir={datadir}", "--user=root",
        "--auth-root-authentication-method=socket", "--skip-test-db", *(extra or []),
    ]


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def init_sql(user: str, password: Secret, database: str, plugin: str | None = None) -> str:
    """SQL run by the server at start (--init-file): the benchmark database and account, password fresh.

    Statements MariaDB and MySQL both accept (no `CREATE OR REPLACE USER`, a MariaDB extension); `plugin` names
    the authentication plugin (MySQL's caching_sha2_password), else the server's default. The account is
    re-created at every start, so a cached dataset snapshot never carries a usable password.
    """
    account = f"{sql_string(user)}@'%'"
    using = f"IDENTIFIED WITH {plugin} BY" if plugin else "IDENTIFIED BY"
    return "\n".join(
        [
            f"CREATE DATABASE IF NOT EXISTS `{database}`;",
            f"DROP USER IF EXISTS {account};",
            f"CREATE USER {account} {using} {sql_string(password.reveal())};",
            f"GRANT ALL PRIVILEGES ON *.* TO {account};",
            "",
        ]
    )
