"""The one list of backends: each backend's variant model, in the order the campaign docs and errors name them.
Adding a backend is a folder backends/<name>/ (its variant.py subclasses campaign.variant.VariantBase, its
backend classes subclass base.BackendBase) and its variant model's import and entry in VARIANT_TYPES here."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Annotated, Union

from pydantic import Field

from layerbench.backends.docker.variant import DockerVariant
from layerbench.backends.external.variant import ExternalVariant
from layerbench.backends.host.variant import HostVariant
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.backends.variant_base import VariantBase
from layerbench.backends.vm.variant import VMVariant

if TYPE_CHECKING:
    from layerbench.backends.base import ContainerEngine, Leftovers

VARIANT_TYPES: tuple[type[VariantBase], ...] = (HostVariant, ExternalVariant, DockerVariant, VMVariant,
                                                KubernetesVariant)
# A campaign's variant: the model its `backend:` names.
VARIANT = Annotated[Union[VARIANT_TYPES], Field(discriminator="backend")]  # noqa: UP007 - a union of a tuple


def kind_of(variant_type: type[VariantBase]) -> str:
    """The `backend:` word of a variant model (its discriminator's one value)."""
    return str(variant_type.model_fields["backend"].annotation.__args__[0])  # type: ignore[union-attr]


KINDS = tuple(kind_of(t) for t in VARIANT_TYPES)
BY_KIND = dict(zip(KINDS, VARIANT_TYPES, strict=True))
REMOTE_SERVER_KINDS = tuple(k for k, t in BY_KIND.items() if t.remote_backend is not None)  # on an ssh: host
REMOTE_CLIENT_KINDS = tuple(k for k, t in BY_KIND.items() if t.remote_client)  # sysbench on another host


def leftover_kinds() -> list[Leftovers]:
    """Each backend's Leftovers (its variant model names the module), those removed before the recorded processes
    first; imported only here, when `clean` or `doctor` asks (the Docker and Kubernetes clients are not small)."""
    found = [importlib.import_module(t.leftovers).LEFTOVERS for t in VARIANT_TYPES if t.leftovers]
    return sorted(found, key=lambda leftovers: leftovers.after_processes)


def container_engine(kind: str) -> ContainerEngine:
    """The container engine on this machine of the backend `kind` (its variant model names the module): for
    neighbours with `placement: <kind>` and `layerbench image build`; imported only when asked."""
    module = BY_KIND[kind].container_engine
    if module is None:
        raise ValueError(f"backend {kind} runs no containers on this machine")
    engine: ContainerEngine = importlib.import_module(module).ENGINE
    return engine
