"""PostgreSQL 15 in the Kubernetes backend, for real (scripts/k8s-local, issue #46): examples/k8s-qos-postgresql.yaml
in smoke mode (the host's PostgreSQL against BestEffort, Burstable, Guaranteed and pinned Guaranteed pods of the
PostgreSQL image imported into the node's containerd, sysbench --db-driver=pgsql on this host), plus two pods on the
backend's other on-node data paths: a StatefulSet whose PVC is made from the campaign's VolumeSnapshot of the
dataset (the CSI driver's classes; its files hashed in the pod) with sysbench as a Job in the cluster, and a pod on a
hostPath datadir restored on this host. One run per variant, 1 x 1,000 rows, 3 s; every run restores the same
snapshot made here by this machine's PostgreSQL. A cluster that does not start fails these tests."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from test_k8s_seed import SNAPSHOT_CLASS, STORAGE_CLASS, ensure_csi_classes

from helpers import folders_postgres_enters
from layerbench.backends.kubernetes.cleanup import _kubernetes_core
from layerbench.campaign.models import parse_campaign, smoke_version
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.k8s, pytest.mark.slow]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OWN = f"it-pgk8s-{os.getpid()}"  # this module's campaign: it checks only the namespaces it created
QOS = {"host": None, "pod-besteffort": "BestEffort", "pod-burstable": "Burstable", "pod-guaranteed": "Guaranteed",
       "pod-guaranteed-pinned": "Guaranteed", "pvc-snapshot-job": "Burstable", "hostpath": "Burstable"}
SMALL = {"qos": "burstable", "requests": {"cpu": "100m", "memory": "512Mi"}}


def namespaces() -> list[str]:
    core = _kubernetes_core()
    assert core is not None, "the cluster does not answer"
    return [ns.metadata.name for ns in core.list_namespace(label_selector=f"layerbench.campaign={OWN}").items]


@pytest.fixture(scope="module")
def campaign(k8s_cluster) -> Iterator[dict]:
    """The example in smoke mode, with the two other data paths added; folders the user postgres can enter."""
    ensure_csi_classes()
    with folders_postgres_enters("lb-it-pgk8s-") as base:
        data = yaml.safe_load((EXAMPLES / "k8s-qos-postgresql.yaml").read_text())
        pg = {"backend": "kubernetes", "server": {"flavour": "postgresql", "version": "15"}, **SMALL}
        data["variants"] += [
            {"name": "pvc-snapshot-job", **pg, "kind": "statefulset", "storage": "pvc", "storage_size": "1Gi",
             "storage_class": STORAGE_CLASS, "snapshot_class": SNAPSHOT_CLASS, "client": "job"},
            {"name": "hostpath", **pg, "kind": "pod", "storage": "hostpath", "client_cpus": "0"}]
        data["workload"] |= {"verify": "checksum"}
        campaign = smoke_version(parse_campaign(data)).model_copy(update={"name": OWN, "output": str(base / "out")})
        with Store(base / "out" / "layerbench.db") as store:
            outcome = orchestrator.run_campaign(campaign, store)
            rows = store.db.execute("SELECT variant, status, tps, details, error FROM runs").fetchall()
        yield {"outcome": outcome, "runs": {r[0]: (r[1], r[2], json.loads(r[3] or "{}"), r[4]) for r in rows}}


def test_every_qos_class_runs_postgresql_15_with_sysbench_pgsql(campaign: dict) -> None:
    runs = campaign["runs"]
    assert set(runs) == set(QOS) and all(status == "ok" for status, *_ in runs.values()), \
        {name: error for name, (status, _t, _d, error) in runs.items() if status != "ok"}
    for name, (_status, tps, details, _error) in runs.items():
        assert tps > 0, name
        environment = details["environment"]
        backend = environment["backend"]
        assert backend["server_flavour"] == "postgresql" and backend["server_version"].startswith("15."), name
        assert environment["server_variables"]["version"].startswith("15."), name
        assert details["reset"]["method"] == "snapshot" and details["reset"]["checksum_tables"] == 1, name
        if QOS[name] is None:
            continue
        assert backend["qos_class"] == QOS[name] and backend["image"].startswith("layerbench/postgresql:"), name
        assert backend["server_sql"].startswith("a connection from this machine"), name
    cpu = {name: (d["resources"]["cpu_seconds"], d["resources"].get("ctx_voluntary"), d["resources"]["samples"])
           for name, (_s, _t, d, _e) in runs.items()}
    print(cpu)
    # the pod's postmaster found by its name in the pod's cgroup, its backends as its descendants
    assert all(cpu[name][0].get("server", 0) > 0 for name in runs if QOS[name]), cpu
    pinned = runs["pod-guaranteed-pinned"][2]["environment"]["backend"]
    assert pinned["server_cpus_allowed"] == "1" and pinned["cpu_manager_policy"] == "static"


def test_each_data_path_is_recorded_and_its_restored_files_checked(campaign: dict) -> None:
    runs = campaign["runs"]
    snapshots = {details["reset"]["snapshot"] for _s, _t, details, _e in runs.values()}
    assert len(snapshots) == 1  # the same dataset, made once here by this machine's PostgreSQL 15
    copied = runs["pod-guaranteed"][2]["environment"]["backend"]
    assert "read-only hostPath into the emptydir datadir" in copied["data"]
    csi = runs["pvc-snapshot-job"][2]
    backend = csi["environment"]["backend"]
    assert backend["client_path"].startswith("a Job in the cluster") and backend["pvc"]["data_source"]["kind"] == \
        "VolumeSnapshot"
    restore = csi["reset"]["restore"]  # sha256 of every file in the pod, against the dataset's files here
    assert restore["method"] == "volumesnapshot" and restore["files"] > 0 and "sha256" in restore["verified"]
    hostpath = runs["hostpath"][2]
    assert "hostPath datadir" in hostpath["environment"]["backend"]["data"]
    restore = hostpath["reset"]["restore"]
    assert restore["method"] in ("clone", "copy") and restore["files"] > 0 and restore["problems"] == []


def test_nothing_of_the_campaign_is_left_in_the_cluster(campaign: dict) -> None:
    assert namespaces() == []
