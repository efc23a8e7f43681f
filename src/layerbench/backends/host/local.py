"""The host backend: a private server (MariaDB by default, the MySQL of a cached rootfs that `server: {flavour:
mysql}` asks for, or the MySQL / Percona / MariaDB build the variant's `mysqld:` names) on 127.0.0.1, its own
datadir, socket and port, CPU-pinned. Which program runs, and how, is server/servers.py's answer; starting and
stopping it is server/private.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from layerbench.backends.base import BackendBase
from layerbench.backends.host.variant import HostVariant
from layerbench.hosts.machine import check_cpus
from layerbench.hosts.procs import require_program
from layerbench.hosts.workdirs import datasets_dir, work_root
from layerbench.server.mycnf import check_overlay
from layerbench.server.postgresql import check_reachable
from layerbench.server.private import PrivateServer
from layerbench.server.servers import resolve_server


class HostBackend(PrivateServer, BackendBase):
    """A host variant's server: a private server on this machine (server/private.py) behind the Backend protocol."""

    kind = "host"

    def __init__(self, variant: HostVariant) -> None:
        PrivateServer.__init__(self, variant, variant.cpus)
        self.variant = variant

    def check(self) -> None:
        variant = self.variant
        flavour = resolve_server(variant).flavour
        if flavour.is_postgresql:  # it runs as user postgres: every folder on the way to its datadirs lets it in
            where = f"variants.{variant.name}.server.flavour"
            work = Path(variant.data_dir) if variant.data_dir else work_root()
            check_reachable(work, "work folder (data_dir, or LAYERBENCH_WORK_DIR)", where)
            check_reachable(datasets_dir(), "dataset snapshots (LAYERBENCH_DATASET_DIR)", where)
        if flavour.is_mariadb:
            require_program("mariadb-install-db", "install mariadb-server (scripts/setup does it)")
        check_cpus(variant.cpus, f"variants.{variant.name}.cpus")  # client_cpus: where sysbench runs (preflight)
        check_overlay(variant.server.config, f"variants.{variant.name}")

    def components(self) -> dict[str, list[int]]:
        return {"server": [self.process.pid]} if self.process and self.process.alive() else {}

    def describe(self) -> dict[str, Any]:
        if self.server is None:
            return {"backend": "host", "server_binary": None}
        return {"backend": "host", "server_binary": self.server.program, **self.server.flavour.facts()}
