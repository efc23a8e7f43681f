"""A dataset made in the cluster (backends/kubernetes/seed.py) on the shared local cluster, with the harness as
off-node as this machine allows: namespace-scoped mode with a ServiceAccount bound only to the shipped Role (it
reads no node, so no hostPath of this machine is used). A tiny campaign (1 round of a MariaDB `pvc` and `emptydir`
variant and a PostgreSQL `emptydir` one, 1 table x 100 rows, 2 s runs) with `reset: snapshot` on the CSI driver's
classes: one seed per flavour, prepared by sysbench Jobs and hashed by a pod in the cluster (seen through the API
while it runs, and in the seeding runs' files); every run's PVC is made from its seed's VolumeSnapshot (seen through
the API; an emptydir's is the read-only PVC its init container copies from) and its files checked against the
recorded hashes (the run records); nothing labelled with the campaign is left in the namespace afterwards. The CSI
driver is added to the shared cluster when it lacks it (`scripts/k8s-local up --csi` on a running cluster installs
it and changes nothing else); the driver's classes are not the cluster's default, so no other test meets them."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_host_campaign import campaign_file, run_cli
from test_kubernetes_rbac import admin, role_account

from helpers import stored_rows
from layerbench.backends.kubernetes import manifests as m
from layerbench.backends.kubernetes import pod, seed
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.k8s, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
STORAGE_CLASS, SNAPSHOT_CLASS = "layerbench-csi-hostpath", "layerbench-csi-hostpath-snapclass"
TINY = {"tables": 1, "table_size": 100, "threads": 1, "duration": 2, "warmup": 0, "reset": "snapshot"}
GROUP = "snapshot.storage.k8s.io"


@pytest.fixture(scope="module", autouse=True)
def cluster(k8s_cluster) -> None:
    ensure_csi_classes()


def ensure_csi_classes() -> None:
    """The shared cluster, with the CSI driver's classes (installed into it when missing)."""
    from kubernetes import client

    classes = client.CustomObjectsApi(admin())
    try:
        found = [c["metadata"]["name"] for c in classes.list_cluster_custom_object(
            GROUP, "v1", "volumesnapshotclasses")["items"]]
    except client.exceptions.ApiException:
        found = []
    if SNAPSHOT_CLASS not in found:
        env = {**os.environ, "K8S_LOCAL_CPU_MANAGER_POLICY": "static"}
        up = subprocess.run([str(ROOT / "scripts" / "k8s-local"), "up", "--csi"], env=env, capture_output=True,
                            text=True, timeout=900)
        assert up.returncode == 0, f"scripts/k8s-local up --csi:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}"


@pytest.fixture
def account(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A namespace seed-<random> with the shipped ServiceAccount, Role and RoleBinding, and a kubeconfig with the
    account's token (0600); all removed at the end."""
    with role_account(tmp_path, "seed") as found:
        yield found


class Watcher:
    """Polls the API (as admin) for the campaign's pods and PVCs in the namespace while it runs."""

    def __init__(self, ns: str, campaign: str) -> None:
        from kubernetes import client

        self.core, self.ns, self.selector = client.CoreV1Api(admin()), ns, f"layerbench.campaign={campaign}"
        self.pods: dict[str, str] = {}  # name -> role
        self.claims: set[tuple[str, Any]] = set()  # (name, spec.dataSource's kind and name): one name, several runs
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self) -> None:
        while not self.stop.is_set():
            try:
                for found in self.core.list_namespaced_pod(self.ns, label_selector=self.selector).items:
                    self.pods[found.metadata.name] = found.metadata.labels.get("layerbench.role")
                for claim in self.core.list_namespaced_persistent_volume_claim(
                        self.ns, label_selector=self.selector).items:
                    source = claim.spec.data_source
                    self.claims.add((claim.metadata.name, (source.kind, source.name) if source else None))
            except Exception:  # an object going away between list calls
                pass
            time.sleep(0.3)


def left_over(ns: str, campaign: str) -> dict[str, list[str]]:
    """Everything labelled with the campaign still in the namespace (or cluster-wide for namespaces)."""
    from kubernetes import client

    api, selector = admin(), f"layerbench.campaign={campaign}"
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    found = {kind: [o.metadata.name for o in items] for kind, items in (
        ("pods", core.list_namespaced_pod(ns, label_selector=selector).items),
        ("pvcs", core.list_namespaced_persistent_volume_claim(ns, label_selector=selector).items),
        ("secrets", core.list_namespaced_secret(ns, label_selector=selector).items),
        ("configmaps", core.list_namespaced_config_map(ns, label_selector=selector).items),
        ("jobs", batch.list_namespaced_job(ns, label_selector=selector).items),
        ("namespaces", core.list_namespace(label_selector=selector).items))}
    snapshots = client.CustomObjectsApi(api).list_namespaced_custom_object(GROUP, "v1", ns, "volumesnapshots",
                                                                           label_selector=selector)["items"]
    found["volumesnapshots"] = [s["metadata"]["name"] for s in snapshots]
    return {kind: names for kind, names in found.items() if names}


def seeded_variant(account: tuple[str, Path]) -> tuple[str, dict[str, Any]]:
    """The namespace and a `pvc` variant of the account in namespace-scoped mode on the CSI classes (reset: snapshot
    makes its dataset in the cluster); the local image is on the node first (this mode imports nothing)."""
    ns, kubeconfig = account
    for flavour in ("mariadb", "postgresql"):
        pod.ensure_image_on_nodes(KubernetesVariant.model_validate(
            {"name": "k", "backend": "kubernetes", "server": {"flavour": flavour}}), print)
    return ns, {"name": "k", "backend": "kubernetes", "kubeconfig": str(kubeconfig), "namespace": ns, "kind": "pod",
                "client": "job", "qos": "burstable", "storage": "pvc", "storage_class": STORAGE_CLASS,
                "snapshot_class": SNAPSHOT_CLASS, "storage_size": "1Gi"}


def test_a_dataset_made_in_the_cluster_is_snapshotted_once_and_every_run_restored_and_checked(
        tmp_path: Path, account: tuple[str, Path]) -> None:
    """MariaDB into a `pvc` and an `emptydir` (one seed for both), PostgreSQL into an `emptydir` (a seed of its own,
    made by Jobs of its image and stopped through the exec API)."""
    ns, variant = seeded_variant(account)
    name = f"seed-it-{os.getpid()}"
    empty = {**variant, "name": "e", "storage": "emptydir"}  # filled by its init container from a read-only PVC
    postgresql = {**empty, "name": "p", "server": {"flavour": "postgresql"}}
    path = campaign_file(tmp_path, name=name, repetitions=1, baseline="k", variants=[variant, empty, postgresql],
                         workload=TINY)
    watcher = Watcher(ns, name)
    watcher.thread.start()
    try:
        done = run_cli(["run", str(path)], timeout=900)
    finally:
        watcher.stop.set()
        watcher.thread.join(timeout=10)
    assert done.returncode == 0 and "3 runs ok, 0 failed" in done.stderr, done.stdout[-2000:] + done.stderr[-3000:]

    with Store(tmp_path / "out" / "layerbench.db") as store:
        campaign_id = store.db.execute("SELECT max(id) FROM campaigns").fetchone()[0]
        rows = {r["variant"]: json.loads(r["details"]) for r in stored_rows(store, campaign_id)}
    assert sorted(rows) == ["e", "k", "p"]  # three runs, two seeds
    seed_of = {v: details["environment"]["backend"]["pvc"]["data_source"]["name"] for v, details in rows.items()}
    mariadb, pg = seed_of["k"], seed_of["p"]
    assert seed_of["e"] == mariadb != pg, seed_of  # one seed per flavour's dataset

    seeds = {n for n, role in watcher.pods.items() if role == "seed"}
    # each seed's server, then the pod that hashed its files
    assert seeds == {f"{s}-{part}" for s in (mariadb, pg) for part in ("db", "sha256")}, watcher.pods
    jobs = {n.rsplit("-", 1)[0] for n, role in watcher.pods.items() if role == "client"}
    assert {"sysbench-prepare", "sysbench-shutdown"} <= jobs, watcher.pods  # prepared and (MariaDB) stopped by Jobs
    snapshot = {s: ("VolumeSnapshot", s) for s in (mariadb, pg)}  # the seed PVCs, empty at first; the runs' from them
    assert watcher.claims == {(mariadb, None), (pg, None), ("data", snapshot[mariadb]),
                              (m.SOURCE_CLAIM, snapshot[mariadb]), (m.SOURCE_CLAIM, snapshot[pg])}, watcher.claims

    for variant_name, details in rows.items():
        reset, backend = details["reset"], details["environment"]["backend"]
        assert reset["method"] == "snapshot" and backend["dataset_path"] == seed.SEEDED
        assert reset["dataset_prepared"]["where"].startswith(f"{seed.SEEDED} in namespace {ns}")
        restore = reset["restore"]
        assert restore["method"] == "volumesnapshot" and restore["files"] > 5
        assert "recorded when the dataset was made in the cluster" in restore["verified"]
        assert backend["pvc"]["data_source"] == {"kind": "VolumeSnapshot", "api_group": GROUP,
                                                 "name": seed_of[variant_name]}
        assert ("emptydir" in backend["data"]) == (variant_name != "k")
    assert rows["p"]["environment"]["server_variables"]["version"].startswith("15")  # read by psql in the pod
    made = {m_["seed"]["snapshot"]: m_ for m_ in (json.loads(p.read_text())
                                                  for p in (tmp_path / "out").rglob(seed.FACTS_FILE))}
    assert sorted(made) == sorted([mariadb, pg]), made  # each hashed once, in the cluster
    assert "sbtest/sbtest1.ibd" in made[mariadb]["sha256"] and "PG_VERSION" in made[pg]["sha256"], made
    assert all(facts["data_bytes"] > 0 for facts in made.values())
    assert left_over(ns, name) == {}


def test_validate_refuses_reset_snapshot_in_namespace_mode_without_a_snapshot_class(
        tmp_path: Path, account: tuple[str, Path]) -> None:
    ns, kubeconfig = account
    variant = {"name": "k", "backend": "kubernetes", "kubeconfig": str(kubeconfig), "namespace": ns,
               "client": "job", "storage": "pvc", "storage_class": STORAGE_CLASS}
    name = f"seed-v-{os.getpid()}"
    path = campaign_file(tmp_path, name=name, repetitions=1, baseline="k", variants=[variant], workload=TINY)
    done = run_cli(["validate", str(path)])
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "set snapshot_class, or reset: reprepare" in lines[0]
    assert left_over(ns, name) == {}  # nothing was created


def test_off_a_node_the_snapshot_class_is_the_one_of_the_storage_class_driver() -> None:
    from layerbench.backends.kubernetes import cluster
    from layerbench.errors import BadInput

    def pvc(**kw: str) -> KubernetesVariant:
        return KubernetesVariant.model_validate({"name": "k", "backend": "kubernetes", "storage": "pvc", **kw})

    assert cluster.seed_snapshot_class(admin(), pvc(storage_class=STORAGE_CLASS)) == SNAPSHOT_CLASS
    assert cluster.seed_snapshot_class(admin(), pvc(snapshot_class="named")) == "named"  # the variant's own
    with pytest.raises(BadInput) as refused:
        cluster.seed_snapshot_class(admin(), pvc(storage_class="seed-no-such-class"))
    assert str(refused.value) == (
        "variants.k.reset: snapshot off a node makes the dataset in the cluster and restores every run from a "
        "VolumeSnapshot of it, and the cluster has no storage class seed-no-such-class for its PVC; set reset: "
        "reprepare")


@pytest.mark.parametrize("stop", ["SIGINT", "SIGKILL then clean"])
def test_a_seed_stopped_while_it_is_made_leaves_nothing(tmp_path: Path, account: tuple[str, Path], stop: str) -> None:
    """Ctrl-C: the harness removes the half-made seed itself; SIGKILL: `clean --campaign`'s sweep of the variant's
    namespace (cleanup.clean_kubernetes_variant, in-process so it touches nothing but this namespace) does."""
    import signal
    import sys

    from layerbench.backends.kubernetes import cleanup

    ns, variant = seeded_variant(account)
    name = f"seed-stop-{os.getpid()}"
    path = campaign_file(tmp_path, name=name, repetitions=1, baseline="k", variants=[variant], workload=TINY)
    harness = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 240
        while "pods" not in left_over(ns, name) and harness.poll() is None and time.monotonic() < deadline:
            time.sleep(0.3)
        assert "pods" in left_over(ns, name), "the seed's server pod never appeared"
        harness.send_signal(signal.SIGINT if stop == "SIGINT" else signal.SIGKILL)
        out, _ = harness.communicate(timeout=300)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.communicate(timeout=60)
    if stop == "SIGINT":
        assert harness.returncode == 130, out[-2000:]
    else:
        assert harness.returncode == -signal.SIGKILL and left_over(ns, name), out[-2000:]  # it left the seed
        said = cleanup.clean_kubernetes_variant(KubernetesVariant.model_validate(variant))
        assert any(line.startswith("deleted the objects labelled seed-") for line in said), said
    assert left_over(ns, name) == {}
