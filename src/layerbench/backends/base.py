"""The one small interface every deployment model implements, and the values it exchanges."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from layerbench.campaign.models import ConfigValue
from layerbench.hosts.owners import processes_with
from layerbench.hosts.procs import Completed, run, with_cpus
from layerbench.secrets import Secret


@dataclass(frozen=True)
class Endpoint:
    """Where sysbench connects. The password is a Secret and never prints."""

    host: str
    port: int
    user: str
    password: Secret
    database: str = "sbtest"
    socket: str | None = None

    def describe(self) -> str:
        return f"{self.user}@{self.host}:{self.port}/{self.database}"


@dataclass
class ServerSpec:
    """Everything a backend needs to bring up one server for one run (the variant is the backend's own)."""

    campaign: str
    label: str  # resource name prefix: every container/VM/dir created carries it, so `clean` finds it
    run_dir: Path  # this run's log folder (inside the output folder: nothing secret goes here)
    private_dir: Path  # 0700 folder outside the output folder for password files; removed after the run
    work_dir: Path  # campaign work folder for datadirs and images
    config: dict[str, ConfigValue] = field(default_factory=dict)  # my.cnf [mysqld] overlay
    password: Secret = field(default_factory=lambda: Secret(""))
    user: str = "layerbench"
    database: str = "sbtest"
    snapshot: Path | None = None  # a prepared datadir to restore; None: a fresh, empty datadir
    listen_address: str = "127.0.0.1"  # where the server listens / publishes; a remote client's address for it


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
        return run(name, with_cpus(cmd, self.cpus), log_path=log_path, secrets=secrets or [], timeout=timeout,
                   on_line=on_line)


class Backend(Protocol):
    """A deployment model for one variant, given to its constructor (each backend takes its own variant type).

    `check` is pure: it reads (programs, the daemon, the cluster) and creates nothing, not even state of its own;
    `up` returns an endpoint and connects to whatever it needs itself; `down` is idempotent and always safe;
    `describe` only reports what up() saw (no calls, no changes)."""

    kind: str

    def check(self) -> None:
        """Preflight before any run: raise BadInput / PrerequisiteMissing with a one-line fix."""

    def prepare(self, say: Callable[[str], None]) -> None:
        """Once per campaign after every check passed: slow one-time work (building an image), with progress."""

    def up(self, spec: ServerSpec) -> Endpoint:
        """Start the server on spec.snapshot (or an empty datadir) and wait until it accepts connections."""

    def down(self) -> None:
        """Stop the server and remove everything up() created for this run."""

    def exit_cause(self) -> str | None:
        """Why the server stopped ("was OOM-killed ..."), when it did and the backend can tell; else None."""

    def components(self) -> dict[str, list[int]]:
        """Host PIDs per component (server, docker-proxy, qemu, containerd-shim) for CPU accounting."""

    def client_processes(self, hook: Path) -> list[int]:
        """Host PIDs of this run's sysbench (found by its report hook), for CPU accounting."""

    def cgroups(self) -> list[Path]:
        """cgroup directories whose limits and throttling belong to this variant."""

    def describe(self) -> dict[str, Any]:
        """Facts for the environment record (versions, image id, limits, warnings); no secrets, no side effects."""

    def client(self) -> ClientRunner | None:
        """Where sysbench runs: None for this host."""

    def server_log_tail(self, lines: int = 20) -> str:
        """The server's last log lines, for the cause of a failed run."""


def host_client_processes(hook: Path) -> list[int]:
    """sysbench started on this host for this run: its command line names the run's own hook file."""
    return processes_with(str(hook))
