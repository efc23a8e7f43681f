"""PostgreSQL's Docker image: a Debian rootfs with exactly this machine's postgresql-15 (its server, its pgbench) and
postgresql-client-15 and sysbench (the client side: a `client: container` runs them from this image), built once
with debootstrap like the MariaDB image (server/image.py: the same cache, label and tag rules), and imported into
Docker as `layerbench/postgresql:<key of its inputs>`.

Its user `postgres` has this machine's uid and gid (made before the packages install, so their scripts keep it),
which are inputs of the key: a dataset snapshot made here by this machine's PostgreSQL, its files owned by that
user, is restored into a container whose server runs as the same user, with nothing to chown. The cluster the
package's own scripts create is removed: every run brings its datadir (a restored snapshot, or initdb's)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from layerbench.errors import BadInput
from layerbench.server.image import Recipe, ensure_docker_image, image_tag, rootfs_path
from layerbench.server.postgresql import BIN_DIR, RUN_AS, postgres_user_ids

IMAGE_REPO = "layerbench/postgresql"
PACKAGES = ("postgresql-15", "postgresql-client-15", "sysbench")
SOCKET_DIR = "/run/layerbench-pg"  # the server's socket folder in the container (a folder of this machine's)


def postgres_ids() -> tuple[int, int]:
    """(uid, gid) of this machine's `postgres` user (the Debian package's), which the image's user gets too."""
    return postgres_user_ids(f"there is no {RUN_AS} user here; install postgresql-15 (scripts/setup does it): the "
                             "PostgreSQL image's user gets its ids")


def user_inputs() -> dict[str, str]:
    uid, gid = postgres_ids()
    return {"postgres_uid": str(uid), "postgres_gid": str(gid)}


def make_user() -> tuple[str, ...]:
    """The image's `postgres` user with this machine's ids, before the packages (their adduser keeps it)."""
    uid, gid = postgres_ids()
    return (f"groupadd --system --gid {gid} {RUN_AS}",
            f"useradd --system --uid {uid} --gid {gid} --home-dir /var/lib/postgresql --shell /bin/bash {RUN_AS}")


RECIPE = Recipe(IMAGE_REPO, PACKAGES, str(BIN_DIR / "postgres"), before=make_user, extra=user_inputs,
                after=("rm -rf /var/lib/postgresql/15 /etc/postgresql/15",  # the package's own cluster `main`
                       f"mkdir -p /etc/layerbench {SOCKET_DIR}"),
                file_prefix="rootfs-postgresql-")


def image_settings(listen: str, port: int, conf_dir: str) -> dict[str, Any]:
    """What layerbench sets in the postgresql.conf of a server of this image (a container's, a pod's), whatever the
    variant says (server/postgresql.py OWNED): its address and port, the socket folder, scram-sha-256, and its
    pg_hba.conf in `conf_dir`."""
    return {"listen_addresses": listen, "port": port, "unix_socket_directories": SOCKET_DIR,
            "password_encryption": "scram-sha-256", "hba_file": f"{conf_dir}/pg_hba.conf"}


def postgresql_image_tag() -> str:
    return image_tag(RECIPE)


def postgresql_image_built() -> bool:
    """Its rootfs is in the cache (the image is imported from it in seconds)."""
    try:
        return rootfs_path(RECIPE).exists()
    except Exception:  # a package or the user missing here: its check says so
        return False


def ensure_postgresql_image(client: Any, say: Callable[[str], None] | None = None) -> str:
    """The PostgreSQL image in Docker, built (about 2 minutes) and imported now when missing; returns its tag."""
    return ensure_docker_image(client, say, RECIPE)


def check_image_here(variant: Any, backend: str, dataset_here: bool = True) -> None:
    """What a variant running this image needs of this machine (the docker and kubernetes backends), each in one line
    with the fix: the harness as root (the datadir's files belong to user postgres, whose ids the image's server runs
    with; the image is built with debootstrap), the dataset folder open to that user (this machine's PostgreSQL
    prepares the snapshots there, unless `dataset_here` is False: a pod's dataset made in its cluster), and this
    machine's PostgreSQL at the version asked for (the one the image installs)."""
    from layerbench.hosts.workdirs import datasets_dir
    from layerbench.server.postgresql import check_reachable
    from layerbench.server.servers import image_server

    where = f"variants.{variant.name}.server.flavour"
    if os.geteuid() != 0:
        raise BadInput(f"{where}: PostgreSQL in {backend} needs layerbench run as root here (its datadir's files "
                       "belong to user postgres, whose ids the image's server runs with); run as root")
    if dataset_here:
        check_reachable(datasets_dir(), "dataset snapshots (LAYERBENCH_DATASET_DIR)", where)
    image_server(variant)
