"""Before anything starts (preflight, so `validate` says it too): a campaign's neighbours against this machine
and its inventory. Each problem is one BadInput line naming the field, the value and the fix: more workers than
this machine's CPUs x WORKERS_PER_CPU, a CPU list naming a CPU that is not here, a disk neighbour whose file does
not fit in its filesystem's free space, a network neighbour sent to a host the inventory does not have, or to one
reached over SSH (not yet), and a name given twice to one variant's neighbours."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from layerbench.campaign.models import Campaign, VariantBase
from layerbench.errors import BadInput, shown
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


def check_neighbour(campaign: Campaign, variant: VariantBase, neighbour: Neighbour, where: str) -> None:
    cpus = len(os.sched_getaffinity(0))
    if neighbour.workers and neighbour.workers > cpus * WORKERS_PER_CPU:
        raise BadInput(f"{where}.workers: {neighbour.workers} workers on a machine of {cpus} CPUs; use at most "
                       f"{cpus * WORKERS_PER_CPU} ({WORKERS_PER_CPU} per CPU)")
    check_cpus(neighbour.cpus, f"{where}.cpus")
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
