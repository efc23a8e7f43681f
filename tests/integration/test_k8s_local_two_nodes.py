"""scripts/k8s-local up --nodes 2: two Ready nodes on one control plane, pods scheduled on each, a pod on
node 2 reaching a pod on node 1 by pod IP and by a Service's ClusterIP (and the reverse), each node's pods
on a CPU of their own, and `down --wipe` leaving no device, mount, cgroup or process behind.

Uses its own K8S_LOCAL_DIR and the default ports (it fails rather than interferes while another local
cluster runs); the busybox image is this machine's busybox-static (scripts/setup installs it).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from k8s_local import SHELL_IMAGE, LocalCluster, busybox_image_tar

pytestmark = [pytest.mark.k8s, pytest.mark.slow]

STATE_DIR = Path(os.environ.get("LAYERBENCH_TEST_K8S_2N_DIR") or "/var/tmp/layerbench-k8s-pytest-2n")
NAMESPACE = "lb-k8s-2n-test"
NODES = ("layerbench-node", "layerbench-node-2")


CLUSTER = LocalCluster(STATE_DIR)
run_script, kubectl, apply = CLUSTER.run_script, CLUSTER.kubectl, CLUSTER.apply


def wait_pod(name: str, phase: str, timeout: float = 120) -> dict:
    deadline, last = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        proc = kubectl("-n", NAMESPACE, "get", "pod", name, "-o", "json", check=False)
        if proc.returncode == 0:
            last = json.loads(proc.stdout)
            got = last.get("status", {}).get("phase")
            logs = kubectl("-n", NAMESPACE, "logs", name, check=False).stdout if got == "Failed" else ""
            assert got != "Failed" or phase == "Failed", (name, logs)
            if got == phase:
                return last
        time.sleep(1)
    pytest.fail(f"pod {name} not {phase} within {timeout}s: {json.dumps(last.get('status'))}")


def pod(name: str, node: str, script: str, labels: dict | None = None) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels or {}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node}, "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "sh", "image": SHELL_IMAGE, "imagePullPolicy": "Never",
                            "command": ["/bin/busybox", "sh", "-c", script]}],
        },
    }


@pytest.fixture(scope="module")
def two_nodes():
    assert os.geteuid() == 0, "scripts/k8s-local needs root"
    try:
        up = run_script("up", "--nodes", "2", timeout=3600)
        STATE_DIR.mkdir(exist_ok=True)
        run_script("image-import", str(busybox_image_tar(STATE_DIR / "busybox.tar")), timeout=120)
        yield up.stdout
    finally:
        run_script("down", "--wipe", timeout=300, check=False)


def test_two_nodes_schedule_talk_across_and_keep_to_their_cpus(two_nodes):
    nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    by_name = {n["metadata"]["name"]: n for n in nodes}
    assert sorted(by_name) == sorted(NODES)
    for i, name in enumerate(NODES, 1):
        ready = [c["status"] for c in by_name[name]["status"]["conditions"] if c["type"] == "Ready"]
        assert ready == ["True"], by_name[name]["status"]["conditions"]
        assert by_name[name]["metadata"]["labels"]["layerbench.k8s-local/node"] == str(i)
    kubectl("create", "namespace", NAMESPACE)
    deadline = time.monotonic() + 60
    while kubectl("-n", NAMESPACE, "get", "serviceaccount", "default", check=False).returncode != 0:
        assert time.monotonic() < deadline
        time.sleep(0.5)

    # a web server on each node, answering with its node's name; a Service in front of the one on node 1
    for i, node in enumerate(NODES, 1):
        apply(pod(f"web{i}", node, f"mkdir -p /www && echo {node} > /www/index.html && "
                                   "exec /bin/busybox httpd -f -p 8080 -h /www", {"app": f"web{i}"}))
    apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web1", "namespace": NAMESPACE},
           "spec": {"selector": {"app": "web1"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    web = {i: wait_pod(f"web{i}", "Running") for i in (1, 2)}
    assert [web[i]["spec"]["nodeName"] for i in (1, 2)] == list(NODES)
    service = json.loads(kubectl("-n", NAMESPACE, "get", "service", "web1", "-o", "json").stdout)
    cluster_ip = service["spec"]["clusterIP"]

    # from node 2: node 1's pod by pod IP and by ClusterIP; from node 1: node 2's pod; each reports its CPUs
    checks = {
        "from2": (NODES[1], f"wget -q -O - http://{web[1]['status']['podIP']}:8080/ && "
                            f"wget -q -O - http://{cluster_ip}/ && grep Cpus_allowed_list /proc/self/status"),
        "from1": (NODES[0], f"wget -q -O - http://{web[2]['status']['podIP']}:8080/ && "
                            "grep Cpus_allowed_list /proc/self/status"),
    }
    for name, (node, script) in checks.items():
        apply(pod(name, node, script))
    out = {name: kubectl("-n", NAMESPACE, "logs", name).stdout.split() if wait_pod(name, "Succeeded") else []
           for name in checks}
    assert out["from2"] == [NODES[0], NODES[0], "Cpus_allowed_list:", "1"], out
    assert out["from1"] == [NODES[1], "Cpus_allowed_list:", "0"], out
    kubectl("delete", "namespace", NAMESPACE, "--wait=false")

    down = run_script("down", "--wipe", timeout=300)
    assert "no process, mount or device of the cluster left" in down.stdout, down.stdout + down.stderr
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    assert "lbk8s-" not in links, links
    assert str(STATE_DIR) not in Path("/proc/self/mounts").read_text()
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        assert not (hierarchy / "lbk8s-node2").exists() and not (hierarchy / "lbk8s-node1").exists(), hierarchy
    iptables = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    assert "CNI-LBK8S-NODES" not in iptables
