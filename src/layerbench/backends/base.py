"""The one small interface every deployment model implements (Backend), its defaults given once (BackendBase),
and the values it exchanges."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from layerbench.backends.variant_base import FirstTimeCost
from layerbench.endpoint import Endpoint
from layerbench.hosts.owners import processes_with
from layerbench.measure.cpu import QuietLoad
from layerbench.measure.remote_cpu import ServerCpuWindow
from layerbench.neighbours.placed import ContainerStarter
from layerbench.server.spec import HostDatasets, ServerSpec
from layerbench.sysbench.client import ClientRunner, HostClient

__all__ = ["Backend", "BackendBase", "ClientRunner", "ContainerEngine", "Endpoint", "HostClient", "ServerSpec",
           "at_campaign_end", "campaign_ended", "host_client_processes"]


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

    def neighbour_pods(self) -> ContainerStarter | None:
        """After up(): what starts a neighbour with placement kubernetes (a pod beside the server); None: none."""

    def server_sql(self) -> Callable[[str], list[tuple[Any, ...]]] | None:
        """After up(): a runner of one SQL statement where the server runs, for its status and variables when this
        machine should not connect to it (a pod off its node: backends/kubernetes/podexec.py); None: connect."""

    def server_cpu_window(self) -> ServerCpuWindow | None:
        """After up(): the reader of the server's CPU where it runs when this machine's /proc does not hold it (a
        pod whose node is not this machine: backends/kubernetes/podcpu.py); None: the sampler here sees it."""

    def quiet_load(self) -> QuietLoad | None:
        """Where the wait for quiet reads the load of the server's machine when the server's host (this machine or
        an ssh: host, run/execution.py) is not it: asked before up() and, when its `read` is None (cannot be read
        yet), again after up() (a pod off a node: through the exec API in the pod); None: the server's host."""

    def datasets_on_host(self) -> HostDatasets | None:
        """The keeper of the dataset snapshots the server's own host prepares with the variant's server (a host
        variant on an ssh: host); None: this machine prepares them (server/prepare.py)."""

    def served_on_host(self) -> tuple[str, int] | None:
        """After up(), for a server on an ssh: host: the address and port to dial it at on that host (sysbench
        there, a forward's far end: run/reach.py); None: the endpoint up() returned is the only path."""


_CAMPAIGN_END: list[Callable[[], None]] = []


def at_campaign_end(action: Callable[[], None]) -> None:
    """Something a backend keeps across the runs of a campaign (a Kubernetes seed snapshot), removed at its end."""
    _CAMPAIGN_END.append(action)


def campaign_ended() -> None:
    """The campaign is over (finished, failed or interrupted): run what at_campaign_end registered, newest first."""
    while _CAMPAIGN_END:
        _CAMPAIGN_END.pop()()


def host_client_processes(hook: Path) -> list[int]:
    """sysbench started on this host for this run: its command line names the run's own hook file."""
    return processes_with(str(hook))


class BackendBase:
    """The defaults of Backend, given once: a server with nothing to build, no cgroups of its own, sysbench on this
    host, nothing to say about why it stopped. A backend class subclasses it and overrides what differs."""

    kind: str

    def prepare(self, say: Callable[[str], None]) -> None:
        """Nothing to build."""

    def down(self) -> None:
        """Nothing to stop."""

    def exit_cause(self) -> str | None:
        return None

    def components(self) -> dict[str, list[int]]:
        return {}

    def client_processes(self, hook: Path) -> list[int]:
        return host_client_processes(hook)

    def cgroups(self) -> list[Path]:
        return []

    def client(self) -> ClientRunner | None:
        return None

    def server_log_tail(self, lines: int = 20) -> str:
        return ""

    def neighbour_pods(self) -> ContainerStarter | None:
        return None

    def datasets_on_host(self) -> HostDatasets | None:
        return None

    def server_cpu_window(self) -> ServerCpuWindow | None:
        return None

    def quiet_load(self) -> QuietLoad | None:
        return None

    def server_sql(self) -> Callable[[str], list[tuple[Any, ...]]] | None:
        return None

    def served_on_host(self) -> tuple[str, int] | None:
        return None


def image_built() -> bool:
    from layerbench.server.image import rootfs_path

    return rootfs_path().exists()


# The server image the docker, vm and kubernetes backends build from this machine's packages (server/image.py).
SERVER_IMAGE_COST = FirstTimeCost("the server image, built once from Debian packages (debootstrap + MariaDB; "
                                  "`layerbench image build`)", 120, rank=0, cached=image_built)  # 106 s measured


def postgresql_image_built() -> bool:
    from layerbench.server.postgresql_image import postgresql_image_built as built

    return built()


# The PostgreSQL image the docker backend builds from this machine's packages (server/postgresql_image.py).
POSTGRESQL_IMAGE_COST = FirstTimeCost("the PostgreSQL image, built once from Debian packages (debootstrap + "
                                      "postgresql-15)", 120, rank=0, cached=postgresql_image_built)


@dataclass(frozen=True)
class ContainerEngine:
    """A backend's container engine on this machine, for what the core starts or builds in it outside a variant's
    run: neighbours with `placement: <the backend's kind>` and `layerbench image build`. The core reaches it through
    the registry (`registry.container_engine(kind)`), never by importing the backend's own modules."""

    check: Callable[[], None]  # the engine answers, else PrerequisiteMissing; creates nothing
    build_server_image: Callable[[Callable[[str], None]], str]  # the server image, built or found cached: its name
    prepare_neighbours: Callable[[Callable[[str], None]], str]  # the neighbours' image, once per campaign: its name
    start_neighbour: ContainerStarter  # one neighbour's container, started (neighbours/placed.py)
    built_images: Callable[[Callable[[str], None]], list[str]] = lambda _say: []  # other server images built here


@dataclass(frozen=True)
class Leftovers:
    """What a backend leaves outside the owner records when a harness dies (`layerbench clean` and `doctor`):
    `clean(include_live)` removes them and says what it did; `find(include_live)` names them, for the backends
    whose leftovers doctor lists; `after_processes`: removable only once the recorded processes are stopped;
    `clean_host(host, include_live)`: those on an ssh: host of an inventory (hosts/inventory.py:Host);
    `clean_variant(variant, include_live)`: those where a campaign's variant runs (a cluster's context)."""

    what: str  # "Kubernetes namespace": doctor's "leftover <what> of a crashed campaign: <name>"
    clean: Callable[[bool], list[str]]
    find: Callable[[bool], list[str]] | None = None
    after_processes: bool = False
    clean_host: Callable[[Any, bool], list[str]] | None = None  # the same on an ssh: host (`clean --inventory`)
    clean_variant: Callable[[Any, bool], list[str]] | None = None  # on a campaign variant's own place (`--campaign`)
