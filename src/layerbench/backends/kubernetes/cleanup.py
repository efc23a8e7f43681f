"""The Kubernetes namespaces a run leaves when its harness dies (labelled layerbench=1, made from this machine):
listed by `layerbench doctor`, deleted with everything in them by `layerbench clean`."""

from __future__ import annotations

import os
from pathlib import Path

from layerbench.backends.base import Leftovers
from layerbench.backends.kubernetes.cluster import local_kubeconfig
from layerbench.backends.kubernetes.manifests import host_label
from layerbench.backends.kubernetes.pod import delete_namespace
from layerbench.hosts.procs import pid_alive


def kubernetes_namespaces(include_live: bool = False) -> list[str]:
    """Namespaces labelled layerbench=1 made from this machine whose harness is gone (or all of this machine's),
    on the cluster of $KUBECONFIG, ~/.kube/config or the local one; [] when there is no cluster to ask."""
    core = _kubernetes_core()
    if core is None:
        return []
    found = []
    for ns in core.list_namespace(label_selector="layerbench=1", _request_timeout=10).items:
        meta = ns.metadata.labels or {}
        if meta.get("layerbench.host") != host_label() or ns.status.phase == "Terminating":
            continue
        harness = int(meta.get("layerbench.harness", "0") or 0)
        if harness and pid_alive(harness) and harness != os.getpid() and not include_live:
            continue
        found.append(ns.metadata.name)
    return found


def clean_kubernetes(include_live: bool = False) -> list[str]:
    """Delete the namespaces `kubernetes_namespaces` finds (and with them everything a run created)."""
    names = kubernetes_namespaces(include_live)
    if not names:
        return []
    core = _kubernetes_core()
    for name in names:
        delete_namespace(core, name)
    return [f"deleted namespace {name}" for name in names]


def _kubernetes_core() -> object | None:
    try:
        from kubernetes import client, config

        paths = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(":") if p]
        paths += [Path.home() / ".kube" / "config", local_kubeconfig()]
        path = next((p for p in paths if p.is_file()), None)
        if path is None:
            return None
        core = client.CoreV1Api(config.new_client_from_config(config_file=str(path)))
        core.list_namespace(limit=1, _request_timeout=5)
        return core
    except Exception:  # no cluster answers: nothing of ours can be running in it
        return None


LEFTOVERS = Leftovers("Kubernetes namespace", clean=clean_kubernetes, find=kubernetes_namespaces)
