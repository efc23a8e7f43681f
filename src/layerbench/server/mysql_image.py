"""MySQL's Docker image: the cached MySQL rootfs (server/mysql_rootfs.py, the same bytes the host backend runs)
imported into Docker as it is, no registry involved. Its tag names the flavour, the pinned package version and
the rootfs's content key (`layerbench/mysql:9.7.4-2-<key>`), so a rebuilt rootfs of other inputs gets another
image and an image is imported once per rootfs.

A `mysqld:` inside a root filesystem of the user's (server/binary_root.py) is imported the same way from that root,
tagged `layerbench/root:<sha256 of the root's content>`, so the container runs exactly those bytes and an image is
imported once per content."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from layerbench.errors import RunFailed
from layerbench.hosts.procs import capture, pipe
from layerbench.server.mysql_rootfs import MysqlRootfs, require_rootfs, rootfs_key

IMAGE_REPO = "layerbench/mysql"
ROOT_REPO = "layerbench/root"
IMPORT_TIMEOUT = 900.0
IMPORT_SECONDS = 15  # 11.5 s measured here (416 MB, a loaded 2-core machine)
Say = Callable[[str], None]


def mysql_image_tag(rootfs: MysqlRootfs) -> str:
    version = rootfs.package_version
    return f"{IMAGE_REPO}:{version}-{rootfs_key(version)}"


def image_present(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def mysql_image_imported(version: str) -> bool:
    """The image of a MySQL version's built rootfs is in this machine's Docker (False when either is not)."""
    from layerbench.server.mysql_rootfs import find_rootfs, pinned

    package_version = pinned(version)
    rootfs = find_rootfs(package_version) if package_version else None
    if rootfs is None:
        return False
    done = capture(["docker", "image", "inspect", mysql_image_tag(rootfs)], timeout=60)
    return done.returncode == 0


def ensure_mysql_image(client: Any, version: str, where: str, say: Say | None = None) -> str:
    """The image of a MySQL version's rootfs in Docker, imported now when missing; returns its tag. A rootfs that
    is not built is a one-line BadInput naming the command that builds it (require_rootfs)."""
    rootfs = require_rootfs(version, where)
    tag = mysql_image_tag(rootfs)
    if image_present(client, tag):
        return tag
    (say or (lambda _t: None))(f"importing the MySQL rootfs {rootfs.folder.name} into Docker as {tag}")
    import_rootfs(rootfs, tag)
    if not image_present(client, tag):
        raise RunFailed(f"docker import of {rootfs.root} finished but {tag} is not in Docker")
    return tag


def import_rootfs(rootfs: MysqlRootfs, tag: str) -> None:
    import_root(rootfs.root, tag, "/usr/sbin/mysqld")


def import_root(root: Path, tag: str, program: str) -> None:
    """`tar -C root -c . | docker import - tag`: streamed, nothing written beside the cache."""
    tar, done = pipe(["tar", "-C", str(root), "--numeric-owner", "-cf", "-", "."],
                     ["docker", "import", "--change", "LABEL layerbench=1", "--change", f'CMD ["{program}"]', "-", tag],
                     timeout=IMPORT_TIMEOUT)
    if done.returncode != 0 or tar != 0:
        last = (done.stderr.strip().splitlines() or ["tar failed"])[-1]
        raise RunFailed(f"docker import of the root filesystem failed ({last}); root: {root}")


def root_image_tag(root: Path) -> str:
    from layerbench.server.binary_root import content_key

    return f"{ROOT_REPO}:{content_key(root)}"


def root_image_imported(root: Path) -> bool:
    """The image of a `mysqld:`'s root (its content now) is in this machine's Docker."""
    done = capture(["docker", "image", "inspect", root_image_tag(root)], timeout=60)
    return done.returncode == 0


def ensure_root_image(client: Any, root: Path, program: str, say: Say | None = None) -> str:
    """The image of a `mysqld:`'s root filesystem in Docker, imported now when missing; returns its tag."""
    tag = root_image_tag(root)
    if image_present(client, tag):
        return tag
    (say or (lambda _t: None))(f"importing the root filesystem {root} into Docker as {tag}")
    import_root(root, tag, program)
    if not image_present(client, tag):
        raise RunFailed(f"docker import of {root} finished but {tag} is not in Docker")
    return tag
