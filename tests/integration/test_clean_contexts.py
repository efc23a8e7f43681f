"""`layerbench clean --campaign` sweeps the cluster of each kubernetes variant's own kubeconfig and context, not only
the default one: on the shared local cluster, a namespace labelled as a dead harness of this machine left it (with a
PVC in it) is deleted by a clean whose default kubeconfig finds no cluster (HOME, KUBECONFIG and K8S_LOCAL_DIR
pointed elsewhere), reached only through the campaign's variant. Asserted through the API. Modules:
backends/kubernetes/cleanup.py, run/cleanup.py."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.integration, pytest.mark.k8s]
KUBECONFIG = Path("/var/tmp/layerbench-k8s/kubeconfig")  # scripts/k8s-local's default state dir


def test_clean_campaign_sweeps_a_variant_s_own_context(k8s_cluster: None, tmp_path: Path) -> None:
    from kubernetes import client

    from layerbench.backends.kubernetes.cluster import kubeconfig_client
    from layerbench.backends.kubernetes.manifests import host_label

    core = client.CoreV1Api(kubeconfig_client(KUBECONFIG, None, "test"))
    tag = secrets.token_hex(3)
    name = f"sweep-ctx-{tag}"
    gone = subprocess.Popen(["true"])
    gone.wait()  # a PID that has ended: the harness that "left" the namespace
    labels = {"layerbench": "1", "layerbench.campaign": name, "layerbench.label": name, "layerbench.role": "run",
              "layerbench.harness": str(gone.pid), "layerbench.host": host_label()}
    core.create_namespace({"metadata": {"name": name, "labels": labels}})
    try:
        core.create_namespaced_persistent_volume_claim(name, {
            "metadata": {"name": "data", "labels": labels},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}}})
        campaign = tmp_path / "c.yaml"
        campaign.write_text(yaml.safe_dump({
            "name": name, "baseline": "k", "workload": {"tables": 1},
            "variants": [{"name": "k", "backend": "kubernetes", "kubeconfig": str(KUBECONFIG),
                          "context": "layerbench-k8s-local"}]}))
        empty = tmp_path / "empty"
        (empty / "home").mkdir(parents=True)
        env = {**os.environ, "HOME": str(empty / "home"), "K8S_LOCAL_DIR": str(empty / "k8s"),
               "LAYERBENCH_WORK_DIR": str(empty / "work"), "LAYERBENCH_DB": str(empty / "none.db"),
               "DOCKER_HOST": f"unix://{empty}/no-docker.sock"}
        env.pop("KUBECONFIG", None)
        done = subprocess.run([sys.executable, "-m", "layerbench", "clean", "--campaign", str(campaign)],
                              capture_output=True, text=True, env=env, timeout=600, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"deleted namespace {name} (context of variant k: layerbench-k8s-local)" in done.stdout, done.stdout
        deadline = time.monotonic() + 300
        while name in [n.metadata.name for n in core.list_namespace(label_selector="layerbench=1").items]:
            assert time.monotonic() < deadline, "the namespace was not deleted"
            time.sleep(2)
        assert core.list_persistent_volume_claim_for_all_namespaces(
            label_selector=f"layerbench.campaign={name}").items == []
    finally:
        from kubernetes.client.exceptions import ApiException

        try:
            core.delete_namespace(name)
        except ApiException as error:
            assert error.status == 404
