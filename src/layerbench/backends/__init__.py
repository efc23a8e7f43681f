"""Deployment models behind one interface (see base.py). `make_backend` picks one for a variant."""

from __future__ import annotations

import importlib

from layerbench.backends.base import Backend, Endpoint, ServerSpec
from layerbench.campaign import VariantBase

_MODULES = {
    "host": ("layerbench.backends.host", "HostBackend"),
    "external": ("layerbench.backends.external", "ExternalBackend"),
    "docker": ("layerbench.backends.docker", "DockerBackend"),
    "vm": ("layerbench.backends.vm", "VMBackend"),
    "kubernetes": ("layerbench.backends.kubernetes", "KubernetesBackend"),
}


def make_backend(variant: VariantBase) -> Backend:
    kind = getattr(variant, "backend")  # noqa: B009 - every concrete variant has it
    module_name, class_name = _MODULES[kind]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        from layerbench.errors import BadInput

        raise BadInput(f"variants.{variant.name}.backend: {kind!r} is not available in this build ({error})") from None
    backend: Backend = getattr(module, class_name)(variant)  # each class takes its own variant type
    return backend


__all__ = ["Backend", "Endpoint", "ServerSpec", "make_backend"]
