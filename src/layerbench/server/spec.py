"""What bringing up one server for one run needs (ServerSpec): every backend's up() takes it (backends/base.py),
as does the private server of a dataset build (private.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from layerbench.secrets import Secret
from layerbench.server.settings import ConfigValue


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
