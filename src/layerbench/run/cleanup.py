"""The `clean` command's work: remove what the owner records (owners.py) name, and what each backend leaves
outside them (its own cleanup module: Docker objects, Kubernetes namespaces, VM network devices), whose harness
is gone (or all of them), and nothing else."""

from __future__ import annotations

from layerbench.backends.registry import leftover_kinds
from layerbench.hosts.owners import Owned, processes_with
from layerbench.hosts.reclaim import clean_owned, clean_recorded, leftovers, stop_process


def clean_backends(include_live: bool = False, after_processes: bool = False) -> list[str]:
    """What the backends leave outside the owner records (containers, namespaces, network devices): those to
    remove before the recorded processes are stopped, or (after_processes) those only free once they are."""
    return [line for leftovers in leftover_kinds() if leftovers.after_processes == after_processes
            for line in leftovers.clean(include_live)]


def backend_leftovers() -> list[str]:
    """`layerbench doctor`'s lines for what crashed campaigns left in the backends (those a backend can list)."""
    return [f"leftover {leftovers.what} of a crashed campaign: {name}; run `layerbench clean`"
            for leftovers in leftover_kinds() if leftovers.find is not None for name in leftovers.find(False)]


__all__ = ["Owned", "backend_leftovers", "clean_backends", "clean_owned", "clean_recorded", "leftovers",
           "processes_with", "stop_process"]
