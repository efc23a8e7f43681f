"""A neighbour on an ssh: host of the inventory (`placement: ssh`, `host: <name>`): its own 0700 folder there,
named after the run's label and noted in an owner record before it exists (hosts/owners.py, with the host's
entry), so `layerbench clean` stops what runs from it and removes it after a SIGKILL of the harness (the same
way as a remote sysbench's folder: hosts/remote.py). The tool runs under setsid with its pid file in that
folder; on stop it gets SIGTERM (its process group), writes its report, which is copied back to the run's folder
here, and the folder is removed."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerbench.errors import RunFailed
from layerbench.hosts import owners
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.host_owners import claim_on_host
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.hosts.remote import detached_script, process_alive, remove_remote_folder, start_detached
from layerbench.neighbours import tools
from layerbench.neighbours.model import Neighbour

STOP_POLL = 0.2


def remote_command(neighbour: Neighbour, folder: str, report: str, tool: list[str] | None = None) -> list[str]:
    """The tool's command on the host (`tool`: an iperf3 client's, given with its peer), niced and pinned there as
    asked; every path inside `folder`."""
    if tool is not None:
        cmd = tool
    elif neighbour.kind == "disk":
        cmd = tools.fio_command(neighbour, Path(f"{folder}/data"), Path(report))
    else:
        cmd = tools.stress_ng_command(neighbour, Path(report))
    pinned = ["taskset", "-c", neighbour.cpus] if neighbour.cpus else []
    return [*(["nice", "-n", str(neighbour.nice)] if neighbour.nice else []), *pinned, *cmd]


def start_script(folder: str, cmd: list[str]) -> str:
    """The neighbour's folder made, and its tool started from it, detached (hosts/remote.py:detached_script)."""
    return f"umask 077 && mkdir -p {shlex.quote(folder)}/data && " + detached_script(
        folder, shlex.join(cmd), "out.log", "neighbour.pid")


def stop_script(pid: int, timeout: float) -> str:
    """SIGTERM to the tool's process group (stress-ng's workers too), SIGKILL after `timeout`."""
    tries = max(1, int(timeout / STOP_POLL))
    return (f"kill -TERM -{pid} 2>/dev/null; for i in $(seq {tries}); do kill -0 {pid} 2>/dev/null || break; "
            f"sleep {STOP_POLL}; done; kill -0 {pid} 2>/dev/null && kill -KILL -{pid} 2>/dev/null; true")


@dataclass
class RemoteNeighbour:
    """One neighbour's process on an ssh: host (placed.Placed)."""

    host: Host
    label: str
    folder: str
    pid: int
    report_remote: str
    report_local: Path
    log_local: Path

    @classmethod
    def start(cls, neighbour: Neighbour, label: str, entry: HostEntry, report: Path, log: Path, *,
              host_name: str | None = None, tool: Callable[[str], list[str]] | None = None,
              as_asked: bool = True) -> RemoteNeighbour:
        """Its folder noted, then made, then the tool started there. `host_name`: another host than the
        neighbour's own (an iperf3 peer's); `tool`: the command, from the remote report path (else the kind's
        own); `as_asked`: niced and pinned as the neighbour asks (not its peer)."""
        host = Host(host_name or str(neighbour.host), entry)
        folder = f"/tmp/{label}"
        with signals_deferred():  # noted (here and on the host) before it exists on the host
            claim_on_host(host, label, folder)
        placed = cls(host, label, folder, 0, f"{folder}/{report.name}", report, log)
        try:
            given = tool(placed.report_remote) if tool is not None else None
            cmd = remote_command(neighbour, folder, placed.report_remote, given) if as_asked else list(given or [])
            pid = start_detached(host, start_script(folder, cmd), name=f"neighbour {neighbour.name} on {host.name}",
                                 failed=f"neighbour {neighbour.name}: did not start on host {host.name}")
        except BaseException:
            placed.remove()
            raise
        placed.pid = pid
        return placed

    def pids(self) -> list[int]:
        return []  # another host's PIDs: this machine's sampler does not read them

    def listening(self, port: int) -> bool:
        """Whether a TCP socket listens on `port` on its host (its /proc/net/tcp and tcp6: state 0A)."""
        try:
            done = self.host.shell("cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; true", timeout=30)
        except RunFailed:
            return False
        return tools.listens_in(done.output, port)

    def alive(self) -> bool:
        try:
            return process_alive(self.host, self.pid)
        except RunFailed:
            return False

    def cpu_seconds(self) -> float | None:
        return None  # its pids() (none on an ssh: host)

    def exit_code(self) -> int | None:
        return None  # not a child of this harness: its code is not known here

    def facts(self) -> dict[str, Any]:
        return {}

    def tail(self, lines: int) -> str:
        done = self.host.run(["tail", "-n", str(int(lines)), f"{self.folder}/out.log"], timeout=30)
        return done.output.strip() if done.returncode == 0 else ""

    def stop(self, timeout: float) -> int | None:
        """Stop it, copy its report and output back here, remove its folder (the owner record goes only when the
        host confirmed: a host that does not answer keeps it for `layerbench clean`)."""
        try:
            self.host.shell(stop_script(self.pid, timeout), name=f"stop on {self.host.name}", timeout=timeout + 30)
            for remote, local in ((self.report_remote, self.report_local), (f"{self.folder}/out.log", self.log_local)):
                done = self.host.run(["cat", remote], name=f"copy from {self.host.name}", timeout=60)
                if done.returncode == 0:
                    local.write_text(done.output, encoding="utf-8")
        except RunFailed:
            pass
        self.remove()
        return None

    def remove(self) -> None:
        if remove_remote_folder(self.host, self.folder):
            owners.forget(self.label)
