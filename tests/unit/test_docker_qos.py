"""The Docker QoS presets set what the kubelet (Kubernetes 1.33, cgroupfs) sets for a pod of each class."""

from __future__ import annotations

import os

from layerbench.backends.docker.qos import resource_options
from layerbench.backends.docker.variant import DockerVariant


def options(qos: str, **resources: object) -> dict[str, object]:
    return resource_options(DockerVariant(name="box", backend="docker", qos=qos, resources=resources))


def test_guaranteed_has_a_cfs_quota_of_its_cpus() -> None:
    assert options("guaranteed") == {"cpu_shares": 1024, "nano_cpus": 1_000_000_000, "mem_limit": "2g"}


def test_guaranteed_pinned_has_exclusive_cpus_and_no_quota() -> None:
    """Kubernetes 1.33 (DisableCPUQuotaWithExclusiveCPUs, on by default) drops the quota of exclusive cores."""
    first = str(min(os.sched_getaffinity(0)))
    assert options("guaranteed-pinned") == {"cpu_shares": 1024, "mem_limit": "2g", "cpuset_cpus": first}


def test_burstable_and_besteffort() -> None:
    assert options("burstable", memory="1g") == {"cpu_shares": 512, "nano_cpus": 1_000_000_000, "mem_limit": "1g"}
    assert options("besteffort") == {"cpu_shares": 2}


class _Dying:
    """A container that dockerd still reports running for a few reloads after its OOM kill."""

    def __init__(self, running_reloads: int) -> None:
        self.left, self.attrs = running_reloads, {"State": {"Running": True, "OOMKilled": False}}

    def reload(self) -> None:
        self.left -= 1
        if self.left < 0:
            self.attrs = {"State": {"Running": False, "OOMKilled": True, "ExitCode": 137}}


def test_an_oom_kill_dockerd_has_not_seen_yet_is_still_named() -> None:
    from layerbench.backends.docker.local import container_exit_cause

    cause = container_exit_cause(_Dying(3), "64m", settle=5)
    assert cause is not None and "OOM-killed" in cause and "64m" in cause
    assert container_exit_cause(_Dying(10**6), "64m", settle=0.3) is None  # still running: no cause invented
