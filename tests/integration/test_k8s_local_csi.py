"""scripts/k8s-local up --csi: a PVC bound by the CSI driver, a VolumeSnapshot of it ready, and a PVC created
from that snapshot (dataSource: VolumeSnapshot) that holds the bytes written before the snapshot.

Like test_k8s_local.py, it uses its own K8S_LOCAL_DIR (and the default ports: it fails rather than interferes
while another local cluster runs), and takes the cluster down with --wipe whatever happens. The first run on a
machine builds the driver and sidecars (`scripts/k8s-local build-csi`); later runs use the cached images.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from k8s_local import SHELL_IMAGE, LocalCluster, busybox_image_tar

pytestmark = [pytest.mark.k8s, pytest.mark.slow]

STATE_DIR = Path(os.environ.get("LAYERBENCH_TEST_K8S_CSI_DIR") or "/var/tmp/layerbench-k8s-pytest-csi")
NAMESPACE = "lb-k8s-csi-test"
DRIVER = "hostpath.csi.layerbench.local"
STORAGE_CLASS = "layerbench-csi-hostpath"
SNAPSHOT_CLASS = "layerbench-csi-hostpath-snapclass"


CLUSTER = LocalCluster(STATE_DIR)
run_script, kubectl, apply = CLUSTER.run_script, CLUSTER.kubectl, CLUSTER.apply


def get(kind: str, name: str) -> dict:
    return json.loads(kubectl("-n", NAMESPACE, "get", kind, name, "-o", "json").stdout)


def wait_until(what: str, check, timeout: float = 180) -> dict:
    """Poll kubectl until check(obj) holds for the object's JSON; fail with its last state."""
    kind, name = what.split("/")
    deadline, last = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        proc = kubectl("-n", NAMESPACE, "get", kind, name, "-o", "json", check=False)
        if proc.returncode == 0:
            last = json.loads(proc.stdout)
            if check(last):
                return last
        time.sleep(1)
    events = kubectl("-n", NAMESPACE, "get", "events", "--sort-by=.lastTimestamp", check=False).stdout
    pytest.fail(f"{what} not as expected within {timeout}s: {json.dumps(last.get('status'))}\n{events[-3000:]}")


def pod(name: str, claim: str, script: str) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "sh", "image": SHELL_IMAGE, "imagePullPolicy": "Never",
                "command": ["/bin/busybox", "sh", "-c", script],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }


def pvc(name: str, data_source: dict | None = None) -> dict:
    spec: dict = {"accessModes": ["ReadWriteOnce"], "storageClassName": STORAGE_CLASS,
                  "resources": {"requests": {"storage": "64Mi"}}}
    if data_source:
        spec["dataSource"] = data_source
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec}


def succeeded(obj: dict) -> bool:
    phase = obj.get("status", {}).get("phase")
    assert phase != "Failed", obj.get("status")
    return phase == "Succeeded"


@pytest.fixture(scope="module")
def csi_cluster():
    assert os.geteuid() == 0, "scripts/k8s-local needs root"
    try:
        up = run_script("up", "--csi", timeout=3600)
        run_script("image-import", str(busybox_image_tar(STATE_DIR / "busybox.tar")), timeout=120)
        yield up.stdout
    finally:
        run_script("down", "--wipe", timeout=300, check=False)


def test_a_pvc_restored_from_a_volume_snapshot_holds_the_data(csi_cluster):
    assert "CSI installed" in csi_cluster, csi_cluster
    kubectl("get", "storageclass", STORAGE_CLASS)
    kubectl("get", "volumesnapshotclass", SNAPSHOT_CLASS)
    kubectl("create", "namespace", NAMESPACE)
    wait_until("serviceaccount/default", lambda _: True, timeout=60)

    # a PVC bound by the driver (Immediate binding), written by a pod
    apply(pvc("source"))
    bound = wait_until("pvc/source", lambda o: o.get("status", {}).get("phase") == "Bound")
    pv = json.loads(kubectl("get", "pv", bound["spec"]["volumeName"], "-o", "json").stdout)
    assert pv["spec"]["csi"]["driver"] == DRIVER, pv["spec"]
    payload = f"layerbench csi test {time.time_ns()}"
    apply(pod("writer", "source", f"echo '{payload}' > /data/payload && mkdir -p /data/sub && "
                                  "echo nested > /data/sub/file && chmod 640 /data/payload && sync"))
    wait_until("pod/writer", succeeded)

    # a VolumeSnapshot of it becomes ready
    apply({"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
           "metadata": {"name": "snap", "namespace": NAMESPACE},
           "spec": {"volumeSnapshotClassName": SNAPSHOT_CLASS, "source": {"persistentVolumeClaimName": "source"}}})
    snap = wait_until("volumesnapshot/snap", lambda o: o.get("status", {}).get("readyToUse") is True)
    assert snap["status"].get("boundVolumeSnapshotContentName"), snap["status"]

    # the source changes after the snapshot: the restored volume must not see that
    apply(pod("changer", "source", "echo changed > /data/payload && rm -r /data/sub && sync"))
    wait_until("pod/changer", succeeded)

    # a PVC created from the snapshot holds the data as it was, modes included
    source = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"}
    apply(pvc("restored", source))
    restored = wait_until("pvc/restored", lambda o: o.get("status", {}).get("phase") == "Bound")
    assert restored["spec"]["dataSource"] == source, restored["spec"]
    assert restored["spec"]["volumeName"] != bound["spec"]["volumeName"]
    apply(pod("reader", "restored", "cat /data/payload /data/sub/file && stat -c %a /data/payload"))
    wait_until("pod/reader", succeeded)
    logs = kubectl("-n", NAMESPACE, "logs", "reader").stdout.splitlines()
    assert logs == [payload, "nested", "640"], logs

    # deleting the claims and the snapshot deletes the volumes and the snapshot's content (reclaim: Delete)
    kubectl("-n", NAMESPACE, "delete", "pod", "--all", "--wait=true", "--timeout=60s", timeout=90)
    kubectl("-n", NAMESPACE, "delete", "pvc", "restored", "source", "--wait=true", "--timeout=60s", timeout=90)
    kubectl("-n", NAMESPACE, "delete", "volumesnapshot", "snap", "--wait=true", "--timeout=60s", timeout=90)
    deadline = time.monotonic() + 60
    for name in (bound["spec"]["volumeName"], restored["spec"]["volumeName"]):
        while kubectl("get", "pv", name, check=False).returncode == 0:
            assert time.monotonic() < deadline, f"PV {name} not deleted after its claim"
            time.sleep(1)
    volumes = STATE_DIR / "csi-hostpath" / "volumes"
    assert not [p.name for p in volumes.iterdir() if not p.name.startswith(".")], list(volumes.iterdir())
    assert not list((STATE_DIR / "csi-hostpath" / "snapshots").iterdir())
    kubectl("delete", "namespace", NAMESPACE, "--wait=false")
