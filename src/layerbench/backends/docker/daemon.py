"""The connection to the Docker daemon, shared by every backend that uses Docker (docker, kubernetes images)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from layerbench.envvars import env_setting
from layerbench.errors import PrerequisiteMissing


def docker_client() -> Any:
    """A client for the daemon of DOCKER_HOST (or the local socket), or a one-line PrerequisiteMissing."""
    import docker
    import docker.errors

    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except (docker.errors.DockerException, OSError) as error:
        where = env_setting("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise PrerequisiteMissing(f"no Docker daemon answers at {where} ({type(error).__name__}); start it with "
                                  "scripts/setup (or `dockerd &`), or set DOCKER_HOST") from None
    return client


DEFAULT_ROOT = Path("/var/lib/docker")


def docker_root() -> Path:
    """The daemon's data root (`docker info`'s DockerRootDir), where a container's own layer lives; the default
    one when no local daemon answers (the backend's check says so later)."""
    try:
        client = docker_client()
        return Path(str(client.info().get("DockerRootDir") or DEFAULT_ROOT))
    except Exception:  # no daemon (PrerequisiteMissing), or docker-py's own error for one that answers oddly
        return DEFAULT_ROOT
