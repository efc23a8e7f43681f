"""MySQL 9.7 in the Kubernetes backend, for real (scripts/k8s-local): the image imported from the cached MySQL
rootfs (the same bytes the host and Docker backends run) and then into the cluster's containerd, the pod started
through the flavour's own command, readiness probe and account SQL, its datadir the snapshot made by the rootfs's
mysqld, copied on the host into a hostPath folder and checked by CHECKSUM TABLE; sysbench from this host. A
MariaDB pod of the same shape is the baseline, so the fairness section names the flavours' differing defaults.
One campaign (1 x 1,000 rows, 2 s, one run per variant) shared by the module's tests. The rootfs is built here
when missing (about 80 s, cached after); a cluster that does not start fails these tests."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import stored_rows
from layerbench.backends.kubernetes.cleanup import _kubernetes_core
from layerbench.campaign.models import parse_campaign
from layerbench.run import orchestrator
from layerbench.server.mysql_rootfs import ensure_rootfs
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.k8s, pytest.mark.slow]

OWN = f"it-mysqlk8s-{os.getpid()}"  # this module's campaign: it checks only the namespaces it created
POD = {"backend": "kubernetes", "kind": "pod", "storage": "hostpath", "qos": "burstable",
       "requests": {"cpu": "100m", "memory": "512Mi"}}
HOST_CLIENT = {"client_cpus": "0"}  # sysbench pinned here; a Job's CPUs are the kubelet's (validate refuses both)


def namespaces() -> list[str]:
    core = _kubernetes_core()
    assert core is not None, "the cluster does not answer"
    return [ns.metadata.name for ns in core.list_namespace(label_selector=f"layerbench.campaign={OWN}").items]


@pytest.fixture(scope="module")
def campaign(k8s_cluster, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """MariaDB in a pod (the baseline) and MySQL 9.7 in a pod, one run each, each on its own snapshot; and a pod whose
    `mysqld:` is the rootfs's own mysqld (an image of its root), on an emptyDir, with sysbench as a Job."""
    rootfs = ensure_rootfs("9.7")
    out = tmp_path_factory.mktemp("mysql-k8s")
    data = {
        "name": OWN, "baseline": "mariadb",
        "variants": [{"name": "mariadb", **POD, **HOST_CLIENT},
                     {"name": "mysql", "extends": "mariadb", "server": {"flavour": "mysql", "version": "9.7"}},
                     {"name": "binary-job", **POD, "mysqld": str(rootfs.root / "usr/sbin/mysqld"),
                      "storage": "emptydir", "client": "job"}],
        "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 2, "warmup": 0,
                     "verify": "checksum"},
        "repetitions": 1, "estimates_only": True, "output": str(out), "busy": "keep",
    }
    with Store(out / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store, source_path=None)
        rows = [{**dict(r), "details": json.loads(r["details"] or "{}")} for r in stored_rows(store,
                                                                                             outcome.campaign_id)]
        from layerbench.analysis.loading import analyze

        analysis = analyze(store, outcome.campaign_id)
    return {"outcome": outcome, "runs": {r["variant"]: r for r in rows}, "analysis": analysis}


def test_mysql_runs_in_a_pod_from_the_rootfs_image_on_its_restored_snapshot(campaign: dict) -> None:
    runs = campaign["runs"]
    assert (campaign["outcome"].ok, campaign["outcome"].failed) == (3, 0), [r["error"] for r in runs.values()]
    mysql = runs["mysql"]["details"]
    backend = mysql["environment"]["backend"]
    assert backend["image"].startswith("layerbench/mysql:9.7.4-") and backend["server_flavour"] == "mysql"
    assert backend["server_version"].startswith("9.7.") and backend["qos_class"] == "Burstable"
    assert "hostPath datadir" in backend["data"]
    assert mysql["environment"]["server_variables"]["version"].startswith("9.7.")
    assert runs["mysql"]["tps"] > 0
    assert mysql["resources"]["cpu_seconds"].get("server", 0) > 0  # the pod's mysqld found by its name
    for run in (runs["mariadb"], runs["mysql"]):  # each flavour's own snapshot, checked and restored before its run
        reset = run["details"]["reset"]
        assert reset["method"] == "snapshot" and reset["checksum_tables"] == 1
        restore = reset["restore"]  # copied on this host into the hostPath folder, checked against the manifest
        assert restore["method"] in ("clone", "copy") and restore["files"] > 0 and restore["problems"] == []
    assert runs["mysql"]["details"]["reset"]["snapshot"] != runs["mariadb"]["details"]["reset"]["snapshot"]
    assert runs["mariadb"]["details"]["environment"]["backend"]["server_flavour"] == "mariadb"
    assert namespaces() == []


def test_a_mysqld_binary_runs_in_a_pod_of_its_roots_image_and_answers_a_sysbench_job(campaign: dict) -> None:
    """`mysqld:` naming the MySQL rootfs's own binary: the pod runs an image made from that root (layerbench/root:
    <content key>) and answers as MySQL 9.7, on the snapshot the flavour's variant restored (made by the same
    bytes), copied into an emptyDir. The root's image has no sysbench: the Job runs layerbench's MariaDB image,
    whose sysbench logs in to MySQL's caching_sha2_password account over the pod network."""
    run = campaign["runs"]["binary-job"]
    assert run["status"] == "ok", run["error"]
    backend = run["details"]["environment"]["backend"]
    assert backend["image"].startswith("layerbench/root:") and backend["server_flavour"] == "mysql"
    assert backend["client_path"].startswith("a Job") and "snapshot copied" in backend["data"]
    assert run["details"]["environment"]["server_variables"]["version"].startswith("9.7.") and run["tps"] > 0
    reset = run["details"]["reset"]
    assert reset["method"] == "snapshot" and reset["restore"]["method"] == "copy by the kubernetes backend"
    assert reset["snapshot"] == campaign["runs"]["mysql"]["details"]["reset"]["snapshot"]
    jobs = [line.split()[3:5] for line in (Path(run["run_dir"]) / "commands.log").read_text().splitlines()
            if "kubernetes job" in line]
    assert jobs and all(image.startswith("layerbench/mariadb:") for _, image in jobs), jobs


def test_the_fairness_section_names_the_flavours_of_the_two_pods(campaign: dict) -> None:
    analysis = campaign["analysis"]
    texts = [d.text(analysis.baseline) for d in analysis.differences]
    assert any("server flavour and version: mysql 9.7.4" in t for t in texts), texts
    assert any("binary log (log_bin), a flavour default: ON vs OFF" in t for t in texts), texts

