"""Deployment models behind one interface (see base.py). `make_backend` picks one for a variant."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from layerbench.backends.base import Backend, Endpoint, ServerSpec

if TYPE_CHECKING:
    from layerbench.campaign.models import VariantBase
    from layerbench.hosts.inventory import Hosts

_MODULES = {
    "host": ("layerbench.backends.host.local", "HostBackend"),
    "external": ("layerbench.backends.external.backend", "ExternalBackend"),
    "docker": ("layerbench.backends.docker.local", "DockerBackend"),
    "vm": ("layerbench.backends.vm.local", "VMBackend"),
    "kubernetes": ("layerbench.backends.kubernetes.backend", "KubernetesBackend"),
}


REMOTE_SERVER = {"host": ("layerbench.backends.host.remote", "RemoteHostBackend"),
                 "docker": ("layerbench.backends.docker.remote", "RemoteDockerBackend"),
                 "vm": ("layerbench.backends.vm.remote", "RemoteVMBackend")}


def make_backend(variant: VariantBase, hosts: Hosts | None = None) -> Backend:
    """The variant's backend; a variant whose server_host is an ssh: host of `hosts` gets the backend that
    runs its server there (placement.py refuses the backends that cannot)."""
    kind = getattr(variant, "backend")  # noqa: B009 - every concrete variant has it
    host = hosts[variant.server_host] if hosts is not None and variant.server_host else None
    if host is not None and not host.is_local and kind in REMOTE_SERVER:
        module_name, class_name = REMOTE_SERVER[kind]
        remote: Backend = getattr(importlib.import_module(module_name), class_name)(variant, host)
        return remote
    module_name, class_name = _MODULES[kind]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        from layerbench.errors import BadInput

        raise BadInput(f"variants.{variant.name}.backend: {kind!r} is not available in this build ({error})") from None
    backend: Backend = getattr(module, class_name)(variant)  # each class takes its own variant type
    return backend


__all__ = ["Backend", "Endpoint", "ServerSpec", "make_backend"]
