"""A host variant's PostgreSQL on an ssh: host (docs/servers.md, PostgreSQL on an ssh: host): the host's own
PostgreSQL (`/usr/lib/postgresql/<major>/bin` there, its newest major unless `server.version` names another it has),
a private server in the run's folder there as RemoteHostBackend runs MariaDB: its datadir restored from the host's
own snapshot (backends/host/dataset.py) or made by the host's initdb, layerbench's postgresql.conf and pg_hba.conf
(server/postgresql.py), a socket folder of its own in the run's folder, the server run as the host's `postgres`
user (server/remote_postgresql.py), the benchmark account set by psql over that socket, stopped with SIGINT (a fast
shutdown). The run's folder is 0711 (entered, not listed, by that user); its datadir and socket folder are that
user's, 0700."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from layerbench.backends.base import Endpoint, ServerSpec
from layerbench.backends.host.remote import START_TIMEOUT, RemoteHostBackend
from layerbench.errors import BadInput, PrerequisiteMissing, RunFailed
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.ports import pick_port
from layerbench.hosts.remote import detached_script, start_detached
from layerbench.secrets import Secret
from layerbench.server import postgresql as pg
from layerbench.server import remote_postgresql as rpg
from layerbench.server.datadir import wait_until_ready
from layerbench.server.remote_files import check_tools, claim_run_folder, runs_root, storage_on_host
from layerbench.server.servers import ServerProgram

SOCKET_PATH_MAX = 107  # sun_path's 108 bytes with its NUL: PostgreSQL refuses a longer socket path


def blocked_script(paths: list[str]) -> str:
    """sh text printing `LB-BLOCKED <mode> <path>` for the first existing path the server's user cannot enter."""
    quoted = " ".join(shlex.quote(p) for p in paths)
    return (f"for p in {quoted}; do [ -d \"$p\" ] || continue; "
            f"if ! ( set -- test -x \"$p\"; {rpg.AS_SERVER_USER}\"$@\" ); then "
            "echo \"LB-BLOCKED $(stat -c %a \"$p\") $p\"; break; fi; done; true")


def ancestors(path: str) -> list[str]:
    """`/a/b/c` -> [/a, /a/b, /a/b/c]."""
    parts = [p for p in path.split("/") if p]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]


class RemotePostgresBackend(RemoteHostBackend):
    """A private PostgreSQL started over SSH on `host` (RemoteHostBackend's folder, owner records, reach, CPU)."""

    stop_signal = "INT"  # a fast shutdown: a checkpoint, a consistent datadir (SIGTERM waits for every client)
    found: rpg.HostPostgres | None = None
    socket_dir: str | None = None
    port: int | None = None

    def _where(self) -> str:
        return f"variants.{self.variant.name}.server"

    def _find(self) -> rpg.HostPostgres:
        if self.found is None:
            self.found = rpg.find_on_host(self.host, self.variant.server.version, self._where())
        return self.found

    def check(self) -> None:
        self.host.check()
        missing = check_tools(self.host)
        if missing:
            raise PrerequisiteMissing(f"{self._where()}_host: host {self.host.name} lacks {', '.join(missing)}; "
                                      "install them there (Debian: apt-get install rsync xxhash coreutils "
                                      "findutils iproute2)")
        found = self._find()
        if self.host.run(["sh", "-c", f"test -x {shlex.quote(found.program('psql'))}"]).returncode != 0:
            raise PrerequisiteMissing(f"{self._where()}_host: host {self.host.name} has no "
                                      f"{found.program('psql')}; install postgresql-client there")
        rpg.check_on_host(self.host, found, self.variant.server.config, f"{self._where()}.config")
        self._check_cpus()
        root = runs_root(self.host, self.variant.data_dir)
        # layerbench's own folders (work_dir, its runs/) are made enterable at the first run; the rest must be
        theirs = ancestors(root)[:-1] if self.variant.data_dir is None else ancestors(root)
        self._refuse_blocked([p for p in theirs if p not in (self.host.work_dir.rstrip("/"),)], BadInput)

    def _refuse_blocked(self, paths: list[str], error: type[Exception]) -> None:
        done = self.host.shell(blocked_script(paths), name=f"folders on {self.host.name}", timeout=60)
        line = next((ln for ln in done.output.splitlines() if ln.startswith("LB-BLOCKED ")), None)
        if line is not None:
            _, mode, path = line.split(" ", 2)
            raise error(f"{self._where()}.flavour: PostgreSQL runs as user {pg.RUN_AS} on host {self.host.name}, "
                        f"which cannot enter {path} (mode {mode}) on the way to its datadir; let it through there "
                        f"(chmod o+x {path}) or set hosts.{self.host.name}.work_dir elsewhere")

    def prepare(self, say: Callable[[str], None]) -> None:
        self._find()

    def program(self, say: Callable[[str], None], log_dir: Path | None) -> ServerProgram:
        found = self._find()
        self.server = ServerProgram(found.flavour, (found.program(),))
        return self.server

    def up(self, spec: ServerSpec) -> Endpoint:
        self.program(spec.say, spec.run_dir)
        found = self._find()
        with signals_deferred():  # noted for down() and `clean` before anything exists on the host
            self.folder, self.owner = claim_run_folder(self.host, self.variant.data_dir, spec.label)
        folder, root = self.folder, runs_root(self.host, self.variant.data_dir)
        own = [p for p in (self.host.work_dir.rstrip("/"), root) if self.variant.data_dir is None]
        self.host.shell(f"umask 077 && mkdir -p {shlex.quote(folder)} && chmod 711 "
                        f"{' '.join(shlex.quote(p) for p in [*own, folder])}", name=f"mkdir on {self.host.name}")
        self._refuse_blocked(ancestors(folder), RunFailed)
        port = pick_port(self.host)
        self.socket_dir, self.port = f"{folder}/sock", port
        if len(f"{self.socket_dir}/.s.PGSQL.{port}".encode()) > SOCKET_PATH_MAX:
            raise RunFailed(f"hosts.{self.host.name}.work_dir: the server's socket {self.socket_dir}/.s.PGSQL.{port} "
                            f"is longer than {SOCKET_PATH_MAX} bytes; give a shorter work_dir (or variant name)")
        datadir = f"{folder}/datadir"
        self._datadir(spec, datadir)
        self.storage = storage_on_host(self.host, root)
        self.served = (spec.listen_address, port)
        owned = {"listen_addresses": spec.listen_address, "port": port, "unix_socket_directories": self.socket_dir,
                 "password_encryption": "scram-sha-256"}
        conf = pg.render_conf(pg.merged(spec.config, owned))
        (spec.run_dir / "postgresql.conf").write_text(conf, encoding="utf-8")  # what ran (nothing secret)
        for name, text in (("postgresql.conf", conf), ("pg_hba.conf", pg.HBA)):
            self.host.write_private(f"{datadir}/{name}", text)
        self.host.shell(f"mkdir -p {shlex.quote(self.socket_dir)} && {rpg.give_script(self.socket_dir)} && "
                        f"{rpg.give_script(f'{datadir}/postgresql.conf', f'{datadir}/pg_hba.conf')}",
                        name=f"chown on {self.host.name}")
        self._start(folder)
        self._wait_for_socket(found)
        self._account(spec.user, spec.password, spec.database)
        endpoint = replace(self._reached(spec, port), driver="pgsql")
        wait_until_ready(endpoint, alive=self._alive, timeout=START_TIMEOUT, log_tail=self.server_log_tail)
        return endpoint

    def _datadir(self, spec: ServerSpec, datadir: str) -> None:
        if spec.snapshot is not None:  # the host's own snapshot (dataset.py): owners and modes kept by cp -a
            super()._datadir(spec, datadir)
            return
        found = self._find()
        script = (f"mkdir {shlex.quote(datadir)} && {rpg.give_script(datadir)} && cd / && "
                  f"{rpg.as_server_user(rpg.initdb_argv(found, datadir))}")
        done = self.host.shell(script, name=f"initdb on {self.host.name}", log_path=spec.run_dir / "initdb.log",
                               timeout=300)
        if done.returncode != 0:
            last = done.output.strip().splitlines()[-1:] or ["no output"]
            raise RunFailed(f"hosts.{self.host.name}: initdb failed: {last[0][:200]}")

    def _start(self, folder: str) -> None:
        assert self.server is not None
        taskset = shlex.join(["taskset", "-c", self.variant.cpus]) + " " if self.variant.cpus else ""
        postgres = shlex.join([self.server.program, "-D", f"{folder}/datadir"])
        setpriv = shlex.join(["setpriv", f"--reuid={pg.RUN_AS}", f"--regid={pg.RUN_AS}", "--clear-groups", "--"])
        # as the server's user when the SSH user is root (decided there); setpriv execs: the PID is postgres's
        command = f"{taskset}$(if [ \"$(id -u)\" = 0 ]; then echo {shlex.quote(setpriv)}; fi) {postgres}"
        with signals_deferred():  # the server and the note of it come into being together
            self.pid = start_detached(self.host, detached_script(folder, command, "server.log", "server.pid"),
                                      name=f"start on {self.host.name}",
                                      failed=f"hosts.{self.host.name}: the server did not start")

    def _psql(self) -> str:
        assert self.socket_dir is not None and self.port is not None
        return shlex.join(rpg.psql_argv(self._find(), self.socket_dir, self.port))

    def _wait_for_socket(self, found: rpg.HostPostgres) -> None:
        """Until the superuser's psql logs in over the socket there (one SSH round trip: the loop runs there)."""
        script = (f"i=0; while [ $i -lt {int(START_TIMEOUT * 5)} ]; do kill -0 {int(self.pid or 0)} 2>/dev/null || "
                  f"{{ echo LB-EXITED; exit 3; }}; echo 'SELECT 1' | {self._psql()} >/dev/null 2>&1 && "
                  "{ echo LB-READY; exit 0; }; sleep 0.2; i=$((i + 1)); done; echo LB-TIMEOUT; exit 4")
        done = self.host.shell(script, name=f"wait on {self.host.name}", timeout=START_TIMEOUT + 60)
        if "LB-READY" in done.output:
            return
        if "LB-EXITED" in done.output:
            raise RunFailed(f"server exited during start-up: {pg.first_error(self.server_log_tail(30))}")
        raise RunFailed(f"server did not accept connections within {START_TIMEOUT:.0f} s on host {self.host.name} "
                        f"({pg.first_error(self.server_log_tail(30))})")

    def _account(self, user: str, password: Secret | None, database: str) -> None:
        """The benchmark account with this start's password (None: PASSWORD NULL), over the socket there."""
        done = self.host.shell(self._psql(), input_text=rpg.account_sql(user, password, database),
                               name=f"psql on {self.host.name}", timeout=120,
                               secrets=[password] if password is not None else [])
        if done.returncode != 0:
            raise RunFailed(f"hosts.{self.host.name}: setting up the benchmark account failed: "
                            f"{pg.first_error(done.output)[:200]}")

    def forget_password(self, user: str, database: str) -> None:
        """Before a snapshot's clean shutdown: the account keeps no password (server/prepare.py does the same)."""
        self._account(user, None, database)

    def down(self) -> None:
        with signals_deferred():
            if self.pid is not None and self.folder is not None:  # a fast shutdown first (SIGTERM waits for clients)
                q, pid = shlex.quote(self.folder), int(self.pid)
                self.host.shell(f"tr '\\0' ' ' < /proc/{pid}/cmdline 2>/dev/null | grep -qF -- {q} && "
                                f"kill -INT {pid}; for i in $(seq 50); do kill -0 {pid} 2>/dev/null || break; "
                                "sleep 0.2; done; true", name=f"stop on {self.host.name}", timeout=60)
            super().down()
            self.socket_dir = self.port = None

    def describe(self) -> dict[str, Any]:
        facts = super().describe()
        if self.found is not None:
            facts["postgresql_bin"] = self.found.bin_dir
        return facts
