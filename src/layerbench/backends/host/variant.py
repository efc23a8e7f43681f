"""A host variant: a private server process on a host of the inventory (this machine or an ssh: host)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from layerbench.backends.variant_base import VariantBase, which_server
from layerbench.server.postgresql_rootfs import is_rootfs_version
from layerbench.server.servers import ServerChoice, resolve_server
from layerbench.vocabulary.base import PrintableLine


class HostVariant(VariantBase):
    backend: Literal["host"]
    mysqld: PrintableLine | None = Field(default=None, max_length=4096,
                                         description="server binary; default: mariadbd on PATH")

    local_backend: ClassVar[str] = "layerbench.backends.host.local:HostBackend"
    remote_backend: ClassVar[str | None] = "layerbench.backends.host.remote:RemoteHostBackend"
    remote_client: ClassVar[bool] = True
    dataset_on_server_host: ClassVar[bool] = True  # backends/host/dataset.py
    takes_reach: ClassVar[bool] = True  # backends/host/remote.py: a forward over SSH, a bind address of its own
    run_overhead: ClassVar[float] = 2  # server start + stop, measured: 1.4 s median over 149 runs here, + margin
    runs_postgresql: ClassVar[bool] = True  # here PostgreSQL 15 (or 18 of its rootfs), or an ssh: host's own

    def describe_plan(self) -> str:
        if self.server.flavour == "postgresql" and self.server_host is not None:
            which = f"PostgreSQL {self.server.version}" if self.server.version else "PostgreSQL, its newest major"
            return (f"a private {which} (the server host's own postgres, run as its user postgres; free port), its "
                    "own datadir copy")
        if self.server.flavour == "postgresql":
            version = self.server.version or "15"
            whose = ("postgres of the cached sid rootfs, a plain host process" if is_rootfs_version(version)
                     else "this machine's postgres")
            return (f"a private PostgreSQL {version} ({whose}, run as user postgres; free port), its own datadir "
                    "copy")
        if self.server.flavour == "mysql":
            return (f"a private MySQL {self.server.version or '9.7'} (mysqld of the cached rootfs, a plain host "
                    "process; free port), its own datadir copy")
        return f"a private {self.mysqld or 'mariadbd'} (free port), its own datadir copy"

    def checks_options_here(self, local: bool) -> bool:
        """Here, or for MySQL the rootfs's mysqld here (the bytes an ssh: host runs); else against that host's
        server (backends/host/remote.py)."""
        return local or self.server.flavour == "mysql"

    def remote_backend_for(self) -> str | None:
        if self.server.flavour == "postgresql":  # the host's own PostgreSQL: a RemoteHostBackend of its own
            return "layerbench.backends.host.remote_pg:RemotePostgresBackend"
        return self.remote_backend

    def runs_postgresql_on(self, local: bool) -> bool:
        return True  # on an ssh: host, that host's own PostgreSQL (backends/host/remote_pg.py)

    def runs_mysql(self, local: bool) -> bool:
        return True  # on an ssh: host, the rootfs in place or shipped (server/remote_rootfs.py)

    def check_server_here(self) -> None:
        resolve_server(self)

    def server_command_here(self) -> tuple[str, ...] | None:
        if self.server.flavour in ("mysql", "postgresql") or self.mysqld:  # not on PATH: the rootfs's mysqld,
            # a binary (in its root's loader), or PostgreSQL's postgres
            return resolve_server(self).command
        return which_server(self.mysqld or "mariadbd")

    def snapshot_server(self) -> ServerChoice:
        """The variant's own server on this machine (MySQL's datadir is not MariaDB's: the rootfs's mysqld here
        makes it also for an ssh: host, which runs the same bytes)."""
        if self.server_host is not None and self.server.flavour != "mysql":
            return super().snapshot_server()
        return ServerChoice("prepare", self.server.flavour, self.server.version, self.mysqld)
