"""scripts/k8s-local end to end: a real single-node Kubernetes comes up, runs a pod, and goes away clean.

Not skipped when something is missing: a missing prerequisite (root, Go, Debian packages, a free port) is
a failure with the script's own message. The first run on a machine builds Kubernetes (~9 min on 2 cores);
later runs use the cached binaries (about a minute in all).

The test uses its own K8S_LOCAL_DIR, so it never wipes the state of a cluster someone started with the
default one; it does use the default ports and devices, so it fails (rather than interferes) while such a
cluster runs.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from k8s_local import SCRIPT, LocalCluster

pytestmark = [pytest.mark.k8s, pytest.mark.slow]

STATE_DIR = Path(os.environ.get("LAYERBENCH_TEST_K8S_DIR") or "/var/tmp/layerbench-k8s-pytest")
CACHE_ROOT = Path(os.environ.get("LAYERBENCH_CACHE_DIR", "/var/cache/layerbench"))
PAUSE_IMAGE = "localhost/layerbench/pause:3.10"
NAMESPACE = "lb-k8s-local-test"


CLUSTER = LocalCluster(STATE_DIR)
run_script, kubectl = CLUSTER.run_script, CLUSTER.kubectl


def settings() -> dict[str, str]:
    """cluster.env written by `up`: KUBECONFIG, NODE_IP, POD_CIDR, ..."""
    facts = {}
    for line in (STATE_DIR / "cluster.env").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            facts[key] = value
    return facts


def cluster_processes() -> list[str]:
    """Processes of this cluster: the cached Kubernetes/etcd binaries, and containerd or its shims whose
    command line names our state dir."""
    bin_prefix = str(CACHE_ROOT / "k8s") + "/"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if not argv or not argv[0] or state == "Z":
            continue
        argv0 = argv[0].decode(errors="replace")
        cmd = b" ".join(argv).decode(errors="replace")
        name = os.path.basename(argv0)
        ours = argv0.startswith(bin_prefix) or (name.startswith("containerd") and str(STATE_DIR) + "/" in cmd)
        if ours:
            found.append(f"{entry.name} {cmd}")
    return found


@pytest.fixture(scope="module")
def cluster():
    assert SCRIPT.is_file() and os.access(SCRIPT, os.X_OK), f"{SCRIPT} missing or not executable"
    assert os.geteuid() == 0, "scripts/k8s-local needs root (kubelet, containerd, iptables)"
    started = time.monotonic()
    try:
        up = run_script("up", timeout=2400)
        yield {"up_output": up.stdout, "up_seconds": time.monotonic() - started}
    finally:
        # always leave the machine as it was, even when a step above failed
        run_script("down", "--wipe", timeout=300, check=False)


def test_cluster_runs_a_guaranteed_pod_and_goes_away_clean(cluster):
    # status: every component running, node Ready, exit 0
    status = run_script("status", timeout=60)
    assert "cluster: usable" in status.stdout, status.stdout
    for component in (
        "etcd",
        "containerd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubelet",
        "kube-proxy",
    ):
        assert any(line.startswith(component) and "running" in line for line in status.stdout.splitlines()), (
            f"{component} not running:\n{status.stdout}"
        )
    assert "Ready" in status.stdout

    # env prints an export line for eval, pointing at the admin kubeconfig
    env_out = run_script("env", timeout=30).stdout
    assert f"export KUBECONFIG={STATE_DIR}/kubeconfig" in env_out, env_out
    assert (STATE_DIR / "kubeconfig").is_file()
    facts = settings()
    pod_cidr = ipaddress.ip_network(facts["POD_CIDR"])

    # a namespace, and its default ServiceAccount (made by kube-controller-manager; pods wait for it)
    kubectl("create", "namespace", NAMESPACE)
    deadline = time.monotonic() + 60
    while kubectl("-n", NAMESPACE, "get", "serviceaccount", "default", check=False).returncode != 0:
        assert time.monotonic() < deadline, "no default ServiceAccount in the new namespace after 60 s"
        time.sleep(0.5)

    # a pod from the locally built pause image, never pulled, requests == limits -> Guaranteed
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pause", "namespace": NAMESPACE, "labels": {"app": "k8s-local-test"}},
        "spec": {
            "terminationGracePeriodSeconds": 2,
            "containers": [
                {
                    "name": "pause",
                    "image": PAUSE_IMAGE,
                    "imagePullPolicy": "Never",
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "32Mi"},
                        "limits": {"cpu": "100m", "memory": "32Mi"},
                    },
                }
            ],
        },
    }
    manifest = STATE_DIR / "test-pod.json"
    manifest.write_text(json.dumps(pod))
    kubectl("apply", "-f", str(manifest))
    kubectl("-n", NAMESPACE, "wait", "--for=condition=Ready", "pod/pause", "--timeout=120s", timeout=150)
    got = json.loads(kubectl("-n", NAMESPACE, "get", "pod", "pause", "-o", "json").stdout)
    assert got["status"]["phase"] == "Running", got["status"]
    assert got["status"]["qosClass"] == "Guaranteed", got["status"]
    assert ipaddress.ip_address(got["status"]["podIP"]) in pod_cidr, got["status"]
    assert got["spec"]["nodeName"] == facts["NODE_NAME"]

    kubectl("-n", NAMESPACE, "delete", "pod", "pause", "--wait=true", "--timeout=60s", timeout=90)
    assert kubectl("-n", NAMESPACE, "get", "pod", "pause", check=False).returncode != 0
    kubectl("delete", "namespace", NAMESPACE, "--wait=false")

    # down --wipe: no process, mount or device of the cluster left, state dir gone
    down = run_script("down", "--wipe", timeout=300)
    assert "no process, mount or device of the cluster left" in down.stdout, down.stdout + down.stderr
    leftovers = cluster_processes()
    assert not leftovers, "processes left after down:\n" + "\n".join(leftovers)
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    for line in ps.splitlines():
        assert str(STATE_DIR) not in line or "pytest" in line, f"process left after down: {line}"
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    assert "lbk8s-" not in links, links
    mounts = Path("/proc/self/mounts").read_text()
    assert str(STATE_DIR) not in mounts, mounts
    assert not STATE_DIR.exists(), f"{STATE_DIR} still there after down --wipe"

    # status now says stopped and exits non-zero
    after = run_script("status", timeout=60, check=False)
    assert after.returncode != 0 and "cluster: not usable" in after.stdout, after.stdout
