"""The image a docker variant's container runs: the locally built one of its server (built or imported now when
missing), or an `image:` of the user's, checked on the daemon before anything starts (never pulled)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from layerbench.backends.docker.upstream import check_upstream, inspect_image
from layerbench.backends.docker.variant import DockerVariant
from layerbench.errors import BadInput
from layerbench.hosts.critical import signals_deferred
from layerbench.server.servers import DEFAULT_MYSQL

USER_IMAGE_PROGRAMS = ("sh", "cp", "mariadbd", "mariadb-install-db")  # what server_command runs in an `image:`


def local_image(client: Any, variant: DockerVariant, say: Callable[[str], None] | None = None) -> str:
    """The locally built image of the variant's server flavour, or of its `mysqld:`'s root filesystem (built or
    imported now when missing)."""
    if variant.mysqld is not None:
        from layerbench.server.binary_root import require_root
        from layerbench.server.mysql_image import ensure_root_image

        found = require_root(variant.mysqld, f"variants.{variant.name}.mysqld")
        return ensure_root_image(client, found.root, found.inside, say)
    if variant.server.flavour == "mysql":
        from layerbench.server.mysql_image import ensure_mysql_image

        version = variant.server.version or DEFAULT_MYSQL
        return ensure_mysql_image(client, version, f"variants.{variant.name}.server.version", say)
    if variant.server.flavour == "postgresql":
        from layerbench.server.postgresql_image import ensure_postgresql_image, postgresql_image_tag

        return ensure_postgresql_image(client, say) if say else postgresql_image_tag()
    from layerbench.server.image import ensure_docker_image, image_tag

    return ensure_docker_image(client, say) if say else image_tag()


def check_image(client: Any, variant: DockerVariant) -> None:
    """The image is on the Docker host (layerbench never pulls); an image with an entrypoint is started through it
    (upstream.py), any other must hold the programs the container's command runs (server_command)."""
    import docker.errors

    where = f"variants.{variant.name}.image: {variant.image}"
    try:
        upstream = inspect_image(client, str(variant.image))
    except docker.errors.ImageNotFound:
        raise BadInput(f"{where} is not on this Docker host (layerbench never pulls); run `docker pull "
                       f"{variant.image}` where a registry answers, or `docker load -i FILE` with a `docker save` "
                       "of it, or remove `image:` to use the locally built one") from None
    if upstream is not None:
        check_upstream(variant, upstream)
        return
    needed = USER_IMAGE_PROGRAMS + (("sysbench",) if variant.client == "container" else ())
    missing = missing_programs(client, str(variant.image), needed)
    if missing:
        raise BadInput(f"{where} has no {', '.join(missing)} on its PATH; layerbench starts an image without an "
                       "entrypoint with mariadbd and mariadb-install-db (an image with the docker-entrypoint.sh "
                       "of the mysql and mariadb images is started through it); remove `image:` to use the "
                       "locally built one")


def missing_programs(client: Any, image: str, programs: tuple[str, ...]) -> list[str]:
    """Which of the programs `sh` in the image does not find (all of them when the image has no sh): a labelled
    container that is never given a network, removed before this returns."""
    script = "; ".join(f"command -v {p} >/dev/null || echo {p}" for p in programs)
    check_labels = {"layerbench": "1", "layerbench.role": "image-check", "layerbench.harness": str(os.getpid())}
    container = None
    try:
        with signals_deferred():  # a Ctrl-C while the daemon creates it lands once `container` is set
            container = client.containers.create(image, ["-c", script], entrypoint=["sh"], labels=check_labels,
                                                 network_mode="none")
        return programs_not_found(container, programs)
    finally:
        if container is not None:
            container.remove(force=True)


def programs_not_found(container: Any, programs: tuple[str, ...]) -> list[str]:
    import docker.errors

    try:
        container.start()
    except docker.errors.APIError:  # no sh in the image: it cannot run the server's command either
        return list(programs)
    try:
        container.wait(timeout=60)
    except Exception:  # the daemon's read timed out: the image's sh never finished
        return ["sh that finishes `command -v` within 60 s"]
    return container.logs(stdout=True, stderr=False).decode(errors="replace").split()
