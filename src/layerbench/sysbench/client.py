"""Where sysbench runs, for every step that talks to the server: the protocol of a client runner, and the one of
this host (a backend's own, in a container or a Job, lives in its package)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from layerbench.hosts.procs import Completed, run, with_cpus
from layerbench.secrets import Secret


class ClientRunner(Protocol):
    """Where sysbench runs, for every step that talks to the server (cleanup, prepare, run): this host, a
    container, a Kubernetes Job. `files` are the command's private files (config with the password, report
    hook) by name; a runner elsewhere mounts them and rewrites the paths in `cmd`."""

    where: str  # for the run's record: "this host", "a Job in the cluster", ...

    def run_client(
        self, cmd: list[str], files: dict[str, str], *, log_path: Path, timeout: float,
        on_line: Any = None, secrets: list[Secret] | None = None,
    ) -> Completed: ...


class HostClient:
    """sysbench on this host, pinned to `cpus` when given: the runner when a backend's client() is None."""

    where = "this host"

    def __init__(self, cpus: str | None = None) -> None:
        self.cpus = cpus

    def run_client(
        self, cmd: list[str], files: dict[str, str], *, log_path: Path, timeout: float,
        on_line: Any = None, secrets: list[Secret] | None = None,
    ) -> Completed:
        name = " ".join(["sysbench", cmd[-1]]) if cmd[-1] in ("prepare", "cleanup") else "sysbench"
        if any(Path(arg).name == "pgbench" for arg in cmd[:4]):  # a pgbench workload's (pgbench/command.py)
            name = "pgbench"
        return run(name, with_cpus(cmd, self.cpus), log_path=log_path, secrets=secrets or [], timeout=timeout,
                   on_line=on_line)
