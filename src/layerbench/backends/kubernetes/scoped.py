"""A run's namespace, in either mode: a namespace of its own per run (created, then deleted with everything in
it: pod.remove_run_namespace), or, in namespace-scoped mode (variant `namespace:`), the one existing namespace
every run shares, where the run's objects are found by their `layerbench.label` label and deleted one by one,
their pods waited for, and the namespace itself left alone; that mode uses no cluster-scoped right
(access.needed_rights)."""

from __future__ import annotations

import time
from typing import Any

from layerbench.backends.kubernetes import cluster, manifests, pod
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.errors import RunFailed
from layerbench.hosts.critical import signals_deferred

# what a run creates in its namespace, deleted by label in namespace-scoped mode: (API class, plural in its method)
RUN_KINDS = (("AppsV1Api", "stateful_set"), ("BatchV1Api", "job"), ("CoreV1Api", "service"),
             ("CoreV1Api", "config_map"), ("CoreV1Api", "secret"), ("CoreV1Api", "persistent_volume_claim"),
             ("CoreV1Api", "pod"))


def create_run_namespace(core: Any, variant: KubernetesVariant, ns: str, labels: dict[str, str]) -> None:
    """A namespace of the run's own; nothing in namespace-scoped mode (the namespace exists). Either way, this
    harness's Lease there (heartbeat.py), so that a `clean` on another machine can tell it lives."""
    from layerbench.backends.kubernetes import heartbeat

    if variant.namespace is None:
        with signals_deferred():  # no Ctrl-C between the request and the API server's creation
            core.create_namespace(manifests.namespace(ns, labels))
    heartbeat.beat(core.api_client, ns, labels, own_namespace=variant.namespace is None)


def remove_run(api: Any, core: Any, variant: KubernetesVariant, ns: str, label: str) -> None:
    """The run's namespace with all in it, or in namespace-scoped mode the run's objects in the shared one."""
    if variant.namespace is None:
        pod.remove_run_namespace(core, ns, data_on_pvc=variant.claims_volumes)
    else:
        remove_labelled(api, ns, f"layerbench.label={manifests.dns_name(label)}")


def remove_labelled(api: Any, ns: str, selector: str, timeout: float = pod.DELETE_TIMEOUT) -> None:
    """Every object of RUN_KINDS with the label `selector` in `ns` deleted (a Job's pods and a StatefulSet's with
    it: background propagation), then its pods waited for until they are gone (their CPUs, memory and volumes
    free for the next run, whose objects have the same names)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    for api_class, kind in RUN_KINDS:
        group = getattr(client, api_class)(api)
        found = getattr(group, f"list_namespaced_{kind}")(ns, label_selector=selector,
                                                          _request_timeout=cluster.TIMEOUT).items
        for item in found:
            try:
                getattr(group, f"delete_namespaced_{kind}")(item.metadata.name, ns, propagation_policy="Background",
                                                            _request_timeout=cluster.TIMEOUT)
            except ApiException as error:
                if error.status != 404:
                    raise
    core, deadline = client.CoreV1Api(api), time.monotonic() + timeout
    while core.list_namespaced_pod(ns, label_selector=selector, _request_timeout=cluster.TIMEOUT).items:
        if time.monotonic() > deadline:
            raise RunFailed(f"the run's pods in namespace {ns} still exist {timeout:.0f} s after their deletion; "
                            f"see `kubectl get pods -n {ns} -l {selector}`")
        time.sleep(0.2)
