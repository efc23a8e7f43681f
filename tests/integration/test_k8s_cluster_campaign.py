"""The two-node local cluster with the CSI driver (scripts/k8s-local up --nodes 2 --csi), one for every test that
needs two nodes or the driver, shared by this module's tests:
- the cluster itself: two Ready nodes on one control plane, pods scheduled on each, a pod on node 2 reaching a pod
  on node 1 by pod IP and by a Service's ClusterIP (and the reverse), each node's pods on a CPU of their own;
- the CSI driver: a PVC bound by it, a VolumeSnapshot of it ready, and a PVC created from that snapshot
  (dataSource: VolumeSnapshot) that holds the bytes written before the snapshot;
- the kubernetes backend on it: one campaign whose server pod is on node 1 and whose sysbench Job is on node 2
  (and a variant with the Job on the server's node), every run's PVC made from the campaign's VolumeSnapshot of
  the dataset and its bytes checked; and `validate`'s refusals before anything is created;
- last, `down` leaving no device, mount, cgroup, chain or process behind (when this module started it).

What ran where is read from the Kubernetes API by a watcher of this test (pods' spec.nodeName, PVCs'
spec.dataSource), not from the campaign file; the run records must say the same. The cluster uses its own
K8S_LOCAL_DIR; it is started here when it is not running and taken down at the end only then. The busybox image of
the plain pods is this machine's busybox-static (scripts/setup installs it)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_host_campaign import campaign_file, run_cli

from conftest import K8S_SCRIPT
from helpers import stored_rows
from k8s_local import SHELL_IMAGE, LocalCluster, busybox_image_tar
from layerbench.backends.docker.daemon import docker_client
from layerbench.campaign.models import campaign_as_dict, parse_campaign, smoke_version
from layerbench.run import orchestrator
from layerbench.server.mysql_rootfs import ensure_rootfs
from layerbench.server.postgresql_image import ensure_postgresql_image
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.k8s, pytest.mark.slow]

STATE_DIR = Path(os.environ.get("LAYERBENCH_TEST_K8S_2N_CAMPAIGN_DIR") or "/var/tmp/layerbench-k8s-2n-campaign")
NODE_A, NODE_B = "layerbench-node", "layerbench-node-2"  # the CSI driver's volumes live on node A (node 1)
OWN = f"it-k8s-2n-{os.getpid()}"
TINY = {"tables": 1, "table_size": 1000, "threads": 1, "duration": 2, "warmup": 0}
SNAPSHOT = {"storage": "pvc", "storage_class": "layerbench-csi-hostpath",
            "snapshot_class": "layerbench-csi-hostpath-snapclass"}
SERVER = {"backend": "kubernetes", "kind": "statefulset", "qos": "burstable",
          "requests": {"cpu": "100m", "memory": "512Mi"}, "node_selector": {"kubernetes.io/hostname": NODE_A},
          "client": "job", **SNAPSHOT}


CLUSTER = LocalCluster(STATE_DIR)
STARTED = {"here": False}  # whether this module started the cluster (then it takes it down, and checks that)


@pytest.fixture(scope="module")
def two_node_cluster() -> Iterator[Path]:
    """The two-node CSI cluster; K8S_LOCAL_DIR points the backend (and its image import) at it meanwhile. Its
    state folder is kept from one session to the next (as the one-node cluster's is): its nodes keep the images
    imported into them, which saves a warm session about 40 s. A folder made with other settings (another
    version of scripts/k8s-local) is wiped and the cluster made anew, once."""
    cluster = CLUSTER
    started = cluster.run_script("status", timeout=60, check=False).returncode != 0
    if started:
        up = cluster.run_script("up", "--nodes", "2", "--csi", timeout=2400, check=False)
        if up.returncode != 0 and "down --wipe" in up.stderr + up.stdout:  # made with other settings
            cluster.run_script("down", "--wipe", timeout=600, check=False)
            up = cluster.run_script("up", "--nodes", "2", "--csi", timeout=2400, check=False)
        if up.returncode != 0:  # a half-up cluster holds the ports every other cluster of the session needs
            cluster.run_script("down", "--wipe", timeout=600, check=False)
            pytest.fail(f"scripts/k8s-local up --nodes 2 --csi exited {up.returncode}\n"
                        f"--- stdout\n{up.stdout[-6000:]}\n--- stderr\n{up.stderr[-6000:]}")
    STARTED["here"] = started
    cluster.run_script("image-import", str(busybox_image_tar(STATE_DIR / "busybox.tar")), timeout=120)
    before = os.environ.get("K8S_LOCAL_DIR")
    os.environ["K8S_LOCAL_DIR"] = str(STATE_DIR)
    try:
        yield STATE_DIR / "kubeconfig"
    finally:
        if before is None:
            os.environ.pop("K8S_LOCAL_DIR", None)
        else:
            os.environ["K8S_LOCAL_DIR"] = before
        if started:
            cluster.run_script("down", timeout=600, check=False)


def api_clients(kubeconfig: Path) -> tuple[Any, Any]:
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(kubeconfig))
    return client.CoreV1Api(api), client.CustomObjectsApi(api)


class Watcher:
    """Polls the API for this campaign's pods and PVCs while it runs (its namespaces are gone afterwards)."""

    def __init__(self, kubeconfig: Path) -> None:
        self.core, _ = api_clients(kubeconfig)
        self.pods: dict[str, dict[str, str]] = {}  # namespace/name -> role, node
        self.claims: dict[str, Any] = {}  # namespace/name -> spec.dataSource (or None)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self) -> None:
        selector = f"layerbench.campaign={NAME}"
        while not self.stop.is_set():
            try:
                for pod in self.core.list_pod_for_all_namespaces(label_selector=selector).items:
                    if pod.spec.node_name:
                        self.pods[f"{pod.metadata.namespace}/{pod.metadata.name}"] = {
                            "role": pod.metadata.labels.get("layerbench.role"), "node": pod.spec.node_name}
                for claim in self.core.list_persistent_volume_claim_for_all_namespaces(label_selector=selector).items:
                    source = claim.spec.data_source
                    self.claims[f"{claim.metadata.namespace}/{claim.metadata.name}"] = {
                        "source": {"kind": source.kind, "apiGroup": source.api_group} if source else None,
                        "volume": claim.spec.volume_name}
            except Exception:  # a namespace going away between list calls
                pass
            time.sleep(0.3)


TWO_NODE_EXAMPLE = Path(__file__).resolve().parents[2] / "src/layerbench/data/examples/k8s-two-nodes.yaml"
NAME = f"{OWN}-smoke"  # the campaign's name (and label) once smoke_version has shrunk it


@pytest.fixture(scope="module")
def campaign(two_node_cluster: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """examples/k8s-two-nodes.yaml in smoke mode (one run per variant, as `run --smoke` makes it; the examples'
    smoke test in tests/e2e leaves this example to this module, whose cluster it needs): the server on node A,
    the Job on node A through the Service (on-node-svc), on node B through the Service (cross-node-svc) and on
    node B through the pod IP (cross-node-pod)."""
    tmp = tmp_path_factory.mktemp("k8s2n")
    data = {**yaml.safe_load(TWO_NODE_EXAMPLE.read_text()), "name": OWN, "output": str(tmp / "out")}
    path = tmp / "k8s-two-nodes-smoke.yaml"
    path.write_text(yaml.safe_dump(campaign_as_dict(smoke_version(parse_campaign(data)))))
    watcher = Watcher(two_node_cluster)
    watcher.thread.start()
    try:
        with Store(tmp / "out" / "layerbench.db") as store:
            outcome = orchestrator.run_campaign(parse_campaign(yaml.safe_load(path.read_text())), store)
            rows = [{**dict(r), "details": json.loads(r["details"])} for r in stored_rows(store, outcome.campaign_id)]
    finally:
        watcher.stop.set()
        watcher.thread.join(timeout=10)
    yield {"runs": {r["variant"]: r for r in rows}, "watcher": watcher, "campaign_file": path,
           "kubeconfig": two_node_cluster}


def test_the_two_node_example_validates(two_node_cluster: Path) -> None:
    checked = run_cli(["validate", str(TWO_NODE_EXAMPLE)], timeout=600)
    assert checked.returncode == 0 and "valid;" in checked.stdout, checked.stderr


def namespace_of(watcher: Watcher, volume: str) -> str:
    """The run's namespace, as the API showed it: where the PVC bound to the run's volume was."""
    return next(key.split("/")[0] for key, claim in watcher.claims.items() if claim["volume"] == volume)


def test_the_job_runs_on_the_other_node_as_the_api_says(campaign: dict[str, Any]) -> None:
    runs, pods = campaign["runs"], campaign["watcher"].pods
    assert {v: r["status"] for v, r in runs.items()} == {"on-node-svc": "ok", "cross-node-svc": "ok",
                                                          "cross-node-pod": "ok"}
    for variant, client_node in (("cross-node-svc", NODE_B), ("cross-node-pod", NODE_B), ("on-node-svc", NODE_A)):
        backend = runs[variant]["details"]["environment"]["backend"]
        placement = backend["placement"]
        ns = namespace_of(campaign["watcher"], backend["pvc"]["volume"])
        seen = {p["role"]: p["node"] for key, p in pods.items() if key.startswith(f"{ns}/") and (
            p["role"] == "server" or key.split("/")[1].startswith("sysbench-run"))}
        assert seen == {"server": NODE_A, "client": client_node}, pods  # from the API
        assert (placement["server_node"], placement["client_node"]) == (NODE_A, client_node)  # the record agrees
        assert placement["network_path"].startswith("cross-node" if client_node != NODE_A else "on-node")
        assert len(placement["rtt_us"]) == 5 and placement["rtt_median_us"] > 0
    assert "pod IP" in runs["cross-node-pod"]["details"]["environment"]["backend"]["placement"]["network_path"]
    out = campaign["campaign_file"].parent / "report"
    done = run_cli(["report", str(campaign["campaign_file"]), "-f", "md", "-o", str(out)])
    assert done.returncode == 0, done.stderr
    report = (out / "report.md").read_text()
    table = report[report.index("Where server and client ran"):]
    assert f"| `cross-node-svc` | {NODE_A} | {NODE_B} | cross-node" in table, table[:800]


def test_every_runs_pvc_is_restored_from_the_volume_snapshot_and_checked(campaign: dict[str, Any]) -> None:
    runs, claims, pods = campaign["runs"], campaign["watcher"].claims, campaign["watcher"].pods
    run_claims = {k: v for k, v in claims.items() if k.endswith("/data-db-0")}
    assert len(run_claims) == 3, claims
    assert all(v["source"] == {"kind": "VolumeSnapshot", "apiGroup": "snapshot.storage.k8s.io"}
               for v in run_claims.values())
    seeds = {k.split("/")[0] for k, p in pods.items() if p["role"] == "seed"}
    assert len(seeds) == 1, pods  # one seed snapshot for the dataset of this campaign, three runs from it
    for run in runs.values():
        restore = run["details"]["reset"]["restore"]
        assert restore["method"] == "volumesnapshot" and restore["problems"] == []
        assert restore["files"] > 10 and restore["verified"].startswith("sha256 of every file")
        assert run["details"]["environment"]["backend"]["pvc"]["data_source"]["kind"] == "VolumeSnapshot"


def test_nothing_is_left_in_the_cluster(campaign: dict[str, Any]) -> None:
    core, custom = api_clients(campaign["kubeconfig"])
    selector = f"layerbench.campaign={NAME}"
    assert core.list_namespace(label_selector=selector).items == []  # run namespaces and the seed's
    contents = custom.list_cluster_custom_object("snapshot.storage.k8s.io", "v1", "volumesnapshotcontents",
                                                 label_selector=selector)["items"]
    assert contents == []


REMOTE_EXAMPLE = Path(__file__).resolve().parents[2] / "src/layerbench/data/examples/k8s-remote-two-node.yaml"
PUSHED = re.compile(r"^(?P<ref>\S+)@sha256:[0-9a-f]{64} \(\w+, \d+ s\)$")


def harness_inside(*cmd: str, stdin: str | None = None, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """A command in the isolated harness beside this module's cluster (scripts/k8s-local harness exec)."""
    return subprocess.run([str(K8S_SCRIPT), "harness", "exec", "--", *cmd], input=stdin, capture_output=True,
                          text=True, timeout=timeout, env=CLUSTER.env())


def pushed_to_lab_registry() -> dict[str, str]:
    """repository -> reference of every image `layerbench image push` copies into this cluster's registry (its
    blobs already there from an earlier session are not copied again): MySQL's of the 9.7 rootfs and PostgreSQL's
    (built here first when missing, as a postgresql variant's first run builds it) among them."""
    ensure_rootfs("9.7")
    ensure_postgresql_image(docker_client())
    facts = dict(line.split("=", 1) for line in (STATE_DIR / "cluster.env").read_text().splitlines() if "=" in line)
    done = run_cli(["image", "push", facts["REGISTRY"].strip()], timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    refs = [m["ref"] for line in done.stdout.splitlines() if (m := PUSHED.match(line.strip()))]
    return {ref.split("/", 1)[1].split(":")[0]: ref for ref in refs}


def test_the_remote_two_node_example_runs_from_the_isolated_harness(two_node_cluster: Path) -> None:
    """examples/k8s-remote-two-node.yaml in smoke mode (smoke_version: one run per variant, 3 s), run by the isolated
    harness, which sees none of the nodes' processes and reaches only the API server and the registry (issue #41's
    first done-when): MariaDB, MySQL and PostgreSQL pods on node A from the registry, sysbench as Jobs on node B,
    every run's PVC made from a VolumeSnapshot of a dataset made and hashed in the cluster (PostgreSQL's by its own
    image: initdb, sysbench's pgsql driver, a fast shutdown; issue #46), a Burstable neighbour pod from the registry
    on the server's node whose CPU was read in it, and "Where the overhead went" filled with each server pod's CPU
    from its node; PostgreSQL's settings and block counters read by psql in its pod. The harness is brought up here
    when it is not up, and taken down again then."""
    up_here = CLUSTER.run_script("harness", "status", timeout=60, check=False).returncode != 0
    if up_here:
        CLUSTER.run_script("harness", "up", timeout=1800)
    name, home = f"{OWN}-remote", "/home/layerbench"
    try:
        refs = pushed_to_lab_registry()
        data = {**yaml.safe_load(REMOTE_EXAMPLE.read_text()), "name": name, "output": f"{home}/results-{name}"}
        data["variants"][0]["image"] = refs["layerbench/mariadb"]
        data["variants"][0]["neighbours"][0]["image"] = refs["layerbench/neighbours"]
        data["variants"][1]["image"] = refs["layerbench/mysql"]
        data["variants"][1]["client_image"] = refs["layerbench/mariadb"]
        assert data["variants"][2]["server"]["flavour"] == "postgresql"
        data["variants"][2]["image"] = refs["layerbench/postgresql"]
        smoke = smoke_version(parse_campaign(data))
        assert harness_inside("sh", "-c", f"cat > ~/{name}.yaml", stdin=yaml.safe_dump(data)).returncode == 0
        checked = harness_inside("sh", "-c", f"cd ~ && layerbench validate {name}.yaml")
        assert checked.returncode == 0 and "valid;" in checked.stdout, checked.stdout + checked.stderr
        done = harness_inside("sh", "-c", f"cd ~ && layerbench run --smoke {name}.yaml")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        query = ("import json, sqlite3, sys\nfor v, s, d in sqlite3.connect(sys.argv[1]).execute("
                 "'select variant, status, details from runs'):\n    print(json.dumps([v, s, json.loads(d)]))\n")
        rows = harness_inside("python3", "-c", query, f"{home}/results-{name}/layerbench.db").stdout.splitlines()
        report = harness_inside("sh", "-c", f"cat {home}/results-{name}/*-{smoke.name}/report.md")  # the run's own
    finally:
        harness_inside("rm", "-rf", f"{home}/{name}.yaml", f"{home}/results-{name}")
        if up_here:
            CLUSTER.run_script("harness", "down", timeout=600, check=False)
    runs = {variant: (status, details) for variant, status, details in map(json.loads, rows)}
    assert {v: s for v, (s, _) in runs.items()} == {"mariadb": "ok", "mysql": "ok", "postgresql": "ok"}, rows
    for variant, (_, details) in runs.items():
        backend = details["environment"]["backend"]
        repository = refs[f"layerbench/{variant}"].rpartition(":")[0]  # pulled from the registry: its digest there
        assert backend["image"] == refs[f"layerbench/{variant}"] and backend["image_id"].startswith(
            f"{repository}@sha256:"), backend["image_id"]
        assert backend["placement"]["server_node"] == NODE_A and backend["placement"]["client_node"] == NODE_B
        assert backend["server_cpu_source"].startswith("the pod's node, through the exec API")
        restore = details["reset"]["restore"]
        assert restore["method"] == "volumesnapshot" and restore["problems"] == [] and restore["files"] > 10
        assert backend["data"].startswith("seeded in the cluster by Jobs"), backend["data"]  # seed.SEEDED
        (hog,) = details["neighbours"]["neighbours"]
        assert hog["check"]["running"] and hog["check"]["node"] == NODE_A and hog["check"]["qos_class"] == "Burstable"
        cpu = details["resources"]["cpu_seconds"]
        assert cpu[f"server@{NODE_A}"] > 0 and cpu[f"neighbour:burstable-hog@{NODE_A}"] > 0, cpu
        assert "neighbour:burstable-hog" not in cpu and f"other@{NODE_A}" in cpu
    pg = runs["postgresql"][1]
    backend = pg["environment"]["backend"]
    assert backend["server_flavour"] == "postgresql" and backend["dataset_path"] == "seeded in the cluster by Jobs"
    assert pg["reset"]["dataset_prepared"]["where"].startswith("seeded in the cluster by Jobs in namespace ")
    assert pg["reset"]["dataset_prepared"]["image"] == refs["layerbench/postgresql"]
    assert backend["server_sql"].startswith("exec in the server container: psql")
    assert pg["environment"]["server_variables"]["version"].startswith("15."), pg["environment"]["server_variables"]
    assert pg["environment"]["server_variables"]["synchronous_commit"] == "on"  # the run's, not the seed's
    assert pg["io"]["server_status"].get("pg_blks_hit", 0) > 0, pg["io"]  # pg_stat_database, read in the pod
    assert report.returncode == 0, report.stderr[-2000:]
    overhead = report.stdout[report.stdout.index("Where the overhead went"):]
    assert f"server@{NODE_A}" in overhead[:3000], overhead[:3000]
    core, custom = api_clients(two_node_cluster)
    assert core.list_namespace(label_selector=f"layerbench.campaign={smoke.name}").items == []
    assert custom.list_cluster_custom_object("snapshot.storage.k8s.io", "v1", "volumesnapshotcontents",
                                             label_selector=f"layerbench.campaign={smoke.name}")["items"] == []


@pytest.mark.parametrize(("changes", "expected"), [
    ({"snapshot_class": "no-such-class"},
     "snapshot_class: 'no-such-class' is not a VolumeSnapshotClass of the cluster"),
    ({"storage_size": "1Mi"}, "storage_size: 1Mi is smaller than the dataset"),
    ({"node_selector": {}, "client_node_selector": {"kubernetes.io/hostname": NODE_A}, "client_anti_affinity": True},
     f"client_node_selector: the sysbench Job can only run on node {NODE_A}, where the server may be scheduled"),
    ({"client_node_selector": {"kubernetes.io/hostname": NODE_A}, "client_anti_affinity": True},
     f"client_anti_affinity: the server and the sysbench Job can only run on node {NODE_A}"),
])
def test_validate_refuses_in_one_line_before_anything_starts(two_node_cluster: Path, tmp_path: Path,
                                                             changes: dict, expected: str) -> None:
    path = campaign_file(tmp_path, name=OWN, repetitions=1, baseline="k", variants=[
        {"name": "k", **SERVER, **changes}], workload=TINY)
    done = run_cli(["validate", str(path)], env={"K8S_LOCAL_DIR": str(STATE_DIR)})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and expected in lines[0], done.stderr
    core, _ = api_clients(two_node_cluster)
    assert core.list_namespace(label_selector=f"layerbench.campaign={OWN}").items == []



# --- the cluster itself, without the backend: plain pods of this machine's busybox ---------------------------

NODES = (NODE_A, NODE_B)


def wait_object(namespace: str, what: str, check: Any, timeout: float = 180) -> dict:
    """Poll kubectl until check(obj) holds for the object's JSON; fail with its last state and the events."""
    kind, name = what.split("/")
    deadline, last = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        proc = CLUSTER.kubectl("-n", namespace, "get", kind, name, "-o", "json", check=False)
        if proc.returncode == 0:
            last = json.loads(proc.stdout)
            if check(last):
                return last
        time.sleep(1)
    events = CLUSTER.kubectl("-n", namespace, "get", "events", "--sort-by=.lastTimestamp", check=False).stdout
    pytest.fail(f"{what} not as expected within {timeout}s: {json.dumps(last.get('status'))}\n{events[-3000:]}")


def in_phase(phase: str) -> Any:
    def check(obj: dict) -> bool:
        got = obj.get("status", {}).get("phase")
        assert got != "Failed" or phase == "Failed", obj.get("status")
        return got == phase
    return check


def shell_pod(namespace: str, name: str, script: str, *, node: str | None = None, claim: str | None = None,
              labels: dict | None = None) -> dict:
    """A pod running `script` in busybox's sh, on `node` if given, with the PVC `claim` at /data if given."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "sh", "image": SHELL_IMAGE, "imagePullPolicy": "Never",
                        "command": ["/bin/busybox", "sh", "-c", script],
                        **({"volumeMounts": [{"name": "data", "mountPath": "/data"}]} if claim else {})}]}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if claim:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                             "labels": labels or {}}, "spec": spec}


def new_namespace(name: str) -> None:
    CLUSTER.kubectl("create", "namespace", name)
    wait_object(name, "serviceaccount/default", lambda _: True, timeout=60)


def test_two_nodes_schedule_talk_across_and_keep_to_their_cpus(two_node_cluster: Path) -> None:
    ns = f"lb-k8s-2n-test-{os.getpid()}"
    nodes = json.loads(CLUSTER.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    by_name = {n["metadata"]["name"]: n for n in nodes}
    assert sorted(by_name) == sorted(NODES)
    for i, name in enumerate(NODES, 1):
        ready = [c["status"] for c in by_name[name]["status"]["conditions"] if c["type"] == "Ready"]
        assert ready == ["True"], by_name[name]["status"]["conditions"]
        assert by_name[name]["metadata"]["labels"]["layerbench.k8s-local/node"] == str(i)
    new_namespace(ns)
    # a web server on each node, answering with its node's name; a Service in front of the one on node 1
    for i, node in enumerate(NODES, 1):
        CLUSTER.apply(shell_pod(ns, f"web{i}", f"mkdir -p /www && echo {node} > /www/index.html && "
                                               "exec /bin/busybox httpd -f -p 8080 -h /www",
                                node=node, labels={"app": f"web{i}"}))
    CLUSTER.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web1", "namespace": ns},
                   "spec": {"selector": {"app": "web1"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    web = {i: wait_object(ns, f"pod/web{i}", in_phase("Running")) for i in (1, 2)}
    assert [web[i]["spec"]["nodeName"] for i in (1, 2)] == list(NODES)
    cluster_ip = json.loads(CLUSTER.kubectl("-n", ns, "get", "service", "web1", "-o", "json").stdout)[
        "spec"]["clusterIP"]
    # from node 2: node 1's pod by pod IP and by ClusterIP; from node 1: node 2's pod; each reports its CPUs
    checks = {
        "from2": (NODES[1], f"wget -q -O - http://{web[1]['status']['podIP']}:8080/ && "
                            f"wget -q -O - http://{cluster_ip}/ && grep Cpus_allowed_list /proc/self/status"),
        "from1": (NODES[0], f"wget -q -O - http://{web[2]['status']['podIP']}:8080/ && "
                            "grep Cpus_allowed_list /proc/self/status"),
    }
    for name, (node, script) in checks.items():
        CLUSTER.apply(shell_pod(ns, name, script, node=node))
    out = {name: CLUSTER.kubectl("-n", ns, "logs", name).stdout.split()
           if wait_object(ns, f"pod/{name}", in_phase("Succeeded")) else [] for name in checks}
    assert out["from2"] == [NODES[0], NODES[0], "Cpus_allowed_list:", "1"], out
    assert out["from1"] == [NODES[1], "Cpus_allowed_list:", "0"], out
    CLUSTER.kubectl("delete", "namespace", ns, "--wait=false")


CSI_DRIVER = "hostpath.csi.layerbench.local"


def csi_claim(ns: str, name: str, data_source: dict | None = None) -> dict:
    spec: dict = {"accessModes": ["ReadWriteOnce"], "storageClassName": SNAPSHOT["storage_class"],
                  "resources": {"requests": {"storage": "64Mi"}}}
    if data_source:
        spec["dataSource"] = data_source
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
            "spec": spec}


def test_a_pvc_restored_from_a_volume_snapshot_holds_the_data(two_node_cluster: Path) -> None:
    ns, kubectl = f"lb-k8s-csi-test-{os.getpid()}", CLUSTER.kubectl
    kubectl("get", "storageclass", SNAPSHOT["storage_class"])
    kubectl("get", "volumesnapshotclass", SNAPSHOT["snapshot_class"])
    new_namespace(ns)
    # a PVC bound by the driver (Immediate binding), written by a pod
    CLUSTER.apply(csi_claim(ns, "source"))
    bound = wait_object(ns, "pvc/source", lambda o: o.get("status", {}).get("phase") == "Bound")
    pv = json.loads(kubectl("get", "pv", bound["spec"]["volumeName"], "-o", "json").stdout)
    assert pv["spec"]["csi"]["driver"] == CSI_DRIVER, pv["spec"]
    payload = f"layerbench csi test {time.time_ns()}"
    CLUSTER.apply(shell_pod(ns, "writer", f"echo '{payload}' > /data/payload && mkdir -p /data/sub && "
                                          "echo nested > /data/sub/file && chmod 640 /data/payload && sync",
                            claim="source"))
    wait_object(ns, "pod/writer", in_phase("Succeeded"))
    # a VolumeSnapshot of it becomes ready
    CLUSTER.apply({"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
                   "metadata": {"name": "snap", "namespace": ns},
                   "spec": {"volumeSnapshotClassName": SNAPSHOT["snapshot_class"],
                            "source": {"persistentVolumeClaimName": "source"}}})
    snap = wait_object(ns, "volumesnapshot/snap", lambda o: o.get("status", {}).get("readyToUse") is True)
    content = snap["status"].get("boundVolumeSnapshotContentName")
    assert content, snap["status"]
    handle = json.loads(kubectl("get", "volumesnapshotcontent", content, "-o", "json").stdout)["status"][
        "snapshotHandle"]
    # the source changes after the snapshot: the restored volume must not see that
    CLUSTER.apply(shell_pod(ns, "changer", "echo changed > /data/payload && rm -r /data/sub && sync",
                            claim="source"))
    wait_object(ns, "pod/changer", in_phase("Succeeded"))
    # a PVC created from the snapshot holds the data as it was, modes included
    source = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"}
    CLUSTER.apply(csi_claim(ns, "restored", source))
    restored = wait_object(ns, "pvc/restored", lambda o: o.get("status", {}).get("phase") == "Bound")
    assert restored["spec"]["dataSource"] == source, restored["spec"]
    assert restored["spec"]["volumeName"] != bound["spec"]["volumeName"]
    CLUSTER.apply(shell_pod(ns, "reader", "cat /data/payload /data/sub/file && stat -c %a /data/payload",
                            claim="restored"))
    wait_object(ns, "pod/reader", in_phase("Succeeded"))
    logs = kubectl("-n", ns, "logs", "reader").stdout.splitlines()
    assert logs == [payload, "nested", "640"], logs
    # deleting the claims and the snapshot deletes this test's volumes and the snapshot's content (reclaim: Delete)
    handles = [json.loads(kubectl("get", "pv", c["spec"]["volumeName"], "-o", "json").stdout)["spec"]["csi"][
        "volumeHandle"] for c in (bound, restored)]
    kubectl("-n", ns, "delete", "pod", "--all", "--wait=true", "--timeout=60s", timeout=90)
    kubectl("-n", ns, "delete", "pvc", "restored", "source", "--wait=true", "--timeout=60s", timeout=90)
    kubectl("-n", ns, "delete", "volumesnapshot", "snap", "--wait=true", "--timeout=60s", timeout=90)
    deadline = time.monotonic() + 60
    for name in (bound["spec"]["volumeName"], restored["spec"]["volumeName"]):
        while kubectl("get", "pv", name, check=False).returncode == 0:
            assert time.monotonic() < deadline, f"PV {name} not deleted after its claim"
            time.sleep(1)
    store = STATE_DIR / "csi-hostpath"
    left = [p.name for p in (store / "volumes").iterdir() for h in handles if h in p.name]
    left += [p.name for p in (store / "snapshots").iterdir() if handle in p.name]
    assert left == [], left
    kubectl("delete", "namespace", ns, "--wait=false")


def test_last_down_leaves_no_device_mount_cgroup_chain_or_process(two_node_cluster: Path) -> None:
    """Last in this module: when it started the cluster, `down` leaves nothing of it running on the host (no process,
    mount, link, cgroup or iptables chain; its state folder stays, for the next session: test_k8s_local checks what
    `down --wipe` removes); a cluster that was running before is someone else's and stays up."""
    if not STARTED["here"]:
        pytest.skip("the two-node cluster was running before this module: not taken down")
    down = CLUSTER.run_script("down", timeout=300)
    assert "no process, mount or device of the cluster left" in down.stdout, down.stdout + down.stderr
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    assert "lbk8s-" not in links, links
    assert str(STATE_DIR) not in Path("/proc/self/mounts").read_text()
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        assert not (hierarchy / "lbk8s-node2").exists() and not (hierarchy / "lbk8s-node1").exists(), hierarchy
    iptables = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    assert "CNI-LBK8S-NODES" not in iptables
