"""PostgreSQL's Docker image: a Debian rootfs with exactly this machine's postgresql-15 (its server, its pgbench) and
postgresql-client-15 and sysbench (the client side: a `client: container` runs them from this image), built once
with debootstrap like the MariaDB image (server/image.py: the same cache, label and tag rules), and imported into
Docker as `layerbench/postgresql:<key of its inputs>`.

Its user `postgres` has this machine's uid and gid (made before the packages install, so their scripts keep it),
which are inputs of the key: a dataset snapshot made here by this machine's PostgreSQL, its files owned by that
user, is restored into a container whose server runs as the same user, with nothing to chown. The cluster the
package's own scripts create is removed: every run brings its datadir (a restored snapshot, or initdb's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
