"""PostgreSQL 15 in the Kubernetes backend, for real (scripts/k8s-local, issue #46): examples/k8s-qos-postgresql.yaml
in smoke mode (the host's PostgreSQL against BestEffort, Burstable, Guaranteed and pinned Guaranteed pods of the
PostgreSQL image imported into the node's containerd, sysbench --db-driver=pgsql on this host), plus a StatefulSet
whose PVC is made from the campaign's VolumeSnapshot of the dataset (the CSI driver's classes; its files hashed in
the pod) with sysbench as a Job in the cluster; one run per variant, 1 x 1,000 rows, 3 s, every run restoring the
same snapshot made here by this machine's PostgreSQL. And pgbench (scale 1) as Jobs against a pod whose hostPath
datadir is restored on this host. A cluster that does not start fails these tests."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
       "pod-guaranteed-pinned": "Guaranteed", "pvc-snapshot-job": "Burstable"}
POD = {"backend": "kubernetes", "server": {"flavour": "postgresql", "version": "15"}, "qos": "burstable",
       "requests": {"cpu": "100m", "memory": "512Mi"}}


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
        data["variants"].append({"name": "pvc-snapshot-job", **POD, "kind": "statefulset", "storage": "pvc",
                                 "storage_size": "1Gi", "storage_class": STORAGE_CLASS,
                                 "snapshot_class": SNAPSHOT_CLASS, "client": "job"})
        data["workload"] |= {"verify": "checksum"}
        yield run(smoke_version(parse_campaign(data)), base)


@pytest.fixture(scope="module")
def pgbench(k8s_cluster) -> Iterator[dict]:
    """pgbench's TPC-B (scale 1; a 1 s warm-up and a 3 s run, each a Job) against a pod on a hostPath datadir."""
    with folders_postgres_enters("lb-it-pgk8s-pgbench-") as base:
        data = {"name": OWN, "baseline": "hostpath-job", "repetitions": 1, "estimates_only": True, "busy": "keep",
                "variants": [{"name": "hostpath-job", **POD, "kind": "pod", "storage": "hostpath", "client": "job"}],
                "workloads": [{"name": "tpcb", "tool": "pgbench", "scale": 1, "threads": [1], "duration": 3,
                               "warmup": 1, "verify": "checksum"}]}
        yield run(parse_campaign(data), base)


def run(campaign: Any, base: Path) -> dict:
    campaign = campaign.model_copy(update={"name": OWN, "output": str(base / "out")})
    with Store(base / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store)
        rows = store.db.execute("SELECT variant, status, tps, details, error FROM runs").fetchall()
    return {"outcome": outcome, "runs": {r[0]: (r[1], r[2], json.loads(r[3] or "{}"), r[4]) for r in rows},
            "run_dirs": sorted((base / "out").glob("*/runs/*"))}


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
    # the pod's postmaster found by its name in the pod's cgroup, its backends as its descendants (the backends of a
    # 3 s window without warm-up through the postmaster's reaped-children time: measure/cpu.py)
    cpu = {name: details["resources"]["cpu_seconds"] for name, (_s, _t, details, _e) in runs.items()}
    assert all(cpu[name].get("server", 0) > 0 for name in runs), cpu
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


def test_pgbench_runs_as_jobs_against_a_pod_on_its_restored_hostpath_datadir(pgbench: dict) -> None:
    (status, tps, details, error), = pgbench["runs"].values()
    assert status == "ok" and tps > 0, error
    backend = details["environment"]["backend"]
    assert backend["server_flavour"] == "postgresql" and "hostPath datadir" in backend["data"]
    assert set(backend["placement"]["client_nodes"]) == {"pgbench-warmup", "pgbench-run"}
    assert backend["placement"]["rtt_median_us"] > 0
    assert details["pgbench"]["scale"] == 1 and details["pgbench"]["statements"]
    restore = details["reset"]["restore"]  # copied on this host into the folder the pod mounts, checked
    assert restore["method"] in ("clone", "copy") and restore["files"] > 0 and restore["problems"] == []
    assert details["reset"]["checksum_tables"] == 4  # pgbench's four tables
    (run_dir,) = pgbench["run_dirs"]
    assert "layerbench latency: p95" in (run_dir / "pgbench.log").read_text()  # the Job's per-transaction log
    conf = (run_dir / "postgresql.conf").read_text()
    assert "listen_addresses = '0.0.0.0'" in conf and "password_encryption = 'scram-sha-256'" in conf


def test_nothing_of_the_campaigns_is_left_in_the_cluster(campaign: dict, pgbench: dict) -> None:
    assert namespaces() == []
