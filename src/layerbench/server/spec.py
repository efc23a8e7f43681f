"""What bringing up one server for one run needs (ServerSpec): every backend's up() takes it (backends/base.py),
as does the private server of a dataset build (private.py). And what a server's host needs to prepare a run's
dataset itself (DatasetRequest), for a backend whose host keeps its own snapshots (HostDatasets)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from layerbench.secrets import Secret
from layerbench.server.settings import ConfigValue
from layerbench.server.snapshot import Snapshot
from layerbench.sysbench.client import ClientRunner

if TYPE_CHECKING:  # type hints only: campaign/ imports server/
    from layerbench.campaign.workload import Workload


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
    connect_address: str | None = None  # the address others dial when it is not listen_address (a host's bind_address)
    port: int | None = None  # the port a private server listens on (a database neighbour's `port:`); None: a free one
    say: Callable[[str], None] = field(default=lambda _text: None, repr=False)  # progress of slow steps (a restore)


@dataclass
class DatasetRequest:
    """One run's dataset, asked of the host that prepares it with its own server: the workload and page size (the
    key's other inputs), where logs and the password file go here, the run's label (the prepare server's folder
    there is named after it), the address the server listens on, and where sysbench prepare runs."""

    workload: Workload
    page_size: str | None
    log_dir: Path
    private_dir: Path
    label: str
    listen_address: str
    client: ClientRunner
    say: Callable[[str], None] = field(default=lambda _text: None, repr=False)
    campaign: str = ""  # the campaign's name (the labels of what a cluster makes for it: backends/kubernetes/seed.py)
    on_line: Callable[[str], None] | None = field(default=None, repr=False)


class HostDatasets(Protocol):
    """The dataset snapshots a server's host prepares with its own server and keeps there (backends/host/
    dataset.py): found or made, CHECKSUM TABLE of a restored copy there (verify: checksum), removed there."""

    host: Any  # the Host (hosts/inventory.py)

    def snapshot(self, request: DatasetRequest) -> Snapshot:
        """The snapshot on the host, prepared there now when it has none."""

    def checksums(self, snapshot: Snapshot, request: DatasetRequest) -> dict[str, int]:
        """CHECKSUM TABLE of every table, in a server there on a fresh restore of the snapshot."""

    def forget(self, snapshot: Snapshot) -> None:
        """Remove the snapshot from the host (it is prepared again for the next run)."""
