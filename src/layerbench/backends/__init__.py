"""Deployment models behind one interface (see base.py), one package per backend (registry.py lists them).
`make_backend` picks the one for a variant: the class its variant model names."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from layerbench.backends.base import Backend, Endpoint, ServerSpec

if TYPE_CHECKING:
    from layerbench.backends.variant_base import VariantBase
    from layerbench.hosts.inventory import Hosts


def backend_class(location: str) -> type:
    """The class a variant model names as "module:Class" (imported only when a variant of it runs)."""
    module_name, _, class_name = location.partition(":")
    cls: type = getattr(importlib.import_module(module_name), class_name)
    return cls


def make_backend(variant: VariantBase, hosts: Hosts | None = None) -> Backend:
    """The variant's backend; a variant whose server_host is an ssh: host of `hosts` gets the backend that
    runs its server there (placement.py refuses the backends that cannot)."""
    host = hosts[variant.server_host] if hosts is not None and variant.server_host else None
    location = variant.remote_backend_for()
    if host is not None and not host.is_local and location is not None:
        remote: Backend = backend_class(location)(variant, host)
        return remote
    try:
        cls = backend_class(variant.local_backend)
    except ModuleNotFoundError as error:
        from layerbench.errors import BadInput

        raise BadInput(f"variants.{variant.name}.backend: {variant.backend!r} is not available in this build "
                       f"({error})") from None
    backend: Backend = cls(variant)  # each class takes its own variant type
    return backend


__all__ = ["Backend", "Endpoint", "ServerSpec", "make_backend"]
