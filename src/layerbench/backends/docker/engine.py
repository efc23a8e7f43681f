"""This machine's Docker daemon as the core uses it outside a docker variant's run (backends.base.ContainerEngine,
reached through `registry.container_engine("docker")`): whether it answers, the server image `layerbench image build`
makes, and the neighbours with `placement: docker` (neighbours.py)."""

from __future__ import annotations

from collections.abc import Callable

from layerbench.backends.base import ContainerEngine
from layerbench.backends.docker.daemon import docker_client
from layerbench.backends.docker.neighbours import ensure_neighbour_image, start_neighbour_container


def check_daemon() -> None:
    """A daemon answers (a client of its own, kept nowhere), else PrerequisiteMissing with the fix."""
    docker_client()


def build_server_image(say: Callable[[str], None]) -> str:
    """The server image (debootstrap + the host's exact MariaDB, server/image.py), imported into the daemon now
    unless cached; its tag."""
    from layerbench.server.image import ensure_docker_image

    return ensure_docker_image(docker_client(), say)


def prepare_neighbours(say: Callable[[str], None]) -> str:
    """The neighbours' image in the daemon, built once (neighbours.py); its tag."""
    return ensure_neighbour_image(docker_client(), say)


def built_images(say: Callable[[str], None]) -> list[str]:
    """The PostgreSQL image (server/postgresql_image.py) once its rootfs is built here (by a postgresql docker or
    kubernetes variant's first run), imported into the daemon now when missing; else none."""
    from layerbench.server.postgresql_image import ensure_postgresql_image, postgresql_image_built

    return [ensure_postgresql_image(docker_client(), say)] if postgresql_image_built() else []


ENGINE = ContainerEngine(check=check_daemon, build_server_image=build_server_image,
                         prepare_neighbours=prepare_neighbours, start_neighbour=start_neighbour_container,
                         built_images=built_images)
