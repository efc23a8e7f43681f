"""A private server on this machine: the program servers.py resolves (MariaDB by default, the MySQL of a cached
rootfs, or a `mysqld:` build) started on its own datadir, socket and port (CPU-pinned when asked), always
stopped and removed by down(). The host backend runs a variant's server this way; a dataset snapshot is
prepared and checked in one (prepare.py, verify.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from layerbench.endpoint import Endpoint
from layerbench.errors import BadInput, RunFailed
from layerbench.hosts import owners
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.machine import free_port
from layerbench.hosts.procs import ManagedProcess, run, start, with_cpus
from layerbench.secrets import write_private
from layerbench.server import postgresql as pg
from layerbench.server.bootstrap import server_files
from layerbench.server.datadir import wait_until_ready
from layerbench.server.restore import copy_tree
from layerbench.server.servers import ChosenServer, ServerProgram, resolve_server
from layerbench.server.spec import ServerSpec

START_TIMEOUT = 120.0
SOCKET_PATH_MAX = 107  # sun_path holds 108 bytes with its NUL; mariadbd and mysqld refuse a longer socket path


class PrivateServer:
    """Starts `<server> --defaults-file=<generated my.cnf>` under taskset; stops it cleanly; reaps it."""

    def __init__(self, choice: ChosenServer, cpus: str | None = None) -> None:
        self.choice, self.cpus = choice, cpus
        self.process: ManagedProcess | None = None
        self.datadir: Path | None = None
        self.server: ServerProgram | None = None
        self.log_path: Path | None = None
        self.label: str | None = None
        self.socket_dir: Path | None = None  # a short folder of our own when private_dir is too deep for a socket

    def up(self, spec: ServerSpec) -> Endpoint:
        self.server = server = resolve_server(self.choice)
        if server.flavour.is_postgresql:
            return self.up_postgresql(spec, server)
        mycnf = spec.run_dir / "my.cnf"
        with signals_deferred():  # noted for down() and `clean` before anything exists
            self.datadir = spec.work_dir / "datadirs" / spec.label
            self.label = spec.label
            # until the server starts: mariadb-install-db and its bootstrap server (both name the datadir; the
            # command line read from /proc ends every argument with a space, so no longer path matches)
            owners.record(spec.label, pid=None, marker=f"--datadir={self.datadir} ", paths=[self.datadir])
        prepare_datadir(self.datadir, spec, server)
        port = spec.port or free_port(spec.listen_address)
        sock = spec.private_dir / "mysqld.sock"
        if len(os.fsencode(sock)) > SOCKET_PATH_MAX:  # the server refuses to start: use a short folder of ours
            with signals_deferred():
                self.socket_dir = Path(tempfile.mkdtemp(prefix="lb-sock-", dir="/tmp"))  # not TMPDIR: may be as deep
                owners.record(spec.label, pid=None, marker=f"--datadir={self.datadir} ",
                              paths=[self.datadir, self.socket_dir])
            sock = self.socket_dir / "mysqld.sock"
        owned = {
            "datadir": str(self.datadir), "port": port, "bind-address": spec.listen_address, "socket": str(sock),
            "pid-file": str(spec.private_dir / "mysqld.pid"), "user": "root", **server.paths,
        }
        files = server_files(spec, owned, server.flavour)
        init_file = write_private(spec.private_dir / "init.sql", files.init_sql)
        self.log_path = spec.run_dir / "server.log"
        cmd = with_cpus([*server.command, f"--defaults-file={mycnf}", f"--init-file={init_file}",
                         f"--log-error={self.log_path}"], self.cpus)
        with signals_deferred():  # the server and the note of its PID come into being together
            self.process = start(Path(server.program).name, cmd, log_path=spec.run_dir / "server.stdout.log",
                                 secrets=[spec.password])
            owners.record(spec.label, pid=self.process.pid, marker=f"--defaults-file={mycnf}",
                          paths=[self.datadir, *([self.socket_dir] if self.socket_dir else [])])
        endpoint = Endpoint(spec.listen_address, port, spec.user, spec.password, spec.database, str(sock))
        wait_until_ready(endpoint, alive=self.process.alive, timeout=START_TIMEOUT, log_tail=self.server_log_tail)
        with contextlib.suppress(FileNotFoundError):
            init_file.unlink()  # the server has read it; the password lives on only in memory
        return endpoint

    def up_postgresql(self, spec: ServerSpec, server: ServerProgram) -> Endpoint:
        """PostgreSQL (server/postgresql.py): the datadir restored or made by initdb, layerbench's postgresql.conf
        and pg_hba.conf in it (a copy of the conf in the run's folder: what ran), the server started as its user,
        the benchmark account set over the private socket, then the benchmark login over TCP."""
        with signals_deferred():  # noted for down() and `clean` before anything exists
            self.datadir = spec.work_dir / "datadirs" / spec.label
            self.label = spec.label
            self.socket_dir = Path(tempfile.mkdtemp(prefix="lb-pgsock-", dir="/tmp"))  # short, 0700
            owners.record(spec.label, pid=None, marker=f"-D {self.datadir} ", paths=[self.datadir, self.socket_dir])
        try:  # validate says it first (backends/host/local.py); a folder made since is this run's failure
            pg.check_reachable(self.datadir.parent, "datadir", f"PostgreSQL ({spec.label})")
        except BadInput as error:
            raise RunFailed(str(error)) from None
        prepare_datadir(self.datadir, spec, server)
        pg.give_to_server_user(self.socket_dir)
        port = spec.port or free_port(spec.listen_address)
        owned = {"listen_addresses": spec.listen_address, "port": port,
                 "unix_socket_directories": str(self.socket_dir), "password_encryption": "scram-sha-256"}
        pg.write_server_files(self.datadir, spec.config, owned, spec.run_dir)
        # the restore kept the snapshot's owners (server/restore.py): only the new files and the folder's mode
        pg.give_to_server_user(self.datadir, only=["postgresql.conf", "pg_hba.conf"])
        self.log_path = spec.run_dir / "server.log"
        cmd = with_cpus(pg.server_command(self.datadir, server.command), self.cpus)
        with signals_deferred():  # the server and the note of its PID come into being together
            self.process = start("postgres", cmd, log_path=self.log_path, secrets=[spec.password],
                                 cwd=Path("/"))
            owners.record(spec.label, pid=self.process.pid, marker=f"-D {self.datadir} ",
                          paths=[self.datadir, self.socket_dir])
        pg.wait_for_socket(self.socket_dir, port, alive=self.process.alive, timeout=START_TIMEOUT,
                           log_tail=self.server_log_tail)
        pg.set_up_account(self.socket_dir, port, spec.user, spec.password, spec.database)
        endpoint = Endpoint(spec.listen_address, port, spec.user, spec.password, spec.database,
                            str(self.socket_dir), driver="pgsql")
        wait_until_ready(endpoint, alive=self.process.alive, timeout=START_TIMEOUT, log_tail=self.server_log_tail)
        return endpoint

    def stop_cleanly(self, timeout: float) -> None:
        """A clean shutdown (a consistent datadir): SIGTERM for MariaDB and MySQL, SIGINT (fast) for PostgreSQL."""
        if self.process is not None:
            postgresql = self.server is not None and self.server.flavour.is_postgresql
            self.process.stop(timeout=timeout, sig=pg.STOP_SIGNAL if postgresql else signal.SIGTERM)
            self.process = None

    def down(self) -> None:
        with signals_deferred():
            self._stop_and_remove()

    def _stop_and_remove(self) -> None:
        self.stop_cleanly(timeout=5)  # the datadir is removed next: a clean shutdown is not waited for
        if self.datadir is not None:
            shutil.rmtree(self.datadir, ignore_errors=True)
            self.datadir = None
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
            self.socket_dir = None
        if self.label is not None:
            owners.forget(self.label)
            self.label = None

    def server_log_tail(self, lines: int = 20) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])



def page_size_option(config: dict[str, Any]) -> list[str]:
    page = next((v for k, v in config.items() if k.replace("-", "_").lower() == "innodb_page_size"), None)
    return [f"--innodb-page-size={page}"] if page is not None else []


def prepare_datadir(datadir: Path, spec: ServerSpec, server: ServerProgram) -> None:
    """Restore the snapshot into datadir (owners kept), or initialise an empty one the flavour's way."""
    if datadir.exists():
        shutil.rmtree(datadir)
    datadir.parent.mkdir(parents=True, exist_ok=True)
    if spec.snapshot is not None:
        copy_tree(spec.snapshot, datadir, facts_dir=spec.run_dir)
        return
    name, cmd, log, env, cwd = init_step(datadir, spec, server)
    started = time.monotonic()
    done = run(name, cmd, log_path=spec.run_dir / log, timeout=300, env=env, cwd=cwd)
    if done.returncode != 0:
        shutil.rmtree(datadir, ignore_errors=True)
        last = done.output.strip().splitlines()[-1:] or ["no output"]
        raise RunFailed(f"{name} failed after {time.monotonic() - started:.0f} s: {last[0]}")


def init_step(datadir: Path, spec: ServerSpec, server: ServerProgram
              ) -> tuple[str, list[str], str, dict[str, str] | None, Path | None]:
    """(name, command, log file, environment, folder) of the program that makes an empty datadir: PostgreSQL's
    initdb as the server's user (in a datadir it owns, from a folder it can enter), else the flavour's."""
    if server.flavour.is_postgresql:
        datadir.mkdir()
        pg.give_to_server_user(datadir)
        return "initdb", pg.initdb_command(datadir, server.initdb), "initdb.log", None, Path("/")
    cmd = server.flavour.init_command(server.command, datadir, page_size_option(spec.config), server.path_options())
    # its bootstrap server's temporary tables go to the private folder, which goes whatever ends the run
    env = {**os.environ, "TMPDIR": str(spec.private_dir)}
    name = "mysqld --initialize" if not server.flavour.is_mariadb else Path(cmd[0]).name
    return name, cmd, "install-db.log", env, None
