"""The one list of backends: each backend's variant model, in the order the campaign docs and errors name them.
Adding a backend is a folder backends/<name>/ (its variant.py subclasses campaign.variant.VariantBase, its
backend classes subclass base.BackendBase) and one line here."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from layerbench.backends.docker.variant import DockerVariant
from layerbench.backends.external.variant import ExternalVariant
from layerbench.backends.host.variant import HostVariant
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.backends.vm.variant import VMVariant
from layerbench.campaign.variant import VariantBase

VARIANT_TYPES: tuple[type[VariantBase], ...] = (HostVariant, ExternalVariant, DockerVariant, VMVariant,
                                                KubernetesVariant)
# A campaign's variant: the model its `backend:` names.
VARIANT = Annotated[HostVariant | ExternalVariant | DockerVariant | VMVariant | KubernetesVariant,
                    Field(discriminator="backend")]


def kind_of(variant_type: type[VariantBase]) -> str:
    """The `backend:` word of a variant model (its discriminator's one value)."""
    return str(variant_type.model_fields["backend"].annotation.__args__[0])  # type: ignore[union-attr]


KINDS = tuple(kind_of(t) for t in VARIANT_TYPES)
BY_KIND = dict(zip(KINDS, VARIANT_TYPES, strict=True))
REMOTE_SERVER_KINDS = tuple(k for k, t in BY_KIND.items() if t.remote_backend is not None)  # on an ssh: host
REMOTE_CLIENT_KINDS = tuple(k for k, t in BY_KIND.items() if t.remote_client)  # sysbench on another host
