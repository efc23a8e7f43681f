"""The Docker objects a run leaves when its harness dies: containers, volumes and networks labelled layerbench=1,
removed by `layerbench clean` when their harness is gone (or all of them with --all): on this machine's daemon,
and (`clean --inventory/--campaign`) on each ssh: host's daemon, reached as the backend reaches it.

Whether the harness is gone is read from the object's `layerbench.lease` label (hosts/lease.py), probed on the
daemon's machine; an object without one (made before leases) by its `layerbench.harness` PID, on this machine's
daemon only (on another machine that PID means nothing: it is kept)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from layerbench.backends.base import Leftovers
from layerbench.errors import LayerbenchError
from layerbench.hosts.lease import LEASE_LABEL, State, may_sweep, own_leases, parse_probe, probe_local, probe_script
from layerbench.hosts.procs import pid_alive

KINDS = ("containers", "volumes", "networks")


def item_labels(item: Any) -> dict[str, str]:
    return item.attrs.get("Labels") or item.attrs.get("Config", {}).get("Labels") or {}


def ours(labels: Mapping[str, str]) -> bool:
    return labels.get("layerbench") == "1"


def pid_gone(labels: Mapping[str, str], include_live: bool) -> bool:
    """The rule of an object made before leases, on this machine's daemon: its harness PID is gone (or is us)."""
    text = labels.get("layerbench.harness", "0") or "0"
    harness = int(text) if text.isdigit() else 0
    return include_live or not harness or not pid_alive(harness) or harness == os.getpid()


def sweep_daemon(client: Any, probe: Callable[[set[str]], dict[str, State]], include_live: bool, *,
                 local: bool, where: str = "") -> list[str]:
    """Remove the daemon's layerbench=1 objects whose harness is gone, by lease (`probe` asks the daemon's
    machine) or, on this machine's daemon (`local`), by the PID of an object without a lease."""
    found = {kind: (getattr(client, kind).list(all=True, filters={"label": "layerbench=1"}) if kind == "containers"
                    else getattr(client, kind).list(filters={"label": "layerbench=1"})) for kind in KINDS}
    leases = {item_labels(i).get(LEASE_LABEL) for items in found.values() for i in items} - {None}
    states = probe({lease for lease in leases if lease})
    done: list[str] = []
    for kind, items in found.items():
        for item in items:
            labels = item_labels(item)
            lease = labels.get(LEASE_LABEL)
            gone = may_sweep(lease, states, cleaner=own_leases(), include_live=include_live) if lease else \
                local and pid_gone(labels, include_live)
            if gone:
                done.append(remove(kind, item, where))
            elif lease and states.get(lease) is State.LIVE and not include_live:
                done.append(f"kept {kind[:-1]} {item.name}{where}: its campaign is running")
    return done


def remove(kind: str, item: Any, where: str) -> str:
    """Remove one object; what happened, in one line (the daemon may refuse: one already being removed)."""
    try:
        item.remove(force=True) if kind == "containers" else item.remove()
    except Exception as error:  # the SDK's APIError and NotFound, a connection that broke
        return f"could not remove {kind[:-1]} {item.name}{where}: {type(error).__name__}; run `layerbench clean` again"
    return f"removed {kind[:-1]} {item.name}{where}"


def clean_docker(include_live: bool = False) -> list[str]:
    """Remove containers, volumes and networks labelled layerbench=1 on this machine's daemon whose harness is gone
    (or all)."""
    try:
        import docker

        client = docker.from_env(timeout=30)
        client.ping()
    except Exception:  # no daemon: nothing of ours can be running in it
        return []
    return sweep_daemon(client, probe_local, include_live, local=True)


def clean_docker_on(host: Any, include_live: bool = False) -> list[str]:
    """The same on an ssh: host's daemon (through the SDK's ssh://, as backends/docker/remote.py reaches it), the
    leases probed on that host; a host without a daemon that answers is said so."""
    if host.is_local:
        return []
    if host.entry.identity_file or host.entry.known_hosts or host.entry.port:
        return [f"host {host.name}: its Docker daemon is reached only through an ~/.ssh/config alias (this entry sets "
                "identity_file, known_hosts or port); swept through the alias's entry, if listed"]
    from layerbench.backends.docker.remote import remote_docker_client

    try:
        client = remote_docker_client(host)
    except LayerbenchError:
        return [f"host {host.name}: no Docker daemon answers through ssh://{host.entry.ssh}; nothing swept there"]

    def probe(leases: set[str]) -> dict[str, State]:
        return parse_probe(host.shell(probe_script(leases), name=f"leases on {host.name}", timeout=60).output)

    return sweep_daemon(client, probe, include_live, local=False, where=f" on host {host.name}")


LEFTOVERS = Leftovers("Docker object", clean=clean_docker, clean_host=clean_docker_on)
