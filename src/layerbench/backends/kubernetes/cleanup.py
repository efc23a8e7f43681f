"""The Kubernetes namespaces a run leaves when its harness dies (labelled layerbench=1): listed by `layerbench
doctor`, deleted with everything in them by `layerbench clean`. Made from this machine, its harness's PID says
whether it lives; made from another (a CI runner that was killed), its harness's Lease in the namespace says it
(heartbeat.py)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layerbench.backends.base import Leftovers
from layerbench.backends.kubernetes.cluster import kubeconfig_client, local_kubeconfig
from layerbench.backends.kubernetes.manifests import host_label
from layerbench.backends.kubernetes.pod import delete_namespace
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.errors import LayerbenchError
from layerbench.hosts.procs import pid_alive


def kubernetes_namespaces(include_live: bool = False, core: Any = None, owners: Owners | None = None) -> list[str]:
    """Namespaces labelled layerbench=1 whose harness is gone (with include_live also this machine's live ones),
    on the cluster of `core`, else of $KUBECONFIG, ~/.kube/config or the local one; [] when there is no cluster.
    `owners` keeps what it left alone for another machine's live harness."""
    core = core or _kubernetes_core()
    if core is None:
        return []
    found, owners = [], owners or Owners(core.api_client)
    for ns in core.list_namespace(label_selector="layerbench=1", _request_timeout=10).items:
        meta = ns.metadata.labels or {}
        if ns.status.phase != "Terminating" and ours(meta, include_live, owners.gone_from(
                ns.metadata.name, ns.metadata.creation_timestamp)):
            found.append(ns.metadata.name)
    return found


def ours(meta: dict[str, str], include_live: bool, elsewhere: Callable[[dict[str, str]], bool] | None = None) -> bool:
    """Made from this machine by a harness that is gone (or by any of this machine's with include_live); made from
    another machine, when `elsewhere` (its harness's heartbeat) says that harness is gone. include_live never
    reaches another machine's live campaign."""
    if meta.get("layerbench.host") != host_label():
        return elsewhere is not None and elsewhere(meta)
    harness = int(meta.get("layerbench.harness", "0") or 0)
    return include_live or not harness or not pid_alive(harness) or harness == os.getpid()


class Owners:
    """Whether another machine's harness is gone, read from its Lease (heartbeat.owner_gone) at the API server's
    time, read once per `clean`."""

    def __init__(self, api: Any) -> None:
        self.api, self.now = api, None
        self.kept: list[str] = []  # what it left alone, and why: clean says so

    def gone_from(self, ns: str, created: Any) -> Callable[[dict[str, str]], bool]:
        """For an object in (or of) namespace `ns` made at `created`: its owner's Lease there decides; an object
        without the owner label (made before the heartbeat) is never another machine's to remove."""
        from layerbench.backends.kubernetes import heartbeat

        def gone(meta: dict[str, str]) -> bool:
            token = meta.get(heartbeat.OWNER_LABEL)
            if not token:
                return False
            if self.now is None:
                self.now = heartbeat.server_now(self.api)
            found, age = heartbeat.owner_gone(self.api, ns, token, created, self.now)
            if not found and age is not None:
                self.kept.append(f"left {ns} alone: its harness on {meta.get('layerbench.host', '?')} renewed its "
                                 f"heartbeat {age:.0f} s ago (a killed one's goes {heartbeat.STALE:.0f} s after "
                                 "its last renewal: clean again then)")
            return found
        return gone


def clean_kubernetes(include_live: bool = False, core: Any = None, where: str = "") -> list[str]:
    """Delete the namespaces `kubernetes_namespaces` finds (and with them everything a run created, a seed's
    VolumeSnapshot too), then the runs' pre-provisioned VolumeSnapshotContents (cluster-scoped, so outside them);
    on the cluster of `core` (`where` says which), else the default one."""
    core = core or _kubernetes_core()
    if core is None:
        return []
    owners = Owners(core.api_client)
    names = kubernetes_namespaces(include_live, core, owners)
    for name in names:
        delete_namespace(core, name)
    return [f"deleted namespace {name}{where}" for name in names] + \
        [f"{line}{where}" for line in clean_snapshot_contents(core, include_live)] + \
        [f"{line}{where}" for line in owners.kept]


def clean_kubernetes_variant(variant: Any, include_live: bool = False) -> list[str]:
    """The same on the cluster of a campaign's kubernetes variant: its kubeconfig and context (`clean --campaign`),
    not only the default one; a cluster that does not answer is said so."""
    if not isinstance(variant, KubernetesVariant):
        return []
    from kubernetes import client

    from layerbench.backends.kubernetes.cluster import api_client

    try:
        core = client.CoreV1Api(api_client(variant))
    except LayerbenchError as error:
        return [f"variant {variant.name}: {error}; nothing swept there"]
    where = f" (context of variant {variant.name}: {variant.context or 'current'})"
    if variant.namespace is not None:  # namespace-scoped mode: its one namespace, read with its rights only
        return [f"{line}{where}" for line in clean_scoped_namespace(core.api_client, variant.namespace, include_live)]
    return clean_kubernetes(include_live, core, where)


def clean_scoped_namespace(api: Any, ns: str, include_live: bool) -> list[str]:
    """Namespace-scoped mode: what a run or a dataset made in the cluster (seed.py) left in the one namespace,
    labelled layerbench=1 from this machine by a harness that is gone: its objects (scoped.RUN_KINDS, by their
    `layerbench.label`) and its VolumeSnapshots."""
    from kubernetes import client

    from layerbench.backends.kubernetes import heartbeat
    from layerbench.backends.kubernetes.scoped import RUN_KINDS, remove_labelled
    from layerbench.backends.kubernetes.seed import delete_snapshot
    from layerbench.backends.kubernetes.volsnap import GROUP, VERSION

    items = [item.metadata for api_class, kind in RUN_KINDS for item in getattr(
        getattr(client, api_class)(api), f"list_namespaced_{kind}")(ns, label_selector="layerbench=1",
                                                                     _request_timeout=10).items]
    snapshots = client.CustomObjectsApi(api).list_namespaced_custom_object(
        GROUP, VERSION, ns, "volumesnapshots", label_selector="layerbench=1", _request_timeout=10)["items"]
    owners = Owners(api)
    removed = [meta.labels or {} for meta in items if ours(meta.labels or {}, include_live, owners.gone_from(
        ns, meta.creation_timestamp))]
    labels = sorted({meta.get("layerbench.label", "") for meta in removed} - {""})
    for label in labels:
        remove_labelled(api, ns, f"layerbench.label={label}")
    for token in {meta.get(heartbeat.OWNER_LABEL, "") for meta in removed} - {""}:  # their harnesses' Leases
        with contextlib.suppress(Exception):
            client.CoordinationV1Api(api).delete_namespaced_lease(heartbeat.lease_name(token), ns,
                                                                 _request_timeout=10)
    gone = [s["metadata"]["name"] for s in snapshots if ours(s["metadata"].get("labels") or {}, include_live, (
        owners.gone_from(ns, s["metadata"].get("creationTimestamp"))))]
    for name in gone:
        delete_snapshot(api, ns, name)
    return [f"deleted the objects labelled {label} in namespace {ns}" for label in labels] + \
        [f"deleted VolumeSnapshot {ns}/{name}" for name in gone]


def clean_snapshot_contents(core: Any, include_live: bool) -> list[str]:
    """The VolumeSnapshotContents labelled layerbench=1 of this machine whose harness is gone ([] without the
    VolumeSnapshot API)."""
    if core is None:
        return []
    from kubernetes import client

    from layerbench.backends.kubernetes.volsnap import GROUP, VERSION, delete_content

    api = core.api_client
    try:
        found = client.CustomObjectsApi(api).list_cluster_custom_object(
            GROUP, VERSION, "volumesnapshotcontents", label_selector="layerbench=1", _request_timeout=10)["items"]
    except Exception:  # no snapshot API in this cluster: nothing of ours there
        return []
    owners = Owners(api)  # a run's content: its owner's Lease is in the run's namespace (gone with it: then the
    names = [c["metadata"]["name"] for c in found if ours(  # content's own age counts)
        c["metadata"].get("labels") or {}, include_live, owners.gone_from(
            c["spec"].get("volumeSnapshotRef", {}).get("namespace", ""), c["metadata"].get("creationTimestamp")))]
    for name in names:
        delete_content(api, name)
    return [f"deleted VolumeSnapshotContent {name}" for name in names]


def _kubernetes_core() -> Any:
    try:
        from kubernetes import client

        paths = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(":") if p]
        paths += [Path.home() / ".kube" / "config", local_kubeconfig()]
        path = next((p for p in paths if p.is_file()), None)
        if path is None:
            return None
        core = client.CoreV1Api(kubeconfig_client(path, None, "kubeconfig"))
        core.list_namespace(limit=1, _request_timeout=5)
        return core
    except Exception:  # no cluster answers: nothing of ours can be running in it
        return None


LEFTOVERS = Leftovers("Kubernetes namespace", clean=clean_kubernetes, find=kubernetes_namespaces,
                      clean_variant=clean_kubernetes_variant)
