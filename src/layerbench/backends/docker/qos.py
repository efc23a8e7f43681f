"""Docker resource options for a variant, including presets that reproduce what the kubelet sets on cgroups for a
pod of each Kubernetes QoS class (cgroupfs driver, CFS quota enabled):

- BestEffort: cpu.shares = 2, no CFS quota, no memory limit.
- Burstable: cpu.shares = 1024 x CPU request, CFS quota = CPU limit, memory limit = memory limit
  (requests below limits; here the request is half the limit).
- Guaranteed: requests = limits: cpu.shares = 1024 x CPUs, CFS quota = CPUs, memory limit.
- Guaranteed with the static CPU manager policy (`guaranteed-pinned`): Guaranteed with a cpuset of whole,
  exclusive CPUs and no CFS quota: since Kubernetes 1.33 the kubelet drops the quota of a container the static
  CPU manager gives exclusive cores (feature gate DisableCPUQuotaWithExclusiveCPUs, on by default; the local
  cluster of scripts/k8s-local runs 1.33).
The size of the "pod" comes from `resources.cpus` (default 1) and `resources.memory` (default: the server's buffer
pool + 512 MiB, at least 2g: the variant's derived_memory).
"""

from __future__ import annotations

import os
from typing import Any

from layerbench.backends.docker.variant import DockerVariant
from layerbench.errors import BadInput
from layerbench.hosts.machine import check_cpus
from layerbench.vocabulary.cpus import whole_cpus_problem

DEFAULT_CPUS = 1.0
DEFAULT_MEMORY = "2g"  # a neighbour container's preset (it has no buffer pool); a variant's: derived_memory()


def first_cpus(count: int) -> str:
    available = sorted(os.sched_getaffinity(0))
    return ",".join(str(c) for c in available[:count])


def qos_options(qos: str, cpus: float, memory: str, cpuset: str | None) -> dict[str, Any]:
    if qos == "besteffort":
        return {"cpu_shares": 2}
    if qos == "burstable":
        return {"cpu_shares": max(2, int(1024 * cpus / 2)), "nano_cpus": int(cpus * 1e9), "mem_limit": memory}
    guaranteed = {"cpu_shares": int(1024 * cpus), "nano_cpus": int(cpus * 1e9), "mem_limit": memory}
    if qos == "guaranteed":
        return guaranteed
    problem = whole_cpus_problem(qos, cpus)
    if problem is not None:
        raise BadInput(problem)
    pinned = {key: value for key, value in guaranteed.items() if key != "nano_cpus"}  # no quota: see above
    return {**pinned, "cpuset_cpus": cpuset or first_cpus(int(cpus))}


def resource_options(variant: DockerVariant) -> dict[str, Any]:
    """docker-py create() keyword arguments for the variant's limits (explicit resources or a QoS preset)."""
    r = variant.resources
    cpuset = r.cpuset or variant.cpus
    if variant.qos:
        return qos_options(variant.qos, r.cpus or DEFAULT_CPUS, r.memory or variant.derived_memory(), cpuset)
    options: dict[str, Any] = {}
    if r.cpus:
        options["nano_cpus"] = int(r.cpus * 1e9)
    if cpuset:
        options["cpuset_cpus"] = cpuset
    if r.cpu_shares:
        options["cpu_shares"] = r.cpu_shares
    if r.memory:
        options["mem_limit"] = r.memory
    return options


def check_resources(variant: DockerVariant) -> None:
    where = f"variants.{variant.name}.resources"
    count = len(os.sched_getaffinity(0))
    if variant.resources.cpus and variant.resources.cpus > count:
        raise BadInput(f"{where}.cpus: {variant.resources.cpus:g} is more than the {count} CPUs of this machine; "
                       f"use at most {count}")
    if variant.resources.cpuset:
        check_cpus(variant.resources.cpuset, f"{where}.cpuset")
    if variant.qos == "guaranteed-pinned" and (variant.resources.cpus or DEFAULT_CPUS) > count:
        raise BadInput(f"{where}.cpus: guaranteed-pinned needs whole CPUs this machine has ({count})")
