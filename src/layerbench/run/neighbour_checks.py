"""Before anything starts (preflight, so `validate` says it too): a campaign's neighbours against this machine
and its inventory. Each problem is one BadInput line naming the field, the value and the fix: more workers than
this machine's CPUs x WORKERS_PER_CPU, a CPU list naming a CPU that is not here, a disk neighbour whose file does
not fit in its filesystem's free space, a network neighbour sent to a host the inventory does not have, or to one
reached over SSH (not yet), a name given twice to one variant's neighbours, a `placement: docker` with no Docker
daemon answering, a `placement: kubernetes` beside a server that is not a pod or on a cluster that cannot hold it
(the variant's backend checks its cluster), a `placement: ssh` on a host that is not in `hosts:`, is this machine,
does not answer or lacks the tool. `prepare_neighbours` builds the containers' image once, after every check passed."""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from layerbench.campaign.models import Campaign, VariantBase
from layerbench.errors import BadInput, PrerequisiteMissing, shown
from layerbench.hosts.inventory import Host
from layerbench.hosts.machine import check_cpus
from layerbench.hosts.placement import placement_of
from layerbench.hosts.workdirs import work_root
from layerbench.neighbours.model import WORKERS_PER_CPU, Neighbour, size_bytes


def check_neighbours(campaign: Campaign) -> None:
    for variant in campaign.variants:
        neighbours = campaign.neighbours_of(variant)
        names = [n.name for n in neighbours]
        server = placement_of(campaign.hosts, variant).server_host
        entry = (campaign.hosts or {}).get(server)
        if neighbours and entry is not None and not entry.local:
            raise BadInput(f"variants.{variant.name}.neighbours: its server runs on the ssh: host {server}; "
                           "neighbours on an ssh: host are not yet supported; remove them or place the server here")
        for neighbour in neighbours:
            where = f"variants.{variant.name}.neighbours.{neighbour.name}"
            if names.count(neighbour.name) > 1:
                raise BadInput(f"{where}: the campaign's and the variant's neighbours both use this name; "
                               "rename one")
            check_neighbour(campaign, variant, neighbour, where)
        check_pod_neighbours(variant, [n for n in neighbours if n.placement == "kubernetes"])


def check_neighbour(campaign: Campaign, variant: VariantBase, neighbour: Neighbour, where: str) -> None:
    cpus = len(os.sched_getaffinity(0))
    if neighbour.workers and neighbour.workers > cpus * WORKERS_PER_CPU:
        raise BadInput(f"{where}.workers: {neighbour.workers} workers on a machine of {cpus} CPUs; use at most "
                       f"{cpus * WORKERS_PER_CPU} ({WORKERS_PER_CPU} per CPU)")
    if neighbour.placement == "ssh":
        check_ssh_placement(campaign, neighbour, where)
        return  # its CPUs, room and tool are the ssh: host's
    check_cpus(neighbour.cpus, f"{where}.cpus")
    if neighbour.placement == "docker":
        check_docker_placement(where)
    if neighbour.kind == "disk":
        check_disk_room(variant, neighbour, where)
    if neighbour.kind == "network":
        check_target(campaign, neighbour, where)


def check_disk_room(variant: VariantBase, neighbour: Neighbour, where: str) -> None:
    folder = Path(neighbour.folder or variant.data_dir or work_root())
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if neighbour.folder and not folder.is_dir():
        raise BadInput(f"{where}.folder: {shown(str(folder))} is not a folder here; create it or name another")
    free, wanted = shutil.disk_usage(existing).free, size_bytes(neighbour.file_size)
    if wanted > free:
        raise BadInput(f"{where}.size: {neighbour.file_size} does not fit in the {free / 2**20:,.0f} MiB free on "
                       f"{existing}; use a smaller size or another folder")


def check_target(campaign: Campaign, neighbour: Neighbour, where: str) -> None:
    to = neighbour.to or "loopback"
    hosts = campaign.hosts or {}
    if to == "loopback":
        return
    if to not in hosts:
        known = ", ".join(["loopback", *sorted(hosts)])
        raise BadInput(f"{where}.to: {shown(to)} is not a host of `hosts:`; use one of: {known}")
    if not hosts[to].local:
        raise BadInput(f"{where}.to: {shown(to)} is reached over SSH: a neighbour on an ssh: host is not yet "
                       "supported; use loopback or a local host")


def check_docker_placement(where: str) -> None:
    """A container needs a Docker daemon that answers (`validate` asks it, creating nothing)."""
    from layerbench.backends.docker.daemon import docker_client

    try:
        docker_client()
    except PrerequisiteMissing as error:
        raise BadInput(f"{where}.placement: docker: {error}; or use placement: host") from None


TOOLS = {"cpu": "stress-ng", "memory": "stress-ng", "disk": "fio", "network": "iperf3"}


def check_ssh_placement(campaign: Campaign, neighbour: Neighbour, where: str) -> None:
    """The named host is an ssh: host of the inventory, answers, and has the neighbour's tool (and taskset)."""
    hosts = campaign.hosts or {}
    name = neighbour.host or ""
    remote = sorted(n for n, e in hosts.items() if not e.local)
    if name not in hosts:
        raise BadInput(f"{where}.host: {shown(name)} is not a host of `hosts:`; use one of: "
                       f"{', '.join(remote) or 'none (add the ssh: host to hosts:)'}")
    if hosts[name].local:
        raise BadInput(f"{where}.host: {shown(name)} is this machine; use placement: host for it")
    host = Host(name, hosts[name])
    host.check_files()
    host.check()
    tool = TOOLS[neighbour.kind]
    needs = " && ".join(f"command -v {t} >/dev/null" for t in (tool, *(["taskset"] if neighbour.cpus else [])))
    if host.shell(needs, name=f"tools on {name}", timeout=30).returncode != 0:
        raise BadInput(f"{where}.host: {name} has no {tool}{' or taskset' if neighbour.cpus else ''} on its PATH; "
                       f"install it there (apt-get install {tool})")


def prepare_neighbours(campaign: Campaign, say: Callable[[str], None]) -> None:
    """Once per campaign, after every check: the containers' image, when a neighbour runs in Docker, and on the
    nodes of each variant whose neighbours run in pods (its backend imports it there)."""
    if any(n.placement == "docker" for v in campaign.variants for n in campaign.neighbours_of(v)):
        from layerbench.backends.docker.daemon import docker_client
        from layerbench.backends.docker.neighbours import ensure_neighbour_image

        ensure_neighbour_image(docker_client(), say)
    for variant in campaign.variants:
        if variant.pod_neighbours and any(n.placement == "kubernetes" for n in campaign.neighbours_of(variant)):
            importlib.import_module(variant.pod_neighbours).ensure_neighbour_image_on_nodes(variant, say)


def check_pod_neighbours(variant: VariantBase, pods: list[Neighbour]) -> None:
    """Pods beside the server need a server in a pod; its backend checks its cluster (answers, node, room)."""
    if not pods:
        return
    if variant.pod_neighbours is None:
        raise BadInput(f"variants.{variant.name}.neighbours.{pods[0].name}.placement: kubernetes puts a pod on the "
                       f"server pod's node, and the server of {variant.name} is not a pod (backend "
                       f"{variant.backend}); use placement: host or docker, or a kubernetes variant")
    importlib.import_module(variant.pod_neighbours).check_neighbour_pods(variant, pods)
