"""A database neighbour (`kind: database`, docs/neighbours.md): layerbench's own server beside the run's (the
private server of server/private.py, as the host backend runs one: this machine's MariaDB on its own datadir, port
and socket, named with the run's label), a small dataset prepared by sysbench (server/prepare.py), and its own
sysbench running until stopped (the measured run's command of sysbench/command.py, at the neighbour's threads and
`--rate`). Both are this machine's processes, so the resource sampler counts them as `neighbour:<name>`. Built here
because its workload is the campaign's Workload model; neighbours/running.py starts it through the
`DatabaseStarter` run/execution.py hands in. Every piece is noted before it exists (the server by private.py, the
password folder and the sysbench by owner records), so `layerbench clean` finds them after a SIGKILL."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerbench.campaign.workload import Workload
from layerbench.hosts import owners, procs
from layerbench.hosts.critical import signals_deferred
from layerbench.neighbours.model import Neighbour
from layerbench.neighbours.placed import DatabaseRequest
from layerbench.secrets import Secret, generate_password, write_private
from layerbench.server.prepare import prepare_tables
from layerbench.server.private import PrivateServer
from layerbench.server.servers import ServerChoice
from layerbench.server.spec import ServerSpec
from layerbench.sysbench.client import HostClient
from layerbench.sysbench.command import config_file_text, hook_script, run_argv
from layerbench.vocabulary.limits import MAX_SECONDS

CONFIG = {"innodb_buffer_pool_size": "64M"}  # a small neighbour: its dataset is small and prepared for each run


def neighbour_workload(neighbour: Neighbour) -> Workload:
    """Its own sysbench's workload: its test, tables and threads, running until stopped, reporting each second."""
    options = {"rate": neighbour.rate} if neighbour.rate else {}
    return Workload(name="neighbour", test=neighbour.database_test, tables=neighbour.database_tables,
                    table_size=neighbour.database_rows, threads=[neighbour.database_threads], duration=MAX_SECONDS,
                    warmup=0, report_interval=1, options=options)


@dataclass
class DatabaseNeighbour:
    """One database neighbour's server and sysbench (placed.Placed)."""

    server: PrivateServer
    private: Path
    owner: str  # the owner record of its password folder and of its sysbench
    sysbench: procs.ManagedProcess | None = None

    def pids(self) -> list[int]:
        found = [p for p in (self.server.process, self.sysbench) if p is not None and p.alive()]
        return [p.pid for p in found]

    def alive(self) -> bool:
        return all(p is not None and p.alive() for p in (self.server.process, self.sysbench))

    def cpu_seconds(self) -> float | None:
        return None  # its pids() (none on an ssh: host)

    def exit_code(self) -> int | None:
        return self.sysbench.popen.returncode if self.sysbench is not None else None

    def tail(self, lines: int) -> str:
        said = self.sysbench.tail(lines) if self.sysbench is not None else ""
        return said or self.server.server_log_tail(lines)

    def facts(self) -> dict[str, Any]:
        return {}  # on this machine, as placed: nothing to read back

    def stop(self, timeout: float) -> int | None:
        """Its sysbench first (SIGTERM; its per-second reports are its record), then its server, removed with its
        datadir, then its password folder."""
        with signals_deferred():
            code = self.sysbench.stop(timeout=timeout) if self.sysbench is not None else None
            self.server.down()
            shutil.rmtree(self.private, ignore_errors=True)
            owners.forget(self.owner)
        return code


def start_database_neighbour(request: DatabaseRequest) -> DatabaseNeighbour:
    """Its server up, its dataset prepared, its sysbench started; a failure on the way removes what was made."""
    neighbour, owner = request.neighbour, f"{request.name}-sysbench"
    with signals_deferred():
        private = owners.private_folder(owner, "lb-private-")
    placed = DatabaseNeighbour(PrivateServer(ServerChoice(f"neighbour {neighbour.name}")), private, owner)
    try:
        run_dir = request.folder / neighbour.name
        run_dir.mkdir(parents=True, exist_ok=True)
        password = generate_password()
        spec = ServerSpec(request.campaign, request.name, run_dir, private, request.work_dir, config=dict(CONFIG),
                          password=password, port=neighbour.port)
        endpoint = placed.server.up(spec)
        workload = neighbour_workload(neighbour)
        prepare_tables(workload, endpoint, private, run_dir, None, client=HostClient())
        placed.sysbench = start_sysbench(workload, config_file_text(endpoint), private, request, password)
    except BaseException:
        placed.stop(timeout=5)
        raise
    return placed


def start_sysbench(workload: Workload, config: str, private: Path, request: DatabaseRequest,
                   password: Secret) -> procs.ManagedProcess:
    """Its sysbench, noted first by its config file (a path only this run has), its output in `request.report`."""
    hook = request.folder / request.neighbour.name / "hook.lua"
    hook.write_text(hook_script(workload), encoding="utf-8")
    cfg = write_private(private / "sysbench.cfg", config)
    cmd = run_argv(workload, cfg, hook, request.neighbour.database_threads)
    with signals_deferred():
        owners.record(request.name + "-sysbench", pid=None, marker=str(cfg), paths=[private])
        return procs.start(f"neighbour {request.neighbour.name} sysbench", cmd, log_path=request.report,
                           secrets=[password])
