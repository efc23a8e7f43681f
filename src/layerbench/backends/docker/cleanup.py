"""The Docker objects a run leaves when its harness dies: containers, volumes and networks labelled layerbench=1,
removed by `layerbench clean` when their harness is gone (or all of them with --all)."""

from __future__ import annotations

import os

from layerbench.backends.base import Leftovers
from layerbench.hosts.procs import pid_alive


def clean_docker(include_live: bool = False) -> list[str]:
    """Remove containers, volumes and networks labelled layerbench=1 whose harness is gone (or all)."""
    try:
        import docker

        client = docker.from_env(timeout=30)
        client.ping()
    except Exception:  # no daemon: nothing of ours can be running in it
        return []
    done: list[str] = []
    for kind in ("containers", "volumes", "networks"):
        collection = getattr(client, kind)
        items = collection.list(all=True, filters={"label": "layerbench=1"}) if kind == "containers" else \
            collection.list(filters={"label": "layerbench=1"})
        for item in items:
            harness = int((item.attrs.get("Labels") or item.attrs.get("Config", {}).get("Labels") or {}).get(
                "layerbench.harness", "0") or 0)
            if harness and pid_alive(harness) and harness != os.getpid() and not include_live:
                continue
            item.remove(force=True) if kind == "containers" else item.remove()
            done.append(f"removed {kind[:-1]} {item.name}")
    return done


LEFTOVERS = Leftovers("Docker object", clean=clean_docker)
