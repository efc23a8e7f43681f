"""PostgreSQL on this machine (docs/servers.md): Debian 12's PostgreSQL 15 as a private server. What differs from
MariaDB and MySQL lives here: the settings a `server:` block may give (checked against the server's own
`postgres --describe-config`), the postgresql.conf and pg_hba.conf layerbench writes, initdb, the unprivileged
user the server runs as (PostgreSQL refuses to run as root), and the benchmark account (scram-sha-256 over TCP,
its password set over the private Unix socket, never on a command line or in a log).

| what                | how                                                                        |
|---------------------|----------------------------------------------------------------------------|
| empty datadir       | `initdb -D DATADIR -U postgres` (run as `postgres` when the harness is root) |
| the server          | `postgres -D DATADIR` with layerbench's postgresql.conf in the datadir     |
| its account         | `CREATE`/`ALTER ROLE ... LOGIN PASSWORD` over the socket, each start       |
| logins over TCP     | pg_hba.conf: scram-sha-256 only; the superuser over the 0700 socket only   |
| stop                | SIGINT: a fast shutdown (a checkpoint: a consistent datadir)               |
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from layerbench.errors import BadInput, RunFailed, shown
from layerbench.hosts.procs import TimedOut, capture
from layerbench.hosts.workdirs import folder_size
from layerbench.secrets import Secret
from layerbench.server.settings import ConfigValue, check_option_value, mysql_only_refusal

BIN_DIR = Path("/usr/lib/postgresql/15/bin")  # Debian 12's postgresql-15 (scripts/setup installs it)
DEFAULT_VERSION = "15"
RUN_AS = "postgres"  # the unprivileged user the Debian package creates; PostgreSQL refuses to run as root
SUPERUSER = "postgres"  # the cluster's bootstrap superuser (initdb -U): only over the private socket
STOP_SIGNAL = signal.SIGINT  # a fast shutdown: SIGTERM waits for every client to disconnect
DESCRIBE_TIMEOUT = 30.0
SETTING_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
# Set by layerbench for every run: where the server listens, where its files and socket are, how logins work.
OWNED = frozenset({"port", "listen_addresses", "unix_socket_directories", "unix_socket_group",
                   "unix_socket_permissions", "data_directory", "config_file", "hba_file", "ident_file",
                   "external_pid_file", "password_encryption"})
# Shared by every PostgreSQL variant, chosen for benchmarking (MariaDB's and MySQL's max_connections in mycnf.py).
BENCHMARK_DEFAULTS: dict[str, ConfigValue] = {"max_connections": 1000}


@dataclass(frozen=True)
class Setting:
    """One parameter of `postgres --describe-config`: its name and context (internal: read-only)."""

    name: str
    context: str


def parse_describe_config(text: str) -> dict[str, Setting]:
    """The parameters `postgres --describe-config` lists (tab-separated: name, context, group, type, ...), by name."""
    found = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) >= 2 and SETTING_NAME.fullmatch(fields[0]):
            found[fields[0]] = Setting(fields[0], fields[1])
    return found


def program(name: str = "postgres") -> Path:
    return BIN_DIR / name


@lru_cache(maxsize=4)
def known_settings(command: tuple[str, ...]) -> dict[str, Setting]:
    """The settings this server takes, from its own `--describe-config` (no datadir needed). `command`: the
    postgres program, or a loader and its arguments then the program (a rootfs's)."""
    postgres = command[-1]
    try:
        done = capture([*command, "--describe-config"], timeout=DESCRIBE_TIMEOUT)
    except (OSError, TimedOut) as error:
        raise BadInput(f"{postgres} --describe-config did not answer ({error}); reinstall it "
                       "(scripts/setup installs postgresql-15)") from None
    settings = parse_describe_config(done.stdout)
    if not settings:
        raise BadInput(f"{postgres} --describe-config listed no setting; reinstall it (scripts/setup installs "
                       "postgresql-15)")
    return settings


def setting_refusal(key: str, known: Mapping[str, Setting]) -> str | None:
    """Why `key` cannot be a postgresql.conf setting of a variant (one line, with the fix), or None."""
    name = key.lower()
    mysql = mysql_only_refusal(key)
    if mysql:
        return mysql
    if name in OWNED:
        return f"{shown(key)} is set by layerbench for each run; remove it"
    setting = known.get(name)
    if setting is None:
        close = sorted(n for n in known if n.startswith(name[:6]))[:3]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        return (f"{shown(key)}: PostgreSQL has no such setting that postgresql.conf can set{hint}; check its spelling "
                "(postgres --describe-config lists them)")
    if setting.context == "internal":
        return f"{shown(key)} is read-only in PostgreSQL (fixed when it was built); remove it"
    return None


def check_settings(config: Mapping[str, ConfigValue], known: Mapping[str, Setting], where: str) -> None:
    """Every server.config name is a setting this PostgreSQL takes, and its value can be written; else BadInput."""
    for key, value in config.items():
        refusal = setting_refusal(key, known)
        if refusal is None and value is None:
            refusal = f"{shown(key)} has no value; give it one (postgresql.conf has no bare names)"
        if refusal:
            raise BadInput(f"{where}.{key}: {refusal}")


def server_refusal(command: tuple[str, ...], config: Mapping[str, ConfigValue]) -> tuple[str | None, str] | None:
    """What the server itself says of a postgresql.conf of these settings: None when it takes the file, else (the
    setting its line names, the line). `postgres -D <a folder holding only that file> -C port` reads the file with
    every check a start makes (names, types, units, ranges) and starts nothing; as the server's user."""
    folder = Path(tempfile.mkdtemp(prefix="lb-pgcheck-", dir="/tmp"))  # /tmp: a folder that user can enter
    try:
        folder.chmod(0o711)
        conf = folder / "postgresql.conf"
        conf.write_text(render_conf(merged(config, {})), encoding="utf-8")  # settings only: nothing secret
        conf.chmod(0o644)
        done = capture(as_server_user([*command, "-D", str(folder), "-C", "port"]), timeout=DESCRIBE_TIMEOUT)
    except (OSError, TimedOut) as error:
        raise BadInput(f"{command[-1]} -C did not answer ({error}); reinstall it") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if done.returncode == 0:
        return None
    line = first_error(f"{done.stderr}\n{done.stdout}")
    named = re.search(r'parameter "([a-z0-9_]+)"', line)
    return (named.group(1) if named else None, line)


def check_values(command: tuple[str, ...], config: Mapping[str, ConfigValue], where: str) -> None:
    """The server's own verdict on the variant's settings (server_refusal), as one line naming the setting."""
    refused = server_refusal(command, config)
    if refused is None:
        return
    key = next((k for k in config if k.lower() == refused[0]), None)
    raise BadInput(f"{where}{f'.{key}' if key else ''}: PostgreSQL refuses it ({refused[1]}); fix the value")


def conf_value(value: ConfigValue) -> str:
    """A postgresql.conf value: on/off, a number, or a quoted string ('' and \\\\ escaped)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        raise BadInput("server.config: a setting without a value; give it one")
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"


def merged(overlay: Mapping[str, ConfigValue], owned: Mapping[str, ConfigValue]) -> dict[str, ConfigValue]:
    """Layerbench's defaults, then the variant's settings, then what layerbench owns (which always wins)."""
    return {**BENCHMARK_DEFAULTS, **{k.lower(): v for k, v in overlay.items()}, **owned}


def render_conf(settings: Mapping[str, ConfigValue]) -> str:
    """postgresql.conf: one `name = value` a line; a name or value that could add a line is refused."""
    lines = ["# written by layerbench: the whole configuration this server ran with"]
    for key, value in settings.items():
        if not SETTING_NAME.fullmatch(key):
            raise BadInput(f"server.config.{shown(key)}: not a PostgreSQL setting name")
        try:
            check_option_value(key, value)
        except ValueError as error:
            raise BadInput(f"server.config.{error}") from None
        lines.append(f"{key} = {conf_value(value)}")
    return "\n".join(lines) + "\n"


HBA = ("# written by layerbench\n"
       "local all postgres trust  # layerbench's set-up, over a socket in a 0700 folder\n"
       "host all all 0.0.0.0/0 scram-sha-256\n"
       "host all all ::/0 scram-sha-256\n")


def postgres_user_ids(missing: str) -> tuple[int, int]:
    """(uid, gid) of this machine's `postgres` user (the Debian package's); BadInput with `missing` when there is
    none."""
    try:
        entry = pwd.getpwnam(RUN_AS)
    except KeyError:
        raise BadInput(missing) from None
    return entry.pw_uid, entry.pw_gid


def run_as() -> tuple[int, int] | None:
    """(uid, gid) the server runs as: `postgres` when this process is root, else None (it runs as we do)."""
    if os.geteuid() != 0:
        return None
    return postgres_user_ids(f"PostgreSQL refuses to run as root and there is no {RUN_AS} user; install "
                             "postgresql-15 (it creates it; scripts/setup does it)")


def switch_user(setpriv: str, user: int | str, group: int | str, cmd: list[str]) -> list[str]:
    """`cmd` run as `user`:`group` and no other group, by setpriv, which execs it (the PID is the program's own)."""
    return [setpriv, f"--reuid={user}", f"--regid={group}", "--clear-groups", "--", *cmd]


def as_server_user(cmd: list[str]) -> list[str]:
    """`cmd` run as the server's user here, or as it is (this process is not root)."""
    ids = run_as()
    if ids is None:
        return cmd
    return switch_user(shutil.which("setpriv") or "/usr/bin/setpriv", ids[0], ids[1], cmd)


def give_to_server_user(path: Path, only: list[str] | None = None) -> None:
    """A folder (and what it holds, or `only` these names in it) owned by the server's user, mode 0700 (PostgreSQL
    refuses a looser datadir)."""
    ids = run_as()
    path.chmod(0o700)
    if ids is None:
        return
    os.chown(path, *ids)
    if only is not None:
        for name in only:
            os.chown(path / name, *ids, follow_symlinks=False)
        return
    for folder, dirs, files in os.walk(path):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chown(name, *ids, follow_symlinks=False)


def unreachable_folder(path: Path) -> Path | None:
    """The first existing folder on the way to `path` the server's user cannot enter (no x bit for it), or None."""
    ids = run_as()
    if ids is None:
        return None
    groups = {ids[1], *os.getgrouplist(RUN_AS, ids[1])}
    for folder in [*reversed(path.parents), path]:
        try:
            st = folder.stat()
        except OSError:
            return None  # not made yet: made by us, below a folder it can enter
        bit = stat.S_IXUSR if st.st_uid == ids[0] else stat.S_IXGRP if st.st_gid in groups else stat.S_IXOTH
        if not st.st_mode & bit:
            return folder
    return None


def check_reachable(path: Path, what: str, where: str) -> None:
    blocked = unreachable_folder(path)
    if blocked is not None:
        raise BadInput(f"{where}: PostgreSQL runs as user {RUN_AS}, which cannot enter {blocked} (mode "
                       f"{stat.S_IMODE(blocked.stat().st_mode):04o}) on the way to the {what}; let it through "
                       f"(chmod o+x {blocked}) or move the folder (docs/servers.md#postgresql)")


def initdb_args(datadir: str | Path, initdb: tuple[str, ...] = ()) -> list[str]:
    """An empty cluster: the superuser `postgres` (trust over the socket only: pg_hba.conf is replaced), UTF-8, C;
    run as the server's user (here: initdb_command; in a VM's guest: its init, backends/vm/guestpg.py; the same
    program and arguments in the PostgreSQL image, server/postgresql_image.py). `initdb`: a rootfs's (through its
    loader), else this machine's."""
    return [*(initdb or (str(program("initdb")),)), "-D", str(datadir), f"--username={SUPERUSER}",
            "--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C"]


def initdb_command(datadir: Path, initdb: tuple[str, ...] = ()) -> list[str]:
    return as_server_user(initdb_args(datadir, initdb))


def server_command(datadir: Path, command: tuple[str, ...] = ()) -> list[str]:
    """The server on a datadir: `command` (a rootfs's postgres through its loader), else this machine's."""
    return as_server_user([*(command or (str(program("postgres")),)), "-D", str(datadir)])


def write_server_files(folder: Path, config: Mapping[str, ConfigValue], owned: Mapping[str, ConfigValue],
                       run_dir: Path) -> None:
    """postgresql.conf (layerbench's defaults, the variant's settings, what it owns for this start) and pg_hba.conf
    into `folder`, and a copy of the conf in the run's folder: the file says what ran. Nothing secret is in them."""
    conf = render_conf(merged(config, owned))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "postgresql.conf").write_text(conf, encoding="utf-8")
    for name, text in (("postgresql.conf", conf), ("pg_hba.conf", HBA)):
        (folder / name).write_text(text, encoding="utf-8")


LOG_LEVEL = re.compile(r"\b(LOG|FATAL|ERROR|PANIC):\s+")


def first_error(log: str) -> str:
    """The most telling line of a failed start, without its time and PID: a setting the server refused (its LOG
    line comes before the FATAL "configuration file ... contains errors"), else the first FATAL or ERROR, else the
    last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    setting = [ln for ln in lines if "parameter" in ln and LOG_LEVEL.search(ln)]
    fatal = [ln for ln in lines if re.search(r"\b(FATAL|ERROR|PANIC):", ln)]
    chosen = (setting or fatal or lines or ["no server log"])[0]
    found = LOG_LEVEL.search(chosen)
    return chosen[found.end():] if found else chosen


def superuser_connect(socket_dir: Path, port: int, timeout: float = 5.0):  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(host=str(socket_dir), port=port, user=SUPERUSER, dbname="postgres", autocommit=True,
                           connect_timeout=max(2, int(timeout)))


def wait_for_socket(socket_dir: Path, port: int, *, alive: Callable[[], bool], timeout: float,
                    log_tail: Callable[[int], str]) -> None:
    """Until the server takes the superuser's login over its socket (it has finished starting up)."""
    import psycopg

    started, last = time.monotonic(), "no answer"
    while time.monotonic() - started < timeout:
        if not alive():
            raise RunFailed(f"server exited during start-up: {first_error(log_tail(30))}")
        try:
            superuser_connect(socket_dir, port, 2).close()
            return
        except psycopg.OperationalError as error:
            last = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        time.sleep(0.2)
    raise RunFailed(f"server did not accept connections within {timeout:.0f} s (last: {last})")


QUIET = ("SET log_statement = 'none'", "SET log_min_duration_statement = -1",
         "SET log_min_error_statement = 'panic'")  # the password is in a statement: never in the server's log


def set_up_account(socket_dir: Path, port: int, user: str, password: Secret | None, database: str) -> None:
    """The benchmark account with this start's password (None: no password, no login over TCP), owner of the
    benchmark database (made when missing): PostgreSQL 15 lets only the database owner create tables in public."""
    from psycopg import sql

    with superuser_connect(socket_dir, port) as conn:
        for statement in QUIET:
            conn.execute(statement)  # type: ignore[arg-type]
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [user]).fetchone()
        secret = sql.SQL("PASSWORD NULL") if password is None else sql.SQL("PASSWORD {}").format(
            sql.Literal(password.reveal()))
        conn.execute(sql.SQL("{} ROLE {} LOGIN {}").format(sql.SQL("ALTER" if exists else "CREATE"),
                                                          sql.Identifier(user), secret))
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database),
                                                                      sql.Identifier(user)))


def sql_literal(value: str) -> str:
    """A string constant of PostgreSQL's SQL (standard_conforming_strings, on since 9.1: a quote doubled)."""
    return "'" + value.replace("'", "''") + "'"


def sql_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def account_script(user: str, password: Secret | None, database: str) -> str:
    """set_up_account's statements as a psql script, for a server reached only through its own socket (a VM's
    guest runs it with psql as the superuser): statement logging off first, the account created or altered with
    this start's password (None: PASSWORD NULL, no login over TCP), its database made when missing (psql's \\gexec:
    CREATE DATABASE cannot run in a DO block). Holds the password: only ever written to private places."""
    role, db = sql_identifier(user), sql_identifier(database)
    return "\n".join([
        *(f"{statement};" for statement in QUIET),
        f"DO $$BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = {sql_literal(user)}) THEN "
        f"CREATE ROLE {role} LOGIN; END IF; END$$;",
        f"ALTER ROLE {role} LOGIN PASSWORD {'NULL' if password is None else sql_literal(password.reveal())};",
        f"SELECT 'CREATE DATABASE ' || {sql_literal(db)} || ' OWNER ' || {sql_literal(role)} WHERE NOT EXISTS "
        f"(SELECT 1 FROM pg_database WHERE datname = {sql_literal(database)})\\gexec", ""])


def data_bytes(datadir: Path) -> int:
    """The bytes of the cluster's tables and indexes (base/: every database's relation files)."""
    return folder_size(datadir / "base")
