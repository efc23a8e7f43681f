"""Reset by VolumeSnapshot (variant `snapshot_class:`): the prepared dataset becomes one CSI VolumeSnapshot per
(dataset, campaign), and every run's PVC is created from it.

The seed: a namespace of its own (labelled with the campaign), a PVC of the variant's storage class filled by a pod
from the dataset snapshot (read-only hostPath), checked file by file (sha256 inside the pod against the same
files hashed on this host), then a VolumeSnapshot of that PVC, waited for readyToUse. A PVC's dataSource must be
in its own namespace, so each run gets a pre-provisioned VolumeSnapshotContent (deletionPolicy Retain) naming the
seed's snapshot handle, and a VolumeSnapshot bound to it in the run's namespace; the run's PVC names that one.
The run's server pod checks its restored datadir the same way (an init container) before its server starts.

The seed namespace is deleted when the campaign ends (backends.base.campaign_ended), the run's content by down();
`layerbench clean` finds both after a crash (labels layerbench=1, this host, a dead harness)."""

from __future__ import annotations

import contextlib
import hashlib
import time
from pathlib import Path
from typing import Any

import xxhash

from layerbench.backends.kubernetes import cluster, heartbeat, manifests
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.errors import RunFailed
from layerbench.server.manifest import read_manifest

GROUP, VERSION = "snapshot.storage.k8s.io", "v1"
SEED_PVC = SEED_SNAPSHOT = "seed"
RUN_SNAPSHOT = manifests.RESTORED_SNAPSHOT
HASH_SCRIPT = "cd {dir} && find . -type f -print0 | sort -z | xargs -0 -r sha256sum"
COPIED = "copied from this machine through hostPath"  # the run's record: which path made its data (else seed.SEEDED)
DATA_WORDS = "PVC made from the campaign's VolumeSnapshot of the dataset, checked by sha256 in the pod"
_SEEDS: dict[tuple[str, str], str] = {}  # (campaign, dataset folder) -> the seed snapshot's handle, this process


def expected_hashes(snapshot: Path) -> dict[str, str]:
    """sha256 of each file the dataset's manifest lists (what a restore must hold), hashed on this host while the
    same read checks the file's xxh3-128 against the manifest (so the expected bytes are the prepared ones)."""
    manifest = read_manifest(snapshot.parent)
    if manifest is None:
        raise RunFailed(f"dataset snapshot {snapshot.parent.name} has no manifest; remove it so it is rebuilt")
    found = {}
    for name, entry in sorted(manifest.files.items()):
        digest, full = hashlib.sha256(), xxhash.xxh3_128()
        with open(snapshot / name, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
                full.update(block)
        if full.hexdigest() != entry.xxh3_128:
            raise RunFailed(f"dataset snapshot {snapshot.parent.name}: {name} differs from its manifest; remove "
                            "the snapshot so it is rebuilt")
        found[name] = digest.hexdigest()
    return found


def parse_hashes(text: str) -> dict[str, str]:
    """`sha256sum` lines ("<hex>  ./name") as {name: hex}; other lines are ignored."""
    found = {}
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        if len(digest) == 64 and name:
            found[name.removeprefix("./")] = digest
    return found


def compare(expected: dict[str, str], got: dict[str, str], where: str) -> None:
    """RunFailed naming the first file that is missing or differs; files the dataset does not list are ignored
    (the server's own files)."""
    for name, digest in expected.items():
        if got.get(name) != digest:
            state = "missing" if name not in got else "differs"
            raise RunFailed(f"{where}: restored file {name} {state} (sha256 against the dataset snapshot); "
                            "the snapshot's bytes did not arrive, see the driver's logs")


def seed_name(campaign: str, snapshot: Path) -> str:
    key = hashlib.sha256(f"{campaign}\0{snapshot.resolve()}".encode()).hexdigest()[:10]
    return manifests.dns_name(f"lb-seed-{manifests.dns_name(campaign)[:30]}-{key}")


def snapshot_api(api: Any) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(api)


def seed_objects(variant: KubernetesVariant, image: str, ns: str, snapshot: str,
                 meta_labels: dict[str, str]) -> list[dict[str, Any]]:
    """The seed PVC and the pod that fills it from the dataset snapshot and prints the files' sha256."""
    claim = manifests.claim_spec(variant)
    fill = f"cp -a /snapshot/. /data/ && {HASH_SCRIPT.format(dir='/data')}"
    container = {"name": "fill", "image": image, "imagePullPolicy": "IfNotPresent", "command": ["sh", "-c", fill],
                 "volumeMounts": [{"name": "data", "mountPath": "/data"},
                                  {"name": "snapshot", "mountPath": "/snapshot", "readOnly": True}]}
    pod = {"restartPolicy": "Never", "containers": [container], "automountServiceAccountToken": False,
           "enableServiceLinks": False, "terminationGracePeriodSeconds": 1,
           "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": SEED_PVC}},
                       {"name": "snapshot", "hostPath": {"path": snapshot, "type": "Directory"}}]}
    return [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": SEED_PVC, "namespace": ns, "labels": meta_labels}, "spec": claim},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fill", "namespace": ns, "labels": meta_labels},
             "spec": pod}]


def volume_snapshot(name: str, ns: str, klass: str | None, source: dict[str, str],
                    meta_labels: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"source": source, **({"volumeSnapshotClassName": klass} if klass else {})}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "VolumeSnapshot",
            "metadata": {"name": name, "namespace": ns, "labels": meta_labels}, "spec": spec}


def run_content(name: str, ns: str, driver: str, handle: str, klass: str | None,
                meta_labels: dict[str, str]) -> dict[str, Any]:
    """A pre-provisioned VolumeSnapshotContent for the run's namespace: the seed's handle, Retain (deleting it
    leaves the seed's snapshot alone)."""
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "VolumeSnapshotContent",
            "metadata": {"name": name, "labels": meta_labels},
            "spec": {"deletionPolicy": "Retain", "driver": driver, "source": {"snapshotHandle": handle},
                     "volumeSnapshotRef": {"name": RUN_SNAPSHOT, "namespace": ns},
                     **({"volumeSnapshotClassName": klass} if klass else {})}}


def content_name(ns: str) -> str:
    return manifests.dns_name(f"{ns}-data")


def wait_for(what: str, timeout: float, probe: Any) -> Any:
    """probe() until it returns something (not None); RunFailed naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found is not None:
            return found
        time.sleep(0.5)
    raise RunFailed(f"{what} not ready within {timeout:.0f} s; see `kubectl get volumesnapshot,pvc -A` and the "
                    "CSI driver's logs, or raise ready_timeout")


def snapshot_ready(custom: Any, ns: str, name: str) -> dict[str, Any] | None:
    body = custom.get_namespaced_custom_object(GROUP, VERSION, ns, "volumesnapshots", name,
                                               _request_timeout=cluster.TIMEOUT)
    status = body.get("status") or {}
    if (status.get("error") or {}).get("message"):
        raise RunFailed(f"VolumeSnapshot {ns}/{name}: {status['error']['message']}")
    return body if status.get("readyToUse") else None


def pod_finished(core: Any, ns: str, name: str) -> Any:
    pod = core.read_namespaced_pod(name, ns, _request_timeout=cluster.TIMEOUT)
    if pod.status.phase == "Failed":
        log = core.read_namespaced_pod_log(name, ns, tail_lines=5, _request_timeout=cluster.TIMEOUT)
        raise RunFailed(f"the pod filling the seed PVC in {ns} failed: {str(log).strip()[-300:]}")
    return pod if pod.status.phase == "Succeeded" else None


class SeedSnapshots:
    """The seed of each (campaign, dataset) this process made, and the per-run snapshots made from it."""

    def __init__(self, api: Any, core: Any, variant: KubernetesVariant) -> None:
        self.api, self.core, self.variant, self.custom = api, core, variant, snapshot_api(api)

    def seed(self, campaign: str, snapshot: Path, image: str, meta_labels: dict[str, str],
             say: Any) -> tuple[str, str]:
        """The seed's snapshot handle and CSI driver, made now unless this process made it already."""
        ns = seed_name(campaign, snapshot)
        key = (campaign, str(snapshot.resolve()))
        if key not in _SEEDS:
            from layerbench.backends.base import at_campaign_end

            say(f"making the dataset's VolumeSnapshot in namespace {ns} (once per dataset and campaign)")
            at_campaign_end(lambda: self.forget_seed(key, ns))  # before it exists: also a half-made seed goes
            try:
                _SEEDS[key] = self._make_seed(ns, snapshot, image, meta_labels)
            except BaseException:
                self.forget_seed(key, ns)
                raise
        content = self._seed_content(ns)
        return _SEEDS[key], str(content["spec"]["driver"])

    def _make_seed(self, ns: str, snapshot: Path, image: str, meta_labels: dict[str, str]) -> str:
        from layerbench.backends.kubernetes.pod import create_object, delete_namespace

        timeout = self.variant.ready_timeout
        delete_namespace(self.core, ns)  # a seed a killed harness left (resume): made again, not trusted
        self.core.create_namespace(manifests.namespace(ns, meta_labels))
        heartbeat.beat(self.api, ns, meta_labels)
        for body in seed_objects(self.variant, image, ns, str(snapshot.resolve()), meta_labels):
            create_object(self.api, self.core, body)
            bound_claim(self.api, self.core, ns, self.variant, body)
        wait_for(f"the pod filling the seed PVC in {ns}", timeout, lambda: pod_finished(self.core, ns, "fill"))
        log = self.core.read_namespaced_pod_log("fill", ns, _request_timeout=cluster.TIMEOUT)
        compare(expected_hashes(snapshot), parse_hashes(str(log)), f"the seed PVC in {ns}")
        self.core.delete_namespaced_pod("fill", ns, grace_period_seconds=0)
        source = {"persistentVolumeClaimName": SEED_PVC}
        self.custom.create_namespaced_custom_object(GROUP, VERSION, ns, "volumesnapshots", volume_snapshot(
            SEED_SNAPSHOT, ns, self.variant.snapshot_class, source, meta_labels))
        wait_for(f"VolumeSnapshot {ns}/{SEED_SNAPSHOT}", timeout,
                 lambda: snapshot_ready(self.custom, ns, SEED_SNAPSHOT))
        return str(self._seed_content(ns)["status"]["snapshotHandle"])

    def _seed_content(self, ns: str) -> dict[str, Any]:
        body = self.custom.get_namespaced_custom_object(GROUP, VERSION, ns, "volumesnapshots", SEED_SNAPSHOT)
        name = body["status"]["boundVolumeSnapshotContentName"]
        return dict(self.custom.get_cluster_custom_object(GROUP, VERSION, "volumesnapshotcontents", name))

    def forget_seed(self, key: tuple[str, str], ns: str) -> None:
        """The campaign ended: delete the seed's namespace (its VolumeSnapshot, deletionPolicy of its class)."""
        from layerbench.backends.kubernetes.pod import delete_namespace

        _SEEDS.pop(key, None)
        with contextlib.suppress(Exception):
            delete_namespace(self.core, ns)

    def for_run(self, ns: str, handle: str, driver: str, meta_labels: dict[str, str],
                klass: str | None = None) -> None:
        """The run's VolumeSnapshot (bound to a pre-provisioned content of the seed's handle, of class `klass`:
        the variant's by default), ready to use."""
        klass = klass or self.variant.snapshot_class
        self.custom.create_cluster_custom_object(GROUP, VERSION, "volumesnapshotcontents", run_content(
            content_name(ns), ns, driver, handle, klass, meta_labels))
        self.custom.create_namespaced_custom_object(GROUP, VERSION, ns, "volumesnapshots", volume_snapshot(
            RUN_SNAPSHOT, ns, klass, {"volumeSnapshotContentName": content_name(ns)}, meta_labels))
        wait_for(f"VolumeSnapshot {ns}/{RUN_SNAPSHOT}", self.variant.ready_timeout,
                 lambda: snapshot_ready(self.custom, ns, RUN_SNAPSHOT))


def delete_content(api: Any, name: str) -> None:
    """Delete a run's pre-provisioned content (Retain: the seed's snapshot stays); gone already is fine."""
    from kubernetes.client.exceptions import ApiException

    try:
        snapshot_api(api).delete_cluster_custom_object(GROUP, VERSION, "volumesnapshotcontents", name,
                                                       _request_timeout=cluster.TIMEOUT)
    except ApiException as error:
        if error.status != 404:
            raise


def check_restored(core: Any, ns: str, pod_name: str, snapshot: Path,
                   seeded: dict[str, Any] | None = None) -> dict[str, int]:
    """The run's datadir as its init container `verify` hashed it, against the dataset's files: those of the
    snapshot here, or (`seeded`: the meta of a dataset made in the cluster, seed.py) the hashes recorded there."""
    log = core.read_namespaced_pod_log(pod_name, ns, container="verify", _request_timeout=cluster.TIMEOUT)
    if seeded is not None:
        expected = dict(seeded["sha256"])
        compare(expected, parse_hashes(str(log)), f"the run's data in {ns}")
        return {"files": len(expected), "bytes": int(seeded.get("bytes", 0))}
    expected = expected_hashes(snapshot)
    compare(expected, parse_hashes(str(log)), f"the run's PVC in {ns}")
    return {"files": len(expected), "bytes": sum((snapshot / n).stat().st_size for n in expected)}


def wait_bound(core: Any, ns: str, name: str, timeout: float) -> dict[str, Any]:
    """The PVC `name` once Bound, as the API reports it: its name, volume, class and dataSource."""

    def bound() -> Any:
        with contextlib.suppress(Exception):
            claim = core.read_namespaced_persistent_volume_claim(name, ns, _request_timeout=cluster.TIMEOUT)
            return claim if claim.status.phase == "Bound" else None
        return None

    claim = wait_for(f"PVC {ns}/{name}", timeout, bound)
    source = claim.spec.data_source
    return {"name": name, "volume": claim.spec.volume_name, "storage_class": claim.spec.storage_class_name,
            "data_source": {"kind": source.kind, "api_group": source.api_group, "name": source.name}
            if source else None}


def binds_at_once(api: Any, variant: KubernetesVariant) -> bool:
    """The storage class binds a PVC when it is made (volumeBindingMode Immediate), not at its pod's scheduling."""
    from kubernetes import client

    storage = client.StorageV1Api(api)
    classes = storage.list_storage_class(_request_timeout=cluster.TIMEOUT).items
    for klass in classes:
        default = (klass.metadata.annotations or {}).get("storageclass.kubernetes.io/is-default-class") == "true"
        if klass.metadata.name == variant.storage_class or (variant.storage_class is None and default):
            return (klass.volume_binding_mode or "Immediate") == "Immediate"
    return False


def bound_claim(api: Any, core: Any, ns: str, variant: KubernetesVariant, body: dict[str, Any]) -> dict[str, Any]:
    """After creating `body`: a PVC of an Immediate class is waited for until Bound before its pod is made (a
    pod made while its PVC binds was measured to stay unschedulable for minutes); {"pvc": its facts} or {}.
    Namespace-scoped mode cannot read the class: it waits until the PVC is Bound or an event says that it waits
    for its first consumer (volumeBindingMode WaitForFirstConsumer)."""
    if body["kind"] != "PersistentVolumeClaim":
        return {}
    name = body["metadata"]["name"]
    if variant.namespace is not None:
        return {} if waits_for_consumer(core, ns, name, variant.ready_timeout) else \
            {"pvc": wait_bound(core, ns, name, variant.ready_timeout)}
    if not binds_at_once(api, variant):
        return {}
    return {"pvc": wait_bound(core, ns, name, variant.ready_timeout)}


def waits_for_consumer(core: Any, ns: str, name: str, timeout: float) -> bool:
    """The PVC `name` is Bound (False) or its events say WaitForFirstConsumer (True), whichever comes first."""

    def known() -> bool | None:
        claim = core.read_namespaced_persistent_volume_claim(name, ns, _request_timeout=cluster.TIMEOUT)
        if claim.status.phase == "Bound":
            return False
        events = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}",
                                            _request_timeout=cluster.TIMEOUT).items
        return True if any(e.reason == "WaitForFirstConsumer" for e in events) else None

    return bool(wait_for(f"PVC {ns}/{name}", timeout, known))


def record_restore(core: Any, ns: str, pod_name: str, spec: Any, seconds: float,
                   seeded: dict[str, Any] | None = None) -> None:
    """The restored bytes checked (check_restored), written as restore.json like the other restore paths
    (seconds: from the run's snapshot request to the server pod Ready: restore, check and the pod's start)."""
    import json
    from dataclasses import asdict

    from layerbench.server.restore import FACTS_FILE, RestoreFacts

    checked = check_restored(core, ns, pod_name, spec.snapshot, seeded)
    against = "the sha256 recorded when the dataset was made in the cluster" if seeded else "the dataset's files"
    facts = RestoreFacts("volumesnapshot", checked["files"], checked["bytes"], round(seconds, 3),
                         f"sha256 of every file in the pod, against {against}")
    (spec.run_dir / FACTS_FILE).write_text(json.dumps(asdict(facts)))
    spec.say(f"restored by VolumeSnapshot: {checked['files']} files checked in {seconds:.1f} s")


def snapshot_for_run(api: Any, core: Any, variant: KubernetesVariant, spec: Any, ns: str, image: str,
                     nodes: list[Any], seeded: dict[str, Any] | None = None) -> str:
    """The VolumeSnapshot the run's PVC is made from, in `ns`: the run's own, bound to the seed's handle (a
    pre-provisioned content), or in namespace-scoped mode the seed's itself (same namespace). The seed: one made in
    the cluster (`seeded`: its meta, seed.py), else the campaign's seed of spec.snapshot (made once here), filled
    through a hostPath, which needs the server's nodes to be this machine."""
    if seeded is not None:
        made = seeded["seed"]
        if variant.namespace is not None:
            return str(made["snapshot"])
        SeedSnapshots(api, core, variant).for_run(ns, made["handle"], made["driver"], manifests.labels(
            spec.campaign, spec.label, "snapshot"), made.get("snapshot_class"))
        return RUN_SNAPSHOT
    if not cluster.node_is_this_machine(nodes):
        raise RunFailed(f"variants.{variant.name}.snapshot_class: the dataset reaches the seed PVC through hostPath, "
                        "which needs the server's nodes to be this machine (node_selector); on a remote cluster "
                        "set the workload's reset: reprepare")
    seeds = SeedSnapshots(api, core, variant)
    seed_labels = manifests.labels(spec.campaign, seed_name(spec.campaign, spec.snapshot), "seed")
    handle, driver = seeds.seed(spec.campaign, spec.snapshot, image, seed_labels, spec.say)
    seeds.for_run(ns, handle, driver, manifests.labels(spec.campaign, spec.label, "snapshot"))
    return RUN_SNAPSHOT
