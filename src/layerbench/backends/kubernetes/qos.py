"""The kubelet's QoS rule (kubernetes.io/docs/concepts/workloads/pods/pod-qos): the requests and limits that make
a pod the class a variant asks for, in quantities (vocabulary/sizes.py). Pure, and a leaf: the variant model
checks itself with it at validate time, the manifests use it to build the pod."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from layerbench.errors import BadInput, shown
from layerbench.vocabulary.sizes import quantity

if TYPE_CHECKING:
    from layerbench.backends.kubernetes.variant import KubernetesVariant

GUARANTEED_DEFAULT = {"cpu": "1", "memory": "2Gi"}  # memory: at least; see resources_for
BURSTABLE_DEFAULT = {"cpu": "500m", "memory": "1Gi"}


# The least of each resource the kubelet applies: a CPU limit below 1m rounds to 0 millicores, memory below a byte
# to 0 bytes, and a limit of 0 is no limit at all
LEAST = {"cpu": (Decimal("0.001"), "1m", "millicores"), "memory": (Decimal(1), "1", "bytes")}


def _check_quantities(values: dict[str, str], where: str, limits: bool = False) -> None:
    for key, value in values.items():
        if key not in ("cpu", "memory", "ephemeral-storage") and not key.startswith("hugepages-"):
            raise BadInput(f"{where}.{key}: not a resource layerbench sets; use cpu or memory")
        try:
            amount = quantity(value)
        except ValueError as error:
            raise BadInput(f"{where}.{key}: {error}") from None
        least, text, unit = LEAST.get(key, (Decimal(1), "1", "units"))
        if limits and amount < least:
            raise BadInput(f"{where}.{key}: {shown(value)} rounds to 0 {unit}, and 0 means unlimited to Kubernetes; "
                           f"write at least {text}, or remove the limit")


def resources_for(variant: KubernetesVariant) -> dict[str, dict[str, str]]:
    """Requests and limits that make the pod the QoS class the variant asks for (explicit values win)."""
    where = f"variants.{variant.name}"
    _check_quantities(variant.requests, f"{where}.requests", limits=variant.qos == "guaranteed")  # limits too
    _check_quantities(variant.limits, f"{where}.limits", limits=True)
    if variant.qos == "besteffort":
        if variant.requests or variant.limits:
            raise BadInput(f"{where}.qos: a BestEffort pod has no requests or limits; remove them or use "
                           "qos: burstable")
        return {}
    if variant.qos == "guaranteed":  # memory unset: the buffer pool + overhead (the variant's derived_memory)
        limits = {**GUARANTEED_DEFAULT, "memory": variant.derived_memory(), **variant.requests, **variant.limits}
        for key, value in variant.requests.items():
            if quantity(value) != quantity(limits[key]):
                raise BadInput(f"{where}.requests.{key}: {value} differs from the limit {limits[key]}; Guaranteed "
                               "needs requests equal to limits (set one of them, or use qos: burstable)")
        return {"requests": dict(limits), "limits": limits}
    requests = {**BURSTABLE_DEFAULT, **variant.requests}
    limits = dict(variant.limits)
    for key, value in limits.items():
        if key in requests and quantity(requests[key]) > quantity(value):
            requests[key] = value  # the API server refuses requests above limits
    if all(k in limits and quantity(limits[k]) == quantity(requests[k]) for k in ("cpu", "memory")):
        raise BadInput(f"{where}.limits: equal to the requests for cpu and memory, which makes the pod Guaranteed; "
                       "raise a limit or use qos: guaranteed")
    return {"requests": requests, **({"limits": limits} if limits else {})}


def exclusive_cpus(resources: dict[str, dict[str, str]]) -> bool:
    """Whether the static CPU manager would give this pod whole cores: Guaranteed with an integer CPU count."""
    cpu = resources.get("limits", {}).get("cpu")
    return cpu is not None and resources.get("requests", {}).get("cpu") == cpu and quantity(cpu) % 1 == 0
