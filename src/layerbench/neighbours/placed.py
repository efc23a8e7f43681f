"""Where a neighbour's process runs, behind one small interface (`Placed`): a process on this machine
(hosts/procs.py), a container or a pod (backends/docker/neighbours.py and backends/kubernetes/neighbours.py give
one through the `ContainerStarter` that run/ hands in, so this package never names a backend) or a process on an
ssh: host (neighbours/remote.py). A database neighbour (its own server and sysbench) is started by
run/neighbour_database.py through a `DatabaseStarter`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from layerbench.hosts import procs
from layerbench.neighbours.model import Neighbour


class Placed(Protocol):
    """One started process of a neighbour, wherever it runs."""

    def pids(self) -> list[int]:
        """Its PIDs in this machine's kernel, for the CPU sampler ([] when it runs on another host)."""

    def alive(self) -> bool: ...

    def stop(self, timeout: float) -> int | None:
        """SIGTERM (the tool writes its report), SIGKILL after `timeout`; removes what it created; its exit code."""

    def exit_code(self) -> int | None: ...

    def cpu_seconds(self) -> float | None:
        """Its CPU seconds so far, read where it runs, when this machine's kernel does not hold its processes (a pod
        on another machine's node); None: pids() are read here (or nowhere, on an ssh: host)."""

    def tail(self, lines: int) -> str: ...

    def facts(self) -> dict[str, Any]:
        """Where it ran, as its placement read it back (a pod's node and QoS class); {} when nothing to add."""


@dataclass
class LocalProcess:
    """A neighbour's process on this machine."""

    process: procs.ManagedProcess

    def pids(self) -> list[int]:
        return [self.process.pid] if self.process.alive() else []

    def alive(self) -> bool:
        return self.process.alive()

    def stop(self, timeout: float) -> int | None:
        return self.process.stop(timeout=timeout)

    def exit_code(self) -> int | None:
        return self.process.popen.returncode

    def cpu_seconds(self) -> float | None:
        return None

    def tail(self, lines: int) -> str:
        return self.process.tail(lines)

    def facts(self) -> dict[str, Any]:
        return {}


@dataclass(frozen=True)
class ContainerRequest:
    """What a container or pod placement is asked to run: the command (paths as on this machine: every folder in
    `mounts` is mounted at its own path), the neighbour (its qos, resources, cpus), its name and log."""

    name: str  # the container's name: the run's label and the neighbour's name
    campaign: str
    neighbour: Neighbour
    command: list[str]
    mounts: list[Path] = field(default_factory=list)
    log_path: Path | None = None
    network: str = "none"  # Docker's network mode: none, or bridge for a network neighbour (its peer on a host)


ContainerStarter = Callable[[ContainerRequest], Placed]


@dataclass(frozen=True)
class DatabaseRequest:
    """A database neighbour to start: its server (named by `name`, the run's label and the neighbour's), its
    dataset and its own sysbench, whose output goes to `report`; its files under `folder` (the run's neighbours
    folder) and its datadir under `work_dir` (the run's data filesystem)."""

    name: str
    campaign: str
    neighbour: Neighbour
    folder: Path
    work_dir: Path
    report: Path


DatabaseStarter = Callable[[DatabaseRequest], Placed]
