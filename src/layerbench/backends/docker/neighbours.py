"""Neighbours in Docker containers (`placement: docker`, docs/neighbours.md): their image and their containers.

The image is the server image's Debian rootfs (server/image.py, cached) with this host's versions of stress-ng,
fio and iperf3 installed in a chroot, imported into Docker under a tag derived from its inputs (built once, in
`run`'s preparation, never pulled). A neighbour's container is labelled like the server's (layerbench=1, the
campaign, the harness's pid), so `layerbench clean` removes it after a SIGKILL of the harness (cleanup.py); it has
no network (a network neighbour's: Docker's bridge network, to reach its iperf3 peer on a host), the run's folders
mounted at their own paths, and the limits of a QoS preset of this backend (qos.py)
or its own. run/ reaches them through engine.py's ENGINE (`registry.container_engine("docker")`) and hands
`start_neighbour` to neighbours/running.py, which never names a backend."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerbench.backends.docker.daemon import docker_client
from layerbench.backends.docker.local import container_alive, container_pid
from layerbench.backends.docker.qos import DEFAULT_CPUS, DEFAULT_MEMORY, qos_options
from layerbench.errors import RunFailed
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.lease import LEASE_LABEL, local_lease
from layerbench.hosts.procs import run
from layerbench.neighbours.model import Neighbour
from layerbench.neighbours.placed import ContainerRequest, Placed
from layerbench.server.image import apt_install_script, build_rootfs, checked, image_key, installed_version

RECIPE_VERSION = 1
TOOLS = ("stress-ng", "fio", "iperf3")
IMAGE_REPO = "layerbench/neighbours"


def image_inputs() -> dict[str, str]:
    """What the image is made of: the server image's own key (its suite, mirror, packages) and the tools."""
    return {"recipe": str(RECIPE_VERSION), "server_image": image_key(), **{p: installed_version(p) for p in TOOLS}}


def neighbour_image_tag() -> str:
    key = hashlib.sha256(json.dumps(image_inputs(), sort_keys=True).encode()).hexdigest()[:12]
    return f"{IMAGE_REPO}:{key}"


def install_script(inputs: dict[str, str]) -> str:
    return apt_install_script({p: inputs[p] for p in TOOLS})


def ensure_neighbour_image(client: Any, say: Callable[[str], None] | None = None) -> str:
    """The neighbours' image in Docker (built now, about a minute, when its tag is missing); returns its tag."""
    import docker.errors

    tag = neighbour_image_tag()
    with contextlib.suppress(docker.errors.ImageNotFound):
        client.images.get(tag)
        return tag
    progress = say or (lambda _text: None)
    base = build_rootfs(say)
    work = Path(tempfile.mkdtemp(prefix="neighbours-", dir=base.parent))
    log = base.parent / f"build-{tag.rpartition(':')[2]}.log"
    try:
        root = work / "root"
        root.mkdir()
        progress(f"building the neighbours' image {tag} (stress-ng, fio, iperf3 on {base.name})")
        checked(run("tar", ["tar", "-C", str(root), "-xf", str(base)], log_path=log, timeout=900), "unpack", log)
        shutil.copyfile("/etc/resolv.conf", root / "etc" / "resolv.conf")
        checked(run("chroot install", ["chroot", str(root), "/bin/sh", "-c", install_script(image_inputs())],
                    log_path=log, timeout=1800), "package install in the neighbours' image", log)
        packed = work / "rootfs.tar"
        checked(run("tar", ["tar", "-C", str(root), "--numeric-owner", "-cf", str(packed), "."], log_path=log,
                    timeout=900), "tar", log)
        client.api.import_image(src=str(packed), repository=IMAGE_REPO, tag=tag.rpartition(":")[2],
                                changes=["LABEL layerbench=1", 'CMD ["stress-ng", "--version"]'])
        client.images.get(tag)  # raises if the import did not produce the image
        return tag
    finally:
        shutil.rmtree(work, ignore_errors=True)


def container_limits(neighbour: Neighbour) -> dict[str, Any]:
    """docker-py create() limits: a QoS preset of this backend (qos.py) or the neighbour's own, its cpuset."""
    size = neighbour.resources
    cpus, memory = (size.cpus, size.memory) if size else (None, None)
    if neighbour.qos:
        options = qos_options(neighbour.qos, cpus or DEFAULT_CPUS, memory or DEFAULT_MEMORY, neighbour.cpus)
    else:
        options = {**({"nano_cpus": int(cpus * 1e9)} if cpus else {}), **({"mem_limit": memory} if memory else {})}
    if neighbour.cpus:
        options["cpuset_cpus"] = neighbour.cpus
    return options


def container_labels(request: ContainerRequest) -> dict[str, str]:
    return {"layerbench": "1", "layerbench.campaign": request.campaign, "layerbench.label": request.name,
            "layerbench.role": "neighbour", "layerbench.harness": str(os.getpid()), LEASE_LABEL: local_lease()}


def start_neighbour_container(request: ContainerRequest) -> Placed:
    """The neighbour's container, created (labelled) and started; a failure removes it before it raises."""
    client = docker_client()
    image = ensure_neighbour_image(client)
    volumes = {str(m.resolve()): {"bind": str(m), "mode": "rw"} for m in request.mounts}
    with signals_deferred():
        container = client.containers.create(image, request.command, name=request.name, detach=True,
                                             labels=container_labels(request), network_mode=request.network,
                                             volumes=volumes,
                                             **container_limits(request.neighbour))
    placed = NeighbourContainer(container, request.log_path)
    try:
        container.start()
    except Exception as error:
        placed.remove()
        raise RunFailed(f"neighbour {request.neighbour.name}: its container did not start: "
                        f"{str(error)[:200]}") from None
    except BaseException:  # Ctrl-C: removed, and the interruption goes on
        placed.remove()
        raise
    return placed


@dataclass
class NeighbourContainer:
    """One neighbour's container (placed.Placed)."""

    container: Any
    log_path: Path | None

    def pids(self) -> list[int]:
        pid = container_pid(self.container)
        return [pid] if pid else []

    def alive(self) -> bool:
        return container_alive(self.container) and self.container.status == "running"

    def cpu_seconds(self) -> float | None:
        return None  # its pids() (none on an ssh: host)

    def exit_code(self) -> int | None:
        with contextlib.suppress(Exception):
            self.container.reload()
            return int(self.container.attrs["State"]["ExitCode"])
        return None

    def facts(self) -> dict[str, Any]:
        return {}

    def tail(self, lines: int) -> str:
        with contextlib.suppress(Exception):
            return str(self.container.logs(tail=lines).decode(errors="replace")).strip()
        return ""

    def stop(self, timeout: float) -> int | None:
        """docker stop (SIGTERM, SIGKILL after `timeout`), its output into the log, then the container removed."""
        code = None
        with contextlib.suppress(Exception):
            self.container.stop(timeout=int(timeout))
            code = int(self.container.wait(timeout=timeout + 30).get("StatusCode", 1))
        if self.log_path is not None:
            self.log_path.write_text(self.tail(200), encoding="utf-8")
        self.remove()
        return code

    def remove(self) -> None:
        with signals_deferred(), contextlib.suppress(Exception):
            self.container.remove(force=True)
