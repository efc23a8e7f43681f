"""A command in a running pod's container through the exec API (`pods/exec`), for what the harness reads where the
server runs when it is not a node (podcpu.py: the server's CPU), and the server's SQL that way, with the server's own
client in its container over its socket, as an account no password exists for: MariaDB's `mariadb` as the server's
`root`, which mariadb-install-db makes for the system's root user by unix_socket; MySQL's `mysql` (the image's
mysql-client-core) as the `root@localhost` that `mysqld --initialize-insecure` makes, with no password and no host
but this one; PostgreSQL's `psql` as the superuser `postgres`, whom pg_hba.conf trusts over the pod's socket only
(pgpod.py). No password is on a command line, in the API server's audit log or here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerbench.backends.kubernetes import pgpod
from layerbench.backends.kubernetes.manifests import SERVER, SOCKET
from layerbench.errors import RunFailed

MAX_OUTPUT = 4 << 20  # SHOW GLOBAL VARIABLES is ~60 kB; more is not the server's answer
CLIENT = ["mariadb", f"--socket={SOCKET}", "--user=root", "--batch", "--skip-column-names", "--execute"]
MYSQL_CLIENT = ["mysql", *CLIENT[1:]]  # the same options, MySQL's own client


def pod_exec(core: Any, ns: str, pod: str, command: list[str], container: str = SERVER,
             timeout: float = 30) -> tuple[int | None, str, str]:
    """(exit status, stdout, stderr) of `command` in the container, each output cut at MAX_OUTPUT; the exit status
    is None when the command did not end within `timeout`. The API's errors (403, a pod that is gone) raise."""
    from kubernetes.stream import stream

    response = stream(core.connect_get_namespaced_pod_exec, pod, ns, container=container, command=command,
                      stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False,
                      _request_timeout=timeout)
    try:
        response.run_forever(timeout=timeout)
        out, err = response.read_stdout(timeout=0), response.read_stderr(timeout=0)
        return response.returncode, str(out)[:MAX_OUTPUT], str(err)[:MAX_OUTPUT]
    finally:
        response.close()


def parse_rows(text: str) -> list[tuple[str, ...]]:
    """The client's --batch rows: one line each, columns split at tabs (a tab or newline inside a value is
    written as \\t or \\n by the client)."""
    return [tuple(line.split("\t")) for line in text.splitlines() if line]


class PodSql:
    """One SQL statement at a time in the server container (a callable as measure/io.py ServerStatus's query):
    the flavour's own client (`flavour`: the server's name); for PostgreSQL psql as the superuser, into `database`
    (the benchmark's: pg_stat_database's row of current_database())."""

    def __init__(self, core: Any, ns: str, pod: str, flavour: str = "mariadb", database: str = "") -> None:
        self.core, self.ns, self.pod = core, ns, pod
        client = MYSQL_CLIENT if flavour in ("mysql", "percona") else CLIENT
        self.command: Callable[[str], list[str]] = (lambda sql: pgpod.sql_command(database, sql)) \
            if flavour == "postgresql" else (lambda sql: [*client, sql])
        self.parse = pgpod.parse_csv_rows if flavour == "postgresql" else parse_rows

    def __call__(self, sql: str) -> list[tuple[str, ...]]:
        try:
            status, out, err = pod_exec(self.core, self.ns, self.pod, self.command(sql))
        except Exception as error:
            raise RunFailed(f"the server's SQL in pod {self.ns}/{self.pod}: {type(error).__name__}") from None
        if status != 0:
            why = err.strip().splitlines()[-1][:200] if err.strip() else f"exit status {status}"
            raise RunFailed(f"the server's SQL in pod {self.ns}/{self.pod}: {why}")
        return self.parse(out)


def server_sql_path(on_node: bool, flavour: str) -> str:
    """For the run's record: how the server's status and variables were read (`flavour`: the server's name)."""
    if on_node:
        return "a connection from this machine (the harness is a node)"
    if flavour == "mariadb":
        return "exec in the server container: the mariadb client over its socket as root (unix_socket)"
    if flavour == "postgresql":
        return "exec in the server container: psql over its socket as the superuser postgres (trust there only)"
    return "exec in the server container: the mysql client over its socket as root@localhost (no password)"
