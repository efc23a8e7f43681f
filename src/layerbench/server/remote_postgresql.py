"""PostgreSQL on an ssh: host (docs/servers.md, PostgreSQL on an ssh: host): the host's own PostgreSQL, found at
Debian's `/usr/lib/postgresql/<major>/bin` there (not this machine's BIN_DIR), its settings checked by its own
`postgres --describe-config` and `postgres -C`, and what a private server there needs besides the files
server/postgresql.py writes: the unprivileged user it runs as (`setpriv` to `postgres` when the SSH user is root,
as on this machine), initdb, and the superuser's session over the private socket, which only `psql` on that host
can open (the benchmark account's password travels on psql's standard input, never on a command line).

Everything here is sh text or the parsing of what the host printed; backends/host/remote_pg.py runs it."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from layerbench.errors import BadInput, PrerequisiteMissing, shown
from layerbench.hosts.inventory import Host
from layerbench.secrets import Secret
from layerbench.server import postgresql as pg
from layerbench.server.flavour import Flavour, parse_postgres_version
from layerbench.server.settings import ConfigValue

ROOT = "/usr/lib/postgresql"  # Debian's: /usr/lib/postgresql/<major>/bin/{postgres,initdb,psql}
MARK = "LB-PG"
CHECK_TIMEOUT = 60.0
# `cmd` as the server's user when the SSH user is root (PostgreSQL refuses to run as root), else as it is
AS_SERVER_USER = (f'if [ "$(id -u)" = 0 ]; then set -- setpriv --reuid={pg.RUN_AS} --regid={pg.RUN_AS} '
                  '--clear-groups -- "$@"; fi; ')


@dataclass(frozen=True)
class HostPostgres:
    """A PostgreSQL of an ssh: host: its flavour (from its own `--version`) and its bin folder there."""

    flavour: Flavour
    bin_dir: str

    def program(self, name: str = "postgres") -> str:
        return f"{self.bin_dir}/{name}"


def installed_script() -> str:
    """sh text printing `LB-PG <bin folder> <postgres --version>` for each PostgreSQL under Debian's root."""
    return (f"for b in {ROOT}/*/bin; do [ -x \"$b/postgres\" ] || continue; "
            f"echo \"{MARK} $b $(\"$b/postgres\" --version 2>&1 | head -n 1)\"; done; true")


def parse_installed(text: str) -> list[HostPostgres]:
    """installed_script's lines -> the PostgreSQLs there, newest major first; other lines ignored."""
    found = []
    for line in text.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == MARK and re.fullmatch(rf"{ROOT}/\d{{1,3}}/bin", parts[1]):
            flavour = parse_postgres_version(parts[2])
            if flavour is not None:
                found.append(HostPostgres(flavour, parts[1]))
    return sorted(found, key=lambda p: p.flavour.major, reverse=True)


def choose(found: list[HostPostgres], version: str | None, host: str, where: str) -> HostPostgres:
    """The variant's PostgreSQL among the host's (its newest major when `version` is unset); a version the host
    has not is refused in one line naming what it has."""
    if not found:
        raise PrerequisiteMissing(f"{where}.flavour: host {host} has no PostgreSQL ({ROOT}/<major>/bin/postgres); "
                                  "install it there (Debian: apt-get install postgresql)")
    if version is None:
        return found[0]
    for candidate in found:
        if candidate.flavour.version == version or candidate.flavour.version.startswith(f"{version}."):
            return candidate
    has = ", ".join(f"{p.flavour.label} ('{p.flavour.major}')" for p in found)
    raise BadInput(f"{where}.version: host {host} has {has}, not PostgreSQL {shown(version, quote=False)}; use "
                   f"version '{found[0].flavour.major}' or install postgresql-{shown(version, quote=False)} there")


def find_on_host(host: Host, version: str | None, where: str) -> HostPostgres:
    done = host.shell(installed_script(), name=f"postgres on {host.name}", timeout=CHECK_TIMEOUT)
    return choose(parse_installed(done.output), version, host.name, where)


def known_settings_on(host: Host, server: HostPostgres) -> dict[str, pg.Setting]:
    """The settings the host's postgres takes, from its own `--describe-config` there."""
    command = shlex.join([server.program(), "--describe-config"])
    done = host.shell(f"set -- {command}; {AS_SERVER_USER}exec \"$@\"", name=f"describe-config on {host.name}",
                      timeout=CHECK_TIMEOUT)
    settings = pg.parse_describe_config(done.output)
    if done.returncode != 0 or not settings:
        raise PrerequisiteMissing(f"hosts.{host.name}: {server.program()} --describe-config listed no setting there "
                                  f"({(done.output.strip().splitlines() or ['no output'])[-1][:160]}); reinstall "
                                  "PostgreSQL there")
    return settings


def check_script(server: HostPostgres) -> str:
    """sh text: the postgresql.conf on stdin, alone in a fresh folder of /tmp there, read by `postgres -C port` as
    the server's user (every check a start makes, nothing started), then the folder removed; its exit status."""
    cmd = f"{shlex.quote(server.program())} -D \"$d\" -C port"
    return (f"d=$(mktemp -d /tmp/lb-pgcheck-XXXXXX) || exit 1; chmod 711 \"$d\"; cat > \"$d/postgresql.conf\"; "
            f"chmod 644 \"$d/postgresql.conf\"; set -- {cmd}; {AS_SERVER_USER}"
            "\"$@\" 2>&1; rc=$?; rm -rf \"$d\"; exit $rc")


def check_on_host(host: Host, server: HostPostgres, config: Mapping[str, ConfigValue], where: str) -> None:
    """The variant's server.config, names then values, as the host's own PostgreSQL reads them (one line each)."""
    if not config:
        return
    pg.check_settings(config, known_settings_on(host, server), where)
    done = host.shell(check_script(server), input_text=pg.render_conf(pg.merged(config, {})),
                      name=f"postgres -C on {host.name}", timeout=CHECK_TIMEOUT)
    if done.returncode == 0:
        return
    line = pg.first_error(done.output)
    named = re.search(r'parameter "([a-z0-9_]+)"', line)
    key = next((k for k in config if named and k.lower() == named.group(1)), None)
    raise BadInput(f"{where}{f'.{key}' if key else ''}: PostgreSQL {server.flavour.version} on host {host.name} "
                   f"refuses it ({line}); fix the value")


def as_server_user(argv: list[str]) -> str:
    """sh text running argv as the server's user there (its PID the program's own: setpriv execs it)."""
    return f"set -- {shlex.join(argv)}; {AS_SERVER_USER}exec \"$@\""


def give_script(*paths: str) -> str:
    """sh text: the paths owned by the server's user (when the SSH user is root) and mode 0700 (its datadir and
    socket folder: PostgreSQL refuses looser ones)."""
    quoted = " ".join(shlex.quote(p) for p in paths)
    return (f"chmod 700 {quoted} && if [ \"$(id -u)\" = 0 ]; then chown -R {pg.RUN_AS}:{pg.RUN_AS} {quoted}; fi")


def initdb_argv(server: HostPostgres, datadir: str) -> list[str]:
    return [server.program("initdb"), "-D", datadir, f"--username={pg.SUPERUSER}", "--auth-local=trust",
            "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C"]


def psql_argv(server: HostPostgres, socket_dir: str, port: int) -> list[str]:
    """The superuser's psql over the private socket (trust there: pg_hba.conf's only local line), quiet, stopping
    at the first error, reading its statements from stdin."""
    return [server.program("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", socket_dir, "-p", str(port),
            "-U", pg.SUPERUSER, "-d", "postgres"]


def account_sql(user: str, password: Secret | None, database: str) -> str:
    """server/postgresql.py's account_script (the psql form of set_up_account, also a VM guest's), for names that
    are plain: the text goes to the host's psql on its standard input."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", user) or not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", database):
        raise BadInput(f"PostgreSQL account {shown(user)} / database {shown(database)}: not a plain name")
    return pg.account_script(user, password, database)
