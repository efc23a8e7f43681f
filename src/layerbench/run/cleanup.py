"""The `clean` command's work: remove what the owner records (owners.py) name, and what each backend leaves
outside them (its own cleanup module: Docker objects, Kubernetes namespaces, VM network devices), whose harness
is gone (or all of them), and nothing else; and, for `clean --inventory/--campaign`, the same on every ssh: host
those files name: its Docker daemon by label, then the folders and processes of its own owner records
(hosts/host_owners.py), each only when its harness's lease (hosts/lease.py) is no longer held."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field, ValidationError

from layerbench.backends.registry import leftover_kinds
from layerbench.bounded_read import INVENTORY_FILE, read_yaml_file
from layerbench.campaign.models import describe_validation_error, load_campaign
from layerbench.errors import BadInput, shown
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.hosts.owners import Owned, processes_with
from layerbench.hosts.reclaim import clean_owned, clean_recorded, leftovers, stop_process, sweep_host
from layerbench.vocabulary.base import NAME_RE, Strict


class Inventory(Strict):
    """An inventory file: the `hosts:` of a campaign, alone."""

    hosts: dict[Annotated[str, Field(pattern=NAME_RE)], HostEntry]


def clean_backends(include_live: bool = False, after_processes: bool = False) -> list[str]:
    """What the backends leave outside the owner records (containers, namespaces, network devices): those to
    remove before the recorded processes are stopped, or (after_processes) those only free once they are."""
    return [line for leftovers in leftover_kinds() if leftovers.after_processes == after_processes
            for line in leftovers.clean(include_live)]


def backend_leftovers() -> list[str]:
    """`layerbench doctor`'s lines for what crashed campaigns left in the backends (those a backend can list)."""
    return [f"leftover {leftovers.what} of a crashed campaign: {name}; run `layerbench clean`"
            for leftovers in leftover_kinds() if leftovers.find is not None for name in leftovers.find(False)]


def load_inventory(path: str | os.PathLike[str]) -> dict[str, HostEntry]:
    """The hosts of an inventory file (read within bounds), each checked as a campaign's are (one-line BadInput)."""
    name = shown(str(path), 100, quote=False, keep_end=True)
    data = read_yaml_file(path, INVENTORY_FILE, "--inventory")
    if not isinstance(data, dict):
        raise BadInput(f"--inventory {name}: the file holds no mapping; write hosts: {{name: {{ssh: user@host}}}}")
    try:
        return Inventory.model_validate(data).hosts
    except ValidationError as error:
        raise BadInput(f"--inventory {name}: {describe_validation_error(error, data)}") from None


@dataclass(frozen=True)
class Places:
    """What `clean` sweeps besides this machine: ssh: hosts, and a campaign's variants (their clusters)."""

    hosts: list[Host] = field(default_factory=list)
    variants: list[Any] = field(default_factory=list)


def places(inventory: str | None, campaign: str | None) -> Places:
    """The ssh: hosts of the inventory file and of the campaign file, each entry once, its identity_file and
    known_hosts checked first (BadInput naming the field), and the campaign's variants."""
    entries = dict(load_inventory(inventory)) if inventory else {}
    loaded = load_campaign(campaign) if campaign else None
    if loaded is not None:
        entries |= {name: entry for name, entry in (loaded.hosts or {}).items() if entry not in entries.values()}
    hosts = [Host(name, entry) for name, entry in sorted(entries.items()) if not entry.local]
    for host in hosts:
        host.check_files()
    return Places(hosts, list(loaded.variants) if loaded is not None else [])


def sweep_places(where: Places, include_live: bool, say: Callable[[str], None]) -> list[str]:
    """Each host's Docker daemon (by label), then its owner records; then each variant's own place (a cluster's
    context); what was removed, place by place."""
    done: list[str] = []
    for host in where.hosts:
        say(f"sweeping host {host.name} ({host.target})")
        for kind in leftover_kinds():
            if kind.clean_host is not None:
                done += kind.clean_host(host, include_live)
        done += sweep_host(host, include_live)
        host.close()
    for variant in where.variants:
        for kind in leftover_kinds():
            if kind.clean_variant is not None:
                done += kind.clean_variant(variant, include_live)
    return done


__all__ = ["Owned", "backend_leftovers", "clean_backends", "clean_owned", "clean_recorded", "leftovers",
           "processes_with", "stop_process"]
