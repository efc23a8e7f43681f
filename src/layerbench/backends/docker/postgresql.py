"""PostgreSQL in the Docker backend's container (docs/servers.md#postgresql, docs/backends/docker.md): the image of
server/postgresql_image.py, the postgresql.conf and pg_hba.conf of server/postgresql.py (the host variant's, with
the container's own paths), and the server run as user `postgres`, which has this machine's ids in the image.

- the datadir: restored on this machine before the start (bind, volume, data-container) or copied into the
  container (container-fs, tmpfs: `cp -a` of the mounted snapshot), or made by initdb in the container;
- its files: postgresql.conf and pg_hba.conf in a folder of their own, mounted read-only (`-c config_file=`);
- the server: `setpriv` to user postgres, then `postgres -D DATADIR`, its log in the run's folder;
- its account: set over the server's Unix socket, whose folder is one of this machine's (0700, the server user's)
  mounted into the container, so the password never reaches the container's command line, environment or files;
- logins over TCP: scram-sha-256 (pg_hba.conf), on the published port, the host's network or the container's own
  address.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layerbench.endpoint import Endpoint
from layerbench.errors import BadInput
from layerbench.hosts import owners
from layerbench.hosts.critical import signals_deferred
from layerbench.server import postgresql as pg
from layerbench.server.datadir import wait_until_ready
from layerbench.server.postgresql_image import SOCKET_DIR, check_image_here, image_settings
from layerbench.server.spec import ServerSpec

if TYPE_CHECKING:
    from layerbench.backends.docker.variant import DockerVariant

PORT = 5432  # in the container (network: host: a free port of this machine's)
DATADIR = "/var/lib/postgresql/data"
CONF_DIR = "/etc/layerbench"
SHM_DEFAULT = "64m"  # Docker's /dev/shm, when this machine's own cannot be read
SOCKET_PREFIX = "lb-pgsock-"  # and the run's label: /tmp/lb-pgsock-<label>-<random>


def container_command(snapshot: bool, fill_inside: bool, logs: str, copy_done: str, snapshot_dir: str) -> list[str]:
    """The container's command, run as root until the server: the datadir made the server user's (0700), filled
    inside the container when `fill_inside` (a `cp -a` of the mounted snapshot, or initdb as that user), then the
    server as that user (setpriv execs it: the container's PID is the server's), its output in the run's log."""
    user = pg.RUN_AS
    steps = [f"mkdir -p {DATADIR}", f"chown {user}:{user} {DATADIR}", f"chmod 0700 {DATADIR}"]
    if fill_inside:
        steps.append(f"cp -a {snapshot_dir}/. {DATADIR}/ && : > {logs}/{copy_done}" if snapshot else
                     shlex.join(pg.switch_user("setpriv", user, user, pg.initdb_args(DATADIR))) + " >/dev/null")
    server = pg.switch_user("setpriv", user, user, [str(pg.program("postgres")), "-D", DATADIR, "-c",
                                                    f"config_file={CONF_DIR}/postgresql.conf"])
    steps.append(f"exec {shlex.join(server)} >>{logs}/server.log 2>&1")
    return ["sh", "-c", " && ".join(steps)]


def dev_shm_size() -> str:
    """This machine's /dev/shm size, for the container's (Docker's default is 64 MiB): PostgreSQL's dynamic shared
    memory (parallel queries) lives there, and a host variant's server has the whole of this machine's."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return SHM_DEFAULT
    return f"{max(64, st.f_blocks * st.f_frsize >> 20)}m"


class PostgresContainer:
    """One run's PostgreSQL-specific parts of a docker variant's container: its conf folder and socket folder on
    this machine (noted for `clean` with the run's docker folder), its command, and its start-up."""

    def __init__(self, spec: ServerSpec, network_host: bool, port: int) -> None:
        self.spec, self.port = spec, port
        self.listen = spec.listen_address if network_host else "0.0.0.0"
        self.conf_dir = spec.private_dir / "pgconf"
        self.socket_dir: Path | None = None

    @classmethod
    def made(cls, spec: ServerSpec, variant: DockerVariant, port: int) -> PostgresContainer:
        """A run's parts, with its folders made (noted for `clean` beside the run's docker folder)."""
        parts = cls(spec, variant.network == "host", port)
        parts.create_folders(spec.work_dir / "docker" / spec.label)
        return parts

    def options(self, fill_inside: bool, logs: str, copy_done: str, snapshot_dir: str) -> dict[str, Any]:
        """The container's command and its /dev/shm (create()'s keyword arguments)."""
        return {"command": container_command(self.spec.snapshot is not None, fill_inside, logs, copy_done,
                                             snapshot_dir), "shm_size": dev_shm_size()}

    def create_folders(self, docker_dir: Path) -> None:
        """The socket folder (short, under /tmp: a socket's path has at most 107 bytes; named after the run) noted
        before it exists, and the conf folder with this run's files; both the server user's, 0700."""
        with signals_deferred():
            self.socket_dir = Path("/tmp") / f"{SOCKET_PREFIX}{self.spec.label[:48]}-{secrets.token_hex(4)}"
            owners.record(self.spec.label, pid=None, marker="", paths=[docker_dir, self.socket_dir])
            self.socket_dir.mkdir(mode=0o700)
        pg.give_to_server_user(self.socket_dir)
        self.conf_dir.mkdir(mode=0o700, exist_ok=True)
        owned = image_settings(self.listen, self.port, CONF_DIR)
        pg.write_server_files(self.conf_dir, self.spec.config, owned, self.spec.run_dir)
        pg.give_to_server_user(self.conf_dir)

    def volumes(self) -> dict[str, dict[str, str]]:
        assert self.socket_dir is not None
        return {str(self.conf_dir.resolve()): {"bind": CONF_DIR, "mode": "ro"},
                str(self.socket_dir): {"bind": SOCKET_DIR, "mode": "rw"}}

    def ready(self, endpoint: Endpoint, alive: Any, log_tail: Any, timeout: float) -> None:
        """Until the server takes the superuser over its socket, then the benchmark account with this run's password
        (over that socket), then the benchmark login over TCP, the way sysbench comes."""
        assert self.socket_dir is not None
        pg.wait_for_socket(self.socket_dir, self.port, alive=alive, timeout=timeout, log_tail=log_tail)
        pg.set_up_account(self.socket_dir, self.port, self.spec.user, self.spec.password, self.spec.database)
        wait_until_ready(endpoint, alive=alive, timeout=timeout, log_tail=log_tail)

    def remove(self) -> None:
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
            self.socket_dir = None
        shutil.rmtree(self.conf_dir, ignore_errors=True)


def check_postgresql(variant: DockerVariant) -> None:
    """What a postgresql docker variant cannot be, each in one line with the fix (validate): an image of the user's
    (its own server), a `mysqld:` binary, or a harness that is not root (the server's files belong to user
    postgres, and the image is built with debootstrap); and the dataset folder must let that user in (this
    machine's PostgreSQL prepares the snapshots there). Every network and storage of the backend runs it."""
    where = f"variants.{variant.name}"
    if variant.image is not None:
        raise BadInput(f"{where}.image: a postgresql docker variant runs the PostgreSQL image layerbench builds "
                       "from this machine's postgresql-15; an image of your own is started as MariaDB or MySQL; "
                       "remove image:")
    if variant.mysqld is not None:
        raise BadInput(f"{where}.mysqld: a postgresql variant runs this machine's PostgreSQL (in its image); remove "
                       "mysqld:")
    check_image_here(variant, "Docker")
