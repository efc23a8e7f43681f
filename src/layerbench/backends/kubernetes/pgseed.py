"""PostgreSQL's part of a dataset made in the cluster (seed.py, whose steps are the same for every flavour): the seed
server is the variant's PostgreSQL image running pgpod.py's script on the empty PVC (initdb, the server as user
`postgres`, the account set over the pod's socket from the Secret's psql script), with a 256 MB shared_buffers and
commits that do not wait for the disk (server/prepare.py's helper settings: a failed seed is made again);
`sysbench prepare` with the pgsql driver (or `pgbench -i`) runs as a Job of the same image, whose sysbench has that
driver, to the pod's IP on 5432.

PostgreSQL has no SQL to shut itself down, and the benchmark account is a TCP login: the stop is one exec in the
server container (pgpod.stop_command): psql as the superuser over the socket removes the account's password (no
snapshot keeps one, as the host's build does), then SIGTERM to the container's script, which passes it on as SIGINT,
PostgreSQL's fast shutdown (a checkpoint, every file consistent). The stop is checked: the pod must end Succeeded,
its exit code the server's own (0 after a clean stop)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from layerbench.backends.kubernetes import pgpod
from layerbench.backends.kubernetes.podexec import pod_exec
from layerbench.endpoint import Endpoint
from layerbench.errors import RunFailed
from layerbench.server.prepare import helper_settings
from layerbench.server.servers import ServerProgram

if TYPE_CHECKING:
    from layerbench.backends.kubernetes.seed import Seeding

STOP_TIMEOUT = 60.0  # the exec of the stop itself; the pod's end is waited for as long as the variant's ready_timeout


class PostgresqlSeed:
    """What a PostgreSQL seed does its own way (seed.MysqlSeed is MariaDB's and MySQL's)."""

    def __init__(self, server: ServerProgram) -> None:
        self.server = server

    def config(self, page_size: str | None) -> dict[str, Any]:
        """The seed server's postgresql.conf settings (a page size is InnoDB's: none here)."""
        return helper_settings(self.server.flavour, "256M", durable=False)

    def stop(self, seeding: Seeding, job: Any, endpoint: Endpoint) -> None:
        """The account's password removed and a fast shutdown, by exec in the server container; the pod must then
        end Succeeded (exit 0)."""
        name = f"{seeding.prefix}-db"
        status, _out, err = pod_exec(seeding.seeds.core, seeding.ns, name, pgpod.stop_command(endpoint.user),
                                     timeout=STOP_TIMEOUT)
        (seeding.log_dir / "shutdown.log").write_text(err, encoding="utf-8")
        if status != 0:
            why = err.strip().splitlines()[-1][:200] if err.strip() else f"exit status {status}"
            raise RunFailed(f"the seed's server in {seeding.ns} did not take the shutdown ({why}); see "
                            "seed/shutdown.log")
        seeding.finished(name, "the seed's server (a fast shutdown)")

    def table_bytes(self, sizes: dict[str, int], database: str) -> int:
        """The bytes of every database's tables and indexes (base/, as server/postgresql.py data_bytes counts)."""
        return sum(size for name, size in sizes.items() if name.startswith("base/"))
