"""The host backend on an ssh: host of the inventory: the same private server as backends/host/local.py (its own
datadir, my.cnf, port, CPU pinning, generated password), started and stopped over SSH.

Everything of one run lives in one 0700 folder on that host, `<work_dir>/runs/<run label>/`: the datadir, the
my.cnf, the init SQL with the password (removed once the server has read it), the server's log and pid file.
An owner record on this machine names the host and the folder, so `layerbench clean` reaches it after a crash;
`down` stops the server (its pid file, checked against its command line) and removes the folder. The server
listens on the host's address (`address:`, else the host part of `ssh:`): sysbench on another host, sysbench on
that host, and this machine's readiness and status queries all connect there.

A MySQL variant (`server: {flavour: mysql}`) runs the cached MySQL rootfs's mysqld there through the rootfs's
own loader, as on this machine: the rootfs used in place when the host sees the same one at the same path, else
shipped once per host (server/remote_rootfs.py); its flavour is read from that mysqld's `--version` there.

Its dataset snapshots are prepared on that host by that same server and kept there (backends/host/dataset.py):
a run's datadir is restored there from the host's own snapshot, checked against the host's own manifest."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from layerbench.backends.base import BackendBase, Endpoint, ServerSpec
from layerbench.backends.host.dataset import SnapshotsOnHost, read_host_manifest
from layerbench.backends.host.variant import HostVariant
from layerbench.errors import BadInput, PrerequisiteMissing, RunFailed, shown
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.forward import Forward, dial_address, local_forward, reach_facts
from layerbench.hosts.inventory import Host
from layerbench.hosts.ports import pick_port
from layerbench.hosts.remote import detached_script, process_alive, start_detached
from layerbench.server.bootstrap import server_files
from layerbench.server.datadir import wait_until_ready
from layerbench.server.flavour import SUPPORTED, install_db_command, parse_version
from layerbench.server.mycnf import HELP_ARGS, check_names_known, check_overlay, parse_server_options
from layerbench.server.remote_files import (
    check_tools,
    claim_run_folder,
    release_run_folder,
    restore_on_host,
    runs_root,
    storage_on_host,
)
from layerbench.server.servers import DEFAULT_MYSQL, ServerProgram, rootfs_mysql
from layerbench.versions import version_on

START_TIMEOUT = 120.0


def find_server(host: Host, variant: HostVariant) -> ServerProgram:
    """The server binary on the host (the variant's `mysqld:` or mariadbd) and its flavour, or a one-line error."""
    where = f"variants.{variant.name}.mysqld" if variant.mysqld else f"variants.{variant.name}.server_host"
    wanted = shlex.quote(variant.mysqld or "mariadbd")
    script = (f"b=$(command -v {wanted} || {{ [ -x /usr/sbin/{wanted} ] && echo /usr/sbin/{wanted}; }}) && "
              "echo \"BINARY $b\" && \"$b\" --version")
    done = host.shell(script, name=f"server on {host.name}", timeout=30)
    binary = next((line[7:].strip() for line in done.output.splitlines() if line.startswith("BINARY ")), "")
    if done.returncode != 0 or not binary:
        raise PrerequisiteMissing(f"{where}: no {variant.mysqld or 'mariadbd'} on host {host.name}; install the "
                                  "server there (Debian: apt-get install mariadb-server)")
    flavour = parse_version(done.output)
    if flavour is None:
        first = (done.output.replace(f"BINARY {binary}", "").strip().splitlines() or ["nothing"])[0]
        raise BadInput(f"{where}: {binary} on host {host.name} is not a server layerbench can start (--version says "
                       f"{shown(first, 120)}); give a {SUPPORTED} server binary")
    return ServerProgram(flavour, (binary,))


def mysql_on_host(host: Host, variant: HostVariant, log_dir: Path | None,
                  say: Callable[[str], None]) -> tuple[ServerProgram, dict[str, object]]:
    """The MySQL rootfs's mysqld on the host (the rootfs in place or shipped) and what happened to the rootfs;
    its flavour read from its own `--version` there, with the defaults a rootfs MySQL needs (servers.py)."""
    from layerbench.server.mysql_rootfs import require_rootfs
    from layerbench.server.remote_rootfs import rootfs_on_host

    where = f"variants.{variant.name}.server"
    here = rootfs_mysql(variant.server.version or DEFAULT_MYSQL, where)
    there, facts = rootfs_on_host(host, require_rootfs(variant.server.version or DEFAULT_MYSQL, where), log_dir, say)
    command = tuple(there.command())
    done = version_on(host, command, name=f"mysqld --version on {host.name}", timeout=60)
    flavour = parse_version(done.output)
    if done.returncode != 0 or flavour is None or flavour.version != here.flavour.version:
        said = (done.output.strip().splitlines() or ["nothing"])[0][:120]
        raise RunFailed(f"hosts.{host.name}: the MySQL rootfs's mysqld there does not answer as {here.flavour.label} "
                        f"(--version says {said})")
    return ServerProgram(replace(flavour, defaults=here.flavour.defaults), command, dict(there.paths())), facts


class RemoteHostBackend(BackendBase):
    """A private server started over SSH on `host`; the same variant type as the local host backend."""

    kind = "host"
    stop_signal = "TERM"  # a clean shutdown (PostgreSQL's fast one is INT)

    def __init__(self, variant: HostVariant, host: Host) -> None:
        self.variant, self.host = variant, host
        self.folder: str | None = None
        self.pid: int | None = None
        self.server: ServerProgram | None = None
        self.rootfs: dict[str, object] = {}
        self.owner: str | None = None
        self.dataset: dict[str, object] = {}
        self.storage: dict[str, object] = {}
        self.forward: Forward | None = None  # reach: ssh: this machine's way to the server
        self.served: tuple[str, int] | None = None  # (bind address, port) on the host

    def check(self) -> None:
        where = f"variants.{self.variant.name}.server_host"
        self.host.check()
        missing = check_tools(self.host)
        if missing:
            raise PrerequisiteMissing(f"{where}: host {self.host.name} lacks {', '.join(missing)}; install them "
                                      "there (Debian: apt-get install rsync xxhash coreutils findutils iproute2)")
        if self.variant.server.flavour == "mysql":  # built here (shipped at the start); options: preflight, here
            rootfs_mysql(self.variant.server.version or DEFAULT_MYSQL, f"variants.{self.variant.name}.server")
            check_overlay(self.variant.server.config, f"variants.{self.variant.name}")
            return self._check_cpus()
        found = find_server(self.host, self.variant)
        binary, flavour = found.program, found.flavour
        if self.variant.server.config:  # option names against the server of that host, as preflight does here
            helped = self.host.run([binary, *HELP_ARGS], name=f"{Path(binary).name} --help on {self.host.name}",
                                   timeout=60)
            check_names_known(self.variant, parse_server_options(helped.output),
                              f"{Path(binary).name} on host {self.host.name}")
        if flavour.is_mariadb and self.host.run(["sh", "-c", "command -v mariadb-install-db"]).returncode != 0:
            raise PrerequisiteMissing(f"{where}: no mariadb-install-db on host {self.host.name}; install "
                                      "mariadb-server there")
        check_overlay(self.variant.server.config, f"variants.{self.variant.name}")
        self._check_cpus()

    def _check_cpus(self) -> None:
        """The server's CPU list on its host (client_cpus: on the host that runs sysbench, preflight.py)."""
        cpus = self.variant.cpus
        if cpus and self.host.run(["taskset", "-c", cpus, "true"], timeout=30).returncode != 0:
            raise BadInput(f"variants.{self.variant.name}.cpus: {cpus!r} is not a CPU list of host "
                           f"{self.host.name}; see nproc there")

    def prepare(self, say: Callable[[str], None]) -> None:
        """A MySQL variant's rootfs on the host before the first run (shipped now when the host lacks it)."""
        if self.variant.server.flavour == "mysql":
            mysql_on_host(self.host, self.variant, None, say)

    def program(self, say: Callable[[str], None], log_dir: Path | None) -> ServerProgram:
        """The variant's server on the host (a MySQL rootfs shipped there first when it lacks it)."""
        if self.variant.server.flavour == "mysql":
            self.server, self.rootfs = mysql_on_host(self.host, self.variant, log_dir, say)
        else:
            self.server = find_server(self.host, self.variant)
        return self.server

    def datasets_on_host(self) -> SnapshotsOnHost:
        return SnapshotsOnHost(self.variant, self.host, lambda: type(self)(self.variant, self.host))

    def up(self, spec: ServerSpec) -> Endpoint:
        self.program(spec.say, spec.run_dir)
        with signals_deferred():  # noted for down() and `clean` before anything exists on the host
            self.folder, self.owner = claim_run_folder(self.host, self.variant.data_dir, spec.label)
        folder = self.folder
        self.host.shell(f"umask 077 && mkdir -p {shlex.quote(folder)}", name=f"mkdir on {self.host.name}")
        self._datadir(spec, f"{folder}/datadir")
        self.storage = storage_on_host(self.host, runs_root(self.host, self.variant.data_dir))
        port = pick_port(self.host)
        self.served = (spec.listen_address, port)
        owned = {"datadir": f"{folder}/datadir", "port": port, "bind-address": spec.listen_address,
                 "socket": f"{folder}/mysqld.sock", "pid-file": f"{folder}/mysqld.pid", "user": "root",
                 **self.server.paths}
        files = server_files(spec, owned, self.server.flavour)
        self.host.write_private(f"{folder}/my.cnf", files.mycnf)
        self.host.write_private(f"{folder}/init.sql", files.init_sql)
        self._start(folder)
        endpoint = self._reached(spec, port)
        wait_until_ready(endpoint, alive=self._alive, timeout=START_TIMEOUT, log_tail=self.server_log_tail)
        self.host.shell(f"rm -f {shlex.quote(folder)}/init.sql", name=f"rm on {self.host.name}")
        return endpoint

    def _reached(self, spec: ServerSpec, port: int) -> Endpoint:
        """Where this machine dials the server: through an SSH forward (`reach: ssh`), else its connect address."""
        if self.host.entry.reach == "ssh":
            self.forward = local_forward(self.host, dial_address(spec.listen_address), port, spec.run_dir)
            return Endpoint("127.0.0.1", self.forward.port, spec.user, spec.password, spec.database)
        return Endpoint(spec.connect_address or spec.listen_address, port, spec.user, spec.password, spec.database)

    def served_on_host(self) -> tuple[str, int] | None:
        return (dial_address(self.served[0]), self.served[1]) if self.served else None

    def reach_facts(self) -> dict[str, Any]:
        return reach_facts(self.host, self.served, self.forward)

    def _datadir(self, spec: ServerSpec, datadir: str) -> None:
        assert self.server is not None
        if spec.snapshot is not None:  # the host's own snapshot (dataset.py), checked against its own manifest
            folder = spec.snapshot.parent
            restore_on_host(self.host, folder, datadir, spec.run_dir, read_host_manifest(self.host, folder))
            self.dataset = {"host": self.host.name, "path": str(folder)}
            return
        page = next((v for k, v in spec.config.items() if k.replace("-", "_").lower() == "innodb_page_size"), None)
        extra = [f"--innodb-page-size={page}"] if page is not None else []
        flavour = self.server.flavour
        cmd = install_db_command("mariadb-install-db", Path(datadir), extra) if flavour.is_mariadb else \
            flavour.init_command(self.server.command, Path(datadir), extra, self.server.path_options())
        done = self.host.run(cmd, name=f"install-db on {self.host.name}", log_path=spec.run_dir / "install-db.log",
                             timeout=300)
        if done.returncode != 0:
            last = done.output.strip().splitlines()[-1:] or ["no output"]
            raise RunFailed(f"hosts.{self.host.name}: {Path(cmd[0]).name} failed: {last[0][:200]}")

    def _start(self, folder: str) -> None:
        assert self.server is not None
        f = shlex.quote(folder)
        taskset = ["taskset", "-c", self.variant.cpus] if self.variant.cpus else []
        command = (f"{shlex.join([*taskset, *self.server.command])} --defaults-file={f}/my.cnf "
                   f"--init-file={f}/init.sql --log-error={f}/server.log")
        with signals_deferred():  # the server and the note of it come into being together
            self.pid = start_detached(self.host, detached_script(folder, command, "server.stdout.log", "server.pid"),
                                      name=f"start on {self.host.name}",
                                      failed=f"hosts.{self.host.name}: the server did not start")

    def forget_password(self, user: str, database: str) -> None:
        """Before a dataset's snapshot is taken: MariaDB's and MySQL's accounts are not kept (bootstrap SQL)."""

    def stop_server(self, timeout: float = 600) -> None:
        """Stop the server cleanly (stop_signal, then wait for it to end) and keep its folder (a dataset build)."""
        if self.pid is None:
            return
        pid = int(self.pid)
        done = self.host.shell(f"kill -{self.stop_signal} {pid} 2>/dev/null; while kill -0 {pid} 2>/dev/null; "
                               "do sleep 0.2; done; echo stopped", name=f"stop on {self.host.name}", timeout=timeout)
        if "stopped" not in done.output:
            raise RunFailed(f"hosts.{self.host.name}: the server (pid {pid}) did not stop there")
        self.pid = None

    def _alive(self) -> bool:
        return process_alive(self.host, self.pid)

    def down(self) -> None:
        with signals_deferred():
            if self.forward is not None:
                self.forward.close()
                self.forward = None
            release_run_folder(self.host, self.folder, self.owner)
            self.folder = self.pid = self.owner = None

    def components(self) -> dict[str, list[int]]:
        """The server's PID on its host (another kernel's numbers: only the remote sampler reads them)."""
        return {"server": [self.pid]} if self.pid else {}

    def client_processes(self, hook: Path) -> list[int]:
        return []

    def describe(self) -> dict[str, Any]:
        facts: dict[str, Any] = {"backend": "host", "server_binary": self.server.program if self.server else None,
                                 "server_host": self.host.name, **self.rootfs, **self.reach_facts()}
        if self.dataset:
            facts["dataset_on_host"] = dict(self.dataset)
        if self.storage:
            facts["storage"] = dict(self.storage)  # the run's environment.storage (execution.py takes it out)
        return facts | (self.server.flavour.facts() if self.server else {})

    def server_log_tail(self, lines: int = 20) -> str:
        if self.folder is None:
            return ""
        done = self.host.run(["tail", "-n", str(int(lines)), f"{self.folder}/server.log"], timeout=30)
        return done.output if done.returncode == 0 else ""
