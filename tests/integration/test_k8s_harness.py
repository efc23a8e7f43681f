"""The isolated harness of scripts/k8s-local (issue #41 item 1, scripts/k8s-local.d/harness.sh): from inside it, none
of the node's processes, files or pod cgroups are visible and only the API server's and the registry's ports answer;
examples/k8s-remote.yaml run there in smoke mode (MariaDB pods from the lab registry, sysbench as Jobs, reset:
reprepare; no sysbench on the harness's PATH) completes, and its pods ran on the cluster's nodes; `client:
port-forward` runs there with the harness's own sysbench and kubectl put on its PATH. The harness is brought up
here when it is not up, and taken down again if this module brought it up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import K8S_SCRIPT
from layerbench.backends.kubernetes.cleanup import _kubernetes_core
from layerbench.campaign.models import parse_campaign, smoke_version
from layerbench.server.image import image_tag

pytestmark = [pytest.mark.integration, pytest.mark.k8s, pytest.mark.slow]

OWN = f"it-harness-{os.getpid()}"  # this module's campaign: it checks only what it created
STATE = Path(os.environ.get("K8S_LOCAL_DIR") or "/var/tmp/layerbench-k8s")


def harness(*args: str, stdin: str | None = None, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(K8S_SCRIPT), "harness", *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout)


def inside(*cmd: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return harness("exec", "--", *cmd, stdin=stdin)


def cluster_facts() -> dict[str, str]:
    """What scripts/k8s-local wrote of the running cluster: cluster.env and settings.env."""
    lines = [*(STATE / "cluster.env").read_text().splitlines(), *(STATE / "settings.env").read_text().splitlines()]
    return {key: value.strip() for key, _, value in (line.partition("=") for line in lines) if value}


@pytest.fixture(scope="module")
def isolated(k8s_cluster) -> None:
    running = harness("status").returncode == 0
    if not running:
        up = harness("up", timeout=1800)
        if up.returncode != 0:
            harness("down", timeout=300)
        assert up.returncode == 0, f"harness up failed:\n{up.stdout[-2000:]}\n{up.stderr[-3000:]}"
    try:
        yield
    finally:
        if not running:
            harness("down", timeout=300)


def test_the_harness_sees_no_process_or_file_of_the_node_and_reaches_only_the_api_and_the_registry(
        isolated: None) -> None:
    node_programs = {"kubelet", "containerd", "kube-apiserver", "etcd", "kube-proxy"}
    here = {Path(p).name for p in (Path(f"/proc/{pid}/comm").read_text().strip() for pid in os.listdir("/proc")
                                   if pid.isdigit() and Path(f"/proc/{pid}/comm").exists())}
    assert node_programs <= here  # the node's processes run on this machine, so the check below can fail
    seen = inside("ps", "-eo", "comm=")
    assert seen.returncode == 0 and seen.stdout.split() and not node_programs & set(seen.stdout.split()), seen.stdout
    assert STATE.is_dir() and inside("test", "-e", str(STATE)).returncode == 1
    assert inside("test", "-e", "/var/lib/kubelet").returncode == 1
    pods_cgroups = [*Path("/sys/fs/cgroup/pids").glob("kubepods"), *Path("/sys/fs/cgroup/pids").glob("*/kubepods")]
    assert pods_cgroups  # the pods' cgroups, here; inside, /sys/fs/cgroup shows the harness's own cgroup only
    found = inside("find", "/sys/fs/cgroup", "-maxdepth", "3", "-name", "kubepods")
    assert found.returncode == 0 and found.stdout == "", found.stdout
    facts = cluster_facts()
    node, kubelet = facts["NODE_IP"], facts["KUBELET_PORT"]
    api, registry = (int(facts[key].rsplit(":", 1)[1]) for key in ("APISERVER", "REGISTRY"))
    probe = ("import socket, sys\nfor port in map(int, sys.argv[2:]):\n    try:\n"
             "        socket.create_connection((sys.argv[1], port), timeout=5).close(); print(port, 'open')\n"
             "    except OSError as e:\n        print(port, type(e).__name__)\n")
    done = inside("python3", "-c", probe, node, str(api), str(registry), kubelet, "22")
    assert done.stdout.split("\n")[:4] == [f"{api} open", f"{registry} open", f"{kubelet} ConnectionRefusedError",
                                           "22 ConnectionRefusedError"], done.stdout + done.stderr


def registry_image() -> str:
    """layerbench's MariaDB image in the lab registry: pushed there first when the registry lacks it."""
    registry = cluster_facts()["REGISTRY"]
    repository, tag = image_tag().split(":")
    try:
        with urllib.request.urlopen(f"http://{registry}/v2/{repository}/tags/list", timeout=30) as answer:
            tags = json.load(answer).get("tags") or []
    except urllib.error.HTTPError:  # 404: the repository is not there yet
        tags = []
    if tag not in tags:
        done = subprocess.run([sys.executable, "-m", "layerbench", "image", "push", registry], capture_output=True,
                              text=True, timeout=1800)
        assert done.returncode == 0, done.stderr[-2000:]
    return f"{registry}/{repository}:{tag}"


REMOTE_EXAMPLE = Path(__file__).resolve().parents[2] / "src/layerbench/data/examples/k8s-remote.yaml"


def test_the_remote_example_run_from_inside_in_smoke_mode_completes_with_its_pods_on_the_nodes(
        isolated: None) -> None:
    """examples/k8s-remote.yaml in smoke mode (one run per variant, as `run --smoke` makes it; the examples' smoke
    test leaves it to this module, whose harness it needs), its image: the registry's, run inside the harness,
    which has no sysbench: the run's environment records the Job's sysbench."""
    assert inside("sh", "-c", "command -v sysbench").returncode != 0  # the harness's rootfs has none
    data = {**yaml.safe_load(REMOTE_EXAMPLE.read_text()), "name": OWN, "output": f"results-{OWN}"}
    data["variants"][0]["image"] = registry_image()
    smoke = smoke_version(parse_campaign(data))  # what `run --smoke` runs (not through campaign_as_dict: its dict
    # of an emptydir variant holds a storage_size that validate refuses)
    query = ("import json, sqlite3, sys\nfor (d,) in sqlite3.connect(sys.argv[1]).execute('select details from runs'):"
             "\n    print(json.dumps(json.loads(d)))\nfor (s,) in sqlite3.connect(sys.argv[1]).execute("
             "'select status from runs'):\n    print(json.dumps(s))\n")
    try:
        assert inside("sh", "-c", f"cat > ~/{OWN}.yaml", stdin=yaml.safe_dump(data)).returncode == 0
        checked = inside("sh", "-c", f"cd ~ && layerbench validate {OWN}.yaml")
        assert checked.returncode == 0 and "valid;" in checked.stdout, checked.stdout + checked.stderr
        done = inside("sh", "-c", f"cd ~ && layerbench run --smoke {OWN}.yaml")
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        rows = inside("python3", "-c", query, f"/home/layerbench/results-{OWN}/layerbench.db")
        lines = [json.loads(line) for line in rows.stdout.splitlines()]
    finally:
        inside("rm", "-rf", f"/home/layerbench/{OWN}.yaml", f"/home/layerbench/results-{OWN}")
    runs, statuses = lines[:len(lines) // 2], lines[len(lines) // 2:]
    assert len(runs) == len(smoke.variants) and set(statuses) == {"ok"}
    core = _kubernetes_core()
    assert core is not None
    nodes = {n.metadata.name for n in core.list_node().items}
    for details in runs:
        assert details["reset"]["prepared_by"] == "a Job in the cluster"
        host = details["environment"]["host"]
        assert host["sysbench_version"] == "sysbench 1.0.20" and "sysbench Job" in host["sysbench_version_from"]
        placement = details["environment"]["backend"]["placement"]
        assert placement["server_node"] in nodes
        assert set(placement["client_nodes"]) == {"sysbench-cleanup", "sysbench-prepare", "sysbench-run"}
        assert set(placement["client_nodes"].values()) <= nodes
    assert core.list_namespace(label_selector=f"layerbench.campaign={smoke.name}").items == []


@pytest.mark.parametrize(("changes", "reset", "said"), [
    # the harness has no sysbench: that is what refuses `client: host` there first (with sysbench, no Service's
    # cluster IP answering from it would: cluster.check_client_reach)
    ({"client": "host"}, "reprepare", "install sysbench (scripts/setup does it): variants.k (its sysbench) runs it on "
                                      "this machine"),
    ({"storage": "hostpath"}, "reprepare", "variants.k.storage: hostpath puts the datadir in a folder of this "),
    ({"storage": "emptydir"}, "snapshot",  # the one-node cluster has no default storage class
     "variants.k.reset: snapshot off a node makes the dataset in the cluster"),
])
def test_what_the_docs_list_as_unsupported_off_a_node_validate_refuses_from_inside_in_one_line(
        isolated: None, changes: dict, reset: str, said: str) -> None:
    """docs/backends/kubernetes.md's "Where the harness stands": off a node, `client: host` (sysbench would run in
    the harness, which has none), `storage: hostpath` and `reset: snapshot` without a storage class to snapshot
    are each refused by validate run inside the isolated harness, in one line, exit 2, before anything is made."""
    variant = {"name": "k", "backend": "kubernetes", "qos": "burstable", "requests": {"cpu": "100m", "memory": "512Mi"},
               "image": registry_image(), **changes}
    name = f"{OWN}-refused"
    data = {"name": name, "baseline": "k", "output": f"results-{name}", "repetitions": 1, "variants": [variant],
            "workload": {"tables": 1, "table_size": 100, "threads": 1, "duration": 2, "warmup": 0, "reset": reset}}
    try:
        assert inside("sh", "-c", f"cat > ~/{name}.yaml", stdin=yaml.safe_dump(data)).returncode == 0
        refused = inside("sh", "-c", f"cd ~ && layerbench validate {name}.yaml")
    finally:
        inside("rm", "-rf", f"/home/layerbench/{name}.yaml", f"/home/layerbench/results-{name}")
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert refused.returncode == 2 and len(lines) == 1 and said in lines[0], refused.stdout + refused.stderr
    core = _kubernetes_core()
    assert core is not None and core.list_namespace(label_selector=f"layerbench.campaign={name}").items == []


TOOLS = "/opt/client-tools/bin"  # sysbench and kubectl inside the harness, on no PATH (scripts/k8s-local.d/harness.sh)


def test_port_forward_runs_from_inside_once_sysbench_and_kubectl_are_on_its_path(isolated: None) -> None:
    """docs/backends/kubernetes.md lists `client: port-forward` as supported off a node: sysbench runs in the harness
    and reaches the server through `kubectl port-forward`, which goes through the API server (the only port of the
    node the harness reaches). Without sysbench on the harness's PATH validate refuses it in one line; with the
    harness's sysbench and kubectl put on it (as a laptop with both has them), a smoke run completes: its dataset
    prepared and its load run by the harness's sysbench through the forward."""
    name = f"{OWN}-fwd"
    variant = {"name": "fwd", "backend": "kubernetes", "client": "port-forward", "qos": "burstable",
               "requests": {"cpu": "100m", "memory": "512Mi"}, "image": registry_image()}
    data = {"name": name, "baseline": "fwd", "output": f"results-{name}", "busy": "keep", "repetitions": 1,
            "variants": [variant],
            "workload": {"tables": 1, "table_size": 1000, "threads": 2, "duration": 4, "warmup": 1,
                         "reset": "reprepare"}}
    query = "import json, sqlite3, sys\nfor (d,) in sqlite3.connect(sys.argv[1]).execute('select details from runs'):" \
            "\n    print(d)\n"
    with_tools = f"cd ~ && PATH={TOOLS}:$PATH"
    try:
        assert inside("sh", "-c", f"cat > ~/{name}.yaml", stdin=yaml.safe_dump(data)).returncode == 0
        refused = inside("sh", "-c", f"cd ~ && layerbench validate {name}.yaml")
        lines = [line for line in refused.stderr.splitlines() if line.strip()]
        assert refused.returncode == 2 and len(lines) == 1 and "install sysbench" in lines[0], refused.stderr
        checked = inside("sh", "-c", f"{with_tools} layerbench validate {name}.yaml")
        assert checked.returncode == 0 and "valid;" in checked.stdout, checked.stdout + checked.stderr
        done = inside("sh", "-c", f"{with_tools} layerbench run --smoke {name}.yaml")
        assert done.returncode == 0 and "1 runs ok, 0 failed" in done.stderr, done.stdout[-2000:] + done.stderr[-3000:]
        rows = inside("python3", "-c", query, f"/home/layerbench/results-{name}/layerbench.db")
        (details,) = [json.loads(line) for line in rows.stdout.splitlines()]
    finally:
        inside("rm", "-rf", f"/home/layerbench/{name}.yaml", f"/home/layerbench/results-{name}")
    backend, host = details["environment"]["backend"], details["environment"]["host"]
    assert backend["client_path"].startswith("kubectl port-forward") and "slow path" in backend["warnings"][0]
    assert host["sysbench_version"] == "sysbench 1.0.20" and "sysbench Job" not in host.get("sysbench_version_from", "")
    assert details["reset"]["prepared_by"] != "a Job in the cluster", details["reset"]
    core = _kubernetes_core()
    assert core is not None and core.list_namespace(label_selector=f"layerbench.campaign={name}").items == []


def test_the_shipped_role_account_runs_from_inside_and_validate_there_names_a_missing_right(
        isolated: None, tmp_path: Path) -> None:
    """The harness with the shipped least-privilege account instead of the admin's kubeconfig: a ServiceAccount
    bound only to the shipped Role in one namespace (namespace-scoped mode), its token in a 0600 kubeconfig inside
    the harness; a smoke campaign runs there with it, its `emptydir` filled from a VolumeSnapshot of the dataset
    made and hashed in the cluster (`reset: snapshot` off a node, as docs/backends/kubernetes.md lists it); then,
    with `create jobs` taken out of the Role, validate there names it in one line and exits 2, before any run."""
    from kubernetes import client
    from test_k8s_seed import SNAPSHOT_CLASS, STORAGE_CLASS, ensure_csi_classes, left_over
    from test_kubernetes_rbac import admin, run_objects, shipped_role_account, wait_refused

    ensure_csi_classes()
    inner = "/home/layerbench/har2-kubeconfig"
    query = "import sqlite3, sys\nfor (d,) in sqlite3.connect(sys.argv[1]).execute('select details from runs'):\n" \
            "    print(d)\n"
    with shipped_role_account(tmp_path, "har2") as (ns, kubeconfig):
        variant = {"name": "k", "backend": "kubernetes", "kubeconfig": inner, "namespace": ns, "client": "job",
                   "reset": "snapshot", "storage_class": STORAGE_CLASS, "snapshot_class": SNAPSHOT_CLASS,
                   "qos": "burstable", "requests": {"cpu": "100m", "memory": "512Mi"}, "storage": "emptydir",
                   "image": registry_image()}
        campaign = {"name": f"har2-{ns}", "baseline": "k", "output": f"results-{OWN}-rbac", "busy": "keep",
                    "repetitions": 1, "variants": [variant],
                    "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 3, "warmup": 1}}
        try:
            assert inside("sh", "-c", f"umask 077 && cat > {inner}", stdin=kubeconfig.read_text()).returncode == 0
            assert inside("sh", "-c", f"cat > ~/{OWN}-rbac.yaml", stdin=yaml.safe_dump(campaign)).returncode == 0
            checked = inside("sh", "-c", f"cd ~ && layerbench validate {OWN}-rbac.yaml")
            assert checked.returncode == 0 and f"the existing namespace {ns} (namespace-scoped mode" in \
                checked.stdout and "at the cluster scope" not in checked.stdout, checked.stdout + checked.stderr
            done = inside("sh", "-c", f"cd ~ && layerbench run --smoke {OWN}-rbac.yaml")
            assert done.returncode == 0 and "1 runs ok, 0 failed" in done.stderr, done.stdout[-2000:] + \
                done.stderr[-2000:]
            rows = inside("python3", "-c", query, f"/home/layerbench/results-{OWN}-rbac/layerbench.db")
            (details,) = [json.loads(line) for line in rows.stdout.splitlines()]
            reset, backend = details["reset"], details["environment"]["backend"]
            assert reset["method"] == "snapshot" and reset["restore"]["method"] == "volumesnapshot", reset
            assert f"in namespace {ns}" in reset["dataset_prepared"]["where"], reset  # made there, by Jobs
            assert "recorded when the dataset was made in the cluster" in reset["restore"]["verified"], reset
            assert "emptydir" in backend["data"], backend["data"]
            assert run_objects(ns) == [] and left_over(ns, campaign["name"]) == {}  # the namespace stays
            rbac = client.RbacAuthorizationV1Api(admin())
            role = rbac.read_namespaced_role("layerbench", ns)
            for rule in role.rules:  # the Role without `create jobs`
                if rule.resources == ["jobs"]:
                    rule.verbs = [verb for verb in rule.verbs if verb != "create"]
            rbac.replace_namespaced_role("layerbench", ns, role)
            wait_refused(kubeconfig, ns)
            refused = inside("sh", "-c", f"cd ~ && layerbench validate {OWN}-rbac.yaml")
            lines = [line for line in refused.stderr.splitlines() if line.strip()]
            assert refused.returncode == 2 and len(lines) == 1, refused.stderr
            assert f"missing right 1/1: create jobs (API group batch) in namespace {ns} (for sysbench as a Job)" in \
                lines[0]
            assert run_objects(ns) == []
        finally:
            inside("rm", "-rf", inner, f"/home/layerbench/{OWN}-rbac.yaml", f"/home/layerbench/results-{OWN}-rbac")


def test_a_sigkilled_harness_leaves_what_a_clean_on_another_machine_removes_once_its_heartbeat_stops(
        isolated: None) -> None:
    """SIGKILL of layerbench inside the isolated harness (hostname lbhar-harness, no sysbench of its own) mid-run,
    its dataset made in the cluster by Jobs, snapshotted and restored into the run's PVC of the CSI class (reset:
    snapshot), then `layerbench clean` from this machine, which has another hostname: while the harness's Lease in
    the run's namespace is fresh, clean leaves the campaign alone; once the Lease is older than heartbeat.STALE,
    clean removes everything: asserted through the API (namespaces, PVCs, VolumeSnapshots and contents of the
    campaign, the seed's and the run's). Rather than wait STALE s, the test moves the Leases' renewTime back by as
    much once the harness is killed (age_leases)."""
    from kubernetes import client
    from test_k8s_seed import GROUP, SNAPSHOT_CLASS, STORAGE_CLASS, ensure_csi_classes

    from layerbench.backends.kubernetes import heartbeat
    from layerbench.hosts.owners import processes_with

    ensure_csi_classes()
    name = f"{OWN}-kill"
    # reset: snapshot: off a node the dataset is made in the cluster by Jobs (seed.py), so the harness needs no
    # sysbench of its own; a VolumeSnapshot of the seed, and a pre-provisioned content for the run's namespace
    variant = {"name": "k", "backend": "kubernetes", "client": "job", "kind": "pod", "qos": "burstable",
               "requests": {"cpu": "100m", "memory": "512Mi"}, "storage": "pvc", "storage_class": STORAGE_CLASS,
               "snapshot_class": SNAPSHOT_CLASS, "image": registry_image()}
    data = {"name": name, "baseline": "k", "output": f"results-{name}", "busy": "keep", "repetitions": 2,
            "estimates_only": True, "variants": [variant],
            "workload": {"tables": 1, "table_size": 100, "threads": 1, "duration": 120, "warmup": 0,
                         "reset": "snapshot"}}
    core = _kubernetes_core()
    assert core is not None
    custom = client.CustomObjectsApi(core.api_client)
    selector = f"layerbench.campaign={name}"

    seen: set[str] = set()  # the campaign's namespaces, the seed's and the run's, once seen

    def left() -> dict[str, list[str]]:
        namespaces = [n.metadata.name for n in core.list_namespace(label_selector=selector).items]
        seen.update(namespaces)
        contents = custom.list_cluster_custom_object(GROUP, "v1", "volumesnapshotcontents")["items"]
        snapshots = custom.list_cluster_custom_object(GROUP, "v1", "volumesnapshots", label_selector=selector)
        return {"namespaces": namespaces,
                "pvcs": [c.metadata.name for c in core.list_persistent_volume_claim_for_all_namespaces(
                    label_selector=selector).items],
                "snapshots": [s["metadata"]["name"] for s in snapshots["items"]],
                # the run's (labelled) and the seed's (the snapshotter's, named by its snapshot's namespace)
                "contents": [c["metadata"]["name"] for c in contents
                             if c["metadata"].get("labels", {}).get("layerbench.campaign") == name
                             or c["spec"].get("volumeSnapshotRef", {}).get("namespace") in seen]}

    def server_running() -> bool:
        return any(p.status.phase == "Running" for p in core.list_pod_for_all_namespaces(
            label_selector=f"{selector},layerbench.role=server").items)

    assert inside("sh", "-c", f"cat > ~/{name}.yaml", stdin=yaml.safe_dump(data)).returncode == 0
    run = subprocess.Popen([str(K8S_SCRIPT), "harness", "exec", "--", "sh", "-c",
                            f"cd ~ && layerbench run {name}.yaml"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    try:
        deadline = time.monotonic() + 600
        while not server_running() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(1)
        assert server_running(), (run.stdout.read() if run.poll() is not None else "no server pod within 600 s")
        killed = [pid for pid in processes_with(f"{name}.yaml") if "layerbench run" in
                  Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")]
        assert killed, "the harness's layerbench process was not found"
        for pid in killed:
            os.kill(pid, 9)
        run.wait(timeout=60)
        before = left()
        assert before["namespaces"] and before["pvcs"] and before["snapshots"] and before["contents"], before
        fresh = run_clean()
        assert left()["namespaces"] == before["namespaces"], fresh  # its heartbeat is fresh: a live harness's
        assert "alone: its harness on lbhar-harness renewed its heartbeat" in fresh, fresh
        age_leases(core, before["namespaces"], heartbeat.STALE + 1)  # what waiting STALE s would do
        deadline, said = time.monotonic() + 300, run_clean()
        again = time.monotonic() + 20  # a deletion clean started may take a while: clean again only then
        while left() != {"namespaces": [], "pvcs": [], "snapshots": [], "contents": []}:
            assert time.monotonic() < deadline, (left(), said)
            time.sleep(1)
            if time.monotonic() > again:
                said, again = said + run_clean(), time.monotonic() + 20
        assert "deleted namespace" in said, said
    finally:
        if run.poll() is None:
            run.kill()
        inside("rm", "-rf", f"/home/layerbench/{name}.yaml", f"/home/layerbench/results-{name}")
        for ns in left()["namespaces"]:  # only what this test made, whatever failed above
            core.delete_namespace(ns)
        for content in left()["contents"]:
            custom.delete_cluster_custom_object(GROUP, "v1", "volumesnapshotcontents", content)


def age_leases(core: Any, namespaces: list[str], seconds: float) -> None:
    """Move the renewTime of the harness Leases in these namespaces `seconds` back: what waiting that long does
    once their harness is killed (it renews nothing), without the suite waiting heartbeat.STALE s for it."""
    from kubernetes import client

    from layerbench.backends.kubernetes import heartbeat

    coordination = client.CoordinationV1Api(core.api_client)
    aged = 0
    for ns in namespaces:
        for held in coordination.list_namespaced_lease(ns).items:
            renewed = heartbeat.parse_time(held.spec.renew_time)
            if held.metadata.name.startswith(heartbeat.PREFIX) and renewed is not None:
                coordination.patch_namespaced_lease(held.metadata.name, ns, {
                    "spec": {"renewTime": heartbeat.micro_time(renewed - seconds)}})
                aged += 1
    assert aged, f"no harness Lease in {namespaces}"


def run_clean() -> str:
    done = subprocess.run([sys.executable, "-m", "layerbench", "clean"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout + done.stderr
