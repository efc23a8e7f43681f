"""The one small interface every deployment model implements, and the values it exchanges."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from layerbench.campaign import ConfigValue, VariantBase
from layerbench.procs import Completed
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
    """Everything a backend needs to bring up one server for one run."""

    campaign: str
    label: str  # resource name prefix: every container/VM/dir created carries it, so `clean` finds it
    variant: VariantBase
    run_dir: Path  # this run's log folder (inside the output folder: nothing secret goes here)
    private_dir: Path  # 0700 folder outside the output folder for password files; removed after the run
    work_dir: Path  # campaign work folder for datadirs and images
    config: dict[str, ConfigValue] = field(default_factory=dict)  # my.cnf [mysqld] overlay
    password: Secret = field(default_factory=lambda: Secret(""))
    user: str = "layerbench"
    database: str = "sbtest"
    snapshot: Path | None = None  # a prepared datadir to restore; None: a fresh, empty datadir


class ClientRunner(Protocol):
    """Runs sysbench somewhere other than this host (a container, a Kubernetes Job)."""

    def run_client(
        self, cmd: list[str], files: dict[str, str], *, log_path: Path, timeout: float,
        on_line: Any = None, secrets: list[Secret] | None = None,
    ) -> Completed: ...


class Backend(Protocol):
    """A deployment model. `up` returns an endpoint; `down` is idempotent and always safe to call."""

    kind: str

    def check(self, variant: VariantBase) -> None:
        """Preflight before any run: raise BadInput / PrerequisiteMissing with a one-line fix."""

    def prepare(self, variant: VariantBase, say: Any) -> None:
        """Once per campaign after every check passed: slow one-time work (building an image), with progress."""

    def up(self, spec: ServerSpec) -> Endpoint:
        """Start the server on spec.snapshot (or an empty datadir) and wait until it accepts connections."""

    def down(self) -> None:
        """Stop the server and remove everything up() created for this run."""

    def components(self) -> dict[str, list[int]]:
        """Host PIDs per component (server, docker-proxy, qemu, containerd-shim) for CPU accounting."""

    def cgroups(self) -> list[Path]:
        """cgroup directories whose limits and throttling belong to this variant."""

    def describe(self) -> dict[str, Any]:
        """Facts for the environment record (versions, image id, limits); no secrets."""

    def client(self) -> ClientRunner | None:
        """Where sysbench runs: None for this host."""

    def server_log_tail(self, lines: int = 20) -> str:
        """The server's last log lines, for the cause of a failed run."""
