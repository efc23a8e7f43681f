"""The kubernetes backend on a real cluster (scripts/k8s-local, static CPU manager policy): each QoS class comes
up as asked, sysbench runs from the host and as a Job, namespaces are gone afterwards (also after SIGINT), and
bad input is refused before anything is created; beside a Burstable CPU neighbour pod on the node, a Guaranteed
pinned server pod keeps its CPU while a BestEffort one does not (#32). A cluster that does not start fails these
tests."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import pytest
import yaml
from test_host_campaign import campaign_file, run_cli

from helpers import OTHER_LOAD_LIMIT, interrupt_campaign, other_load, paired_ratios, stored_rows
from layerbench.backends.kubernetes import backend as kubernetes
from layerbench.backends.kubernetes import cluster as kubernetes_cluster
from layerbench.backends.kubernetes.backend import KubernetesBackend
from layerbench.backends.kubernetes.cleanup import _kubernetes_core
from layerbench.campaign.models import parse_campaign, smoke_version
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.k8s, pytest.mark.slow]
TINY = {"tables": 1, "table_size": 1000, "threads": 1, "duration": 3, "warmup": 1}


@pytest.fixture(scope="module", autouse=True)
def cluster(k8s_cluster) -> None:
    return None


OWN = f"it-k8s-{os.getpid()}"  # this module's campaign name: it checks only the namespaces it created


def namespaces() -> list[str]:
    core = _kubernetes_core()
    assert core is not None, "the cluster does not answer"
    return [ns.metadata.name for ns in core.list_namespace(label_selector=f"layerbench.campaign={OWN}").items]


def run_campaign(tmp_path: Path, variants: list[dict], workload: dict | None = None,
                 repetitions: int = 1) -> list[dict]:
    path = campaign_file(tmp_path, name=OWN, repetitions=repetitions, baseline=variants[0]["name"],
                         variants=variants, workload=workload or TINY)
    campaign = parse_campaign(yaml.safe_load(path.read_text()))
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store)
        rows = stored_rows(store, outcome.campaign_id)
        return [{**dict(r), "details": json.loads(r["details"])} for r in rows]


def backend_facts(run: dict) -> dict:
    return run["details"]["environment"]["backend"]


QOS_EXAMPLE = Path(__file__).resolve().parents[2] / "src/layerbench/data/examples/k8s-qos.yaml"


def server_cpu_ratio(runs: list[dict], variant: str) -> float:
    """The server's CPU seconds per second in the variant's runs beside the neighbour over those of its quiet twin
    (medians): how much of its CPU it kept."""
    def per_second(name: str) -> float:
        return statistics.median(r["details"]["resources"]["cpu_seconds"].get("server", 0.0)
                                 / r["details"]["resources"]["window_seconds"] for r in runs if r["variant"] == name)
    return per_second(f"{variant}-noisy") / per_second(variant)


def cgroup_pressure(run: dict) -> float | None:
    """The share of the measured window in which the server's cgroup had a task waiting for a CPU (PSI some)."""
    resources = run["details"]["resources"]
    found = [v["some_seconds"] for k, v in resources.get("pressure", {}).items() if k != "system" and v]
    return found[0] / resources["window_seconds"] if found else None


def test_the_qos_example_each_class_and_a_pinned_pod_keeps_its_cpu_beside_a_burstable_neighbour_pod(
        tmp_path: Path) -> None:
    """examples/k8s-qos.yaml as `run --smoke` makes it (tiny data, 2 threads, 3 s runs, one round) under this
    module's name (it is this example's smoke run too: tests/e2e/test_examples_smoke.py RUN_ELSEWHERE). Each QoS
    class comes up as asked from the same snapshot; each server pod runs alone and beside a Burstable pod of two CPU
    hogs on its node, which runs there, is recorded with what it achieved and its CPU, and goes with the run's
    namespace. When the machine's other work leaves room to see it, the pinned pod keeps more of its CPU time than
    the BestEffort one (its server's CPU seconds beside the neighbour over its quiet twin's). Its cgroup's CPU
    pressure (PSI some) is printed, not asserted: at 2 threads a quiet BestEffort server waited in 0.86-0.94 of the
    window (it shares CPU 0 with sysbench) and beside the neighbour in 0.61, a pinned one 0.61 and 0.78-0.83. Nor
    its TPS: on this VM a latency-bound server ran as fast or faster beside a busy
    neighbour (CI, 2026-11-26, 1 thread: TPS / quiet 1.29 and 1.05 pinned, 1.40 and 1.14 BestEffort, while the
    BestEffort server's CPU time fell to 0.70 of its quiet twin's; here at 2 threads, 2026-11-26: CPU time kept
    1.02 pinned against 0.63 BestEffort, TPS 1.16/0.92 against 0.92/0.91; in a second run 0.99 against 0.51 and
    TPS 1.26/0.88 against 0.48/0.45); the TPS ratios are printed."""
    checked = run_cli(["validate", str(QOS_EXAMPLE)])
    assert checked.returncode == 0 and "valid;" in checked.stdout, checked.stderr
    campaign = smoke_version(parse_campaign(yaml.safe_load(QOS_EXAMPLE.read_text())))
    campaign = campaign.model_copy(update={"name": OWN, "output": str(tmp_path / "out")})
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store)
        runs = [{**dict(r), "details": json.loads(r["details"])} for r in stored_rows(store, outcome.campaign_id)]
    assert [r["status"] for r in runs] == ["ok"] * 7, [r["error"] for r in runs]
    report = run_cli(["report", str(outcome.campaign_id), "--db", str(tmp_path / "out" / "layerbench.db"),
                      "--format", "md", "--output", str(tmp_path / "report")])
    assert report.returncode == 0, report.stderr
    assert "`pod-guaranteed-pinned-noisy`" in (tmp_path / "report" / "report.md").read_text()
    by_name = {r["variant"]: r for r in runs}
    for name, qos in (("pod-besteffort", "BestEffort"), ("pod-guaranteed", "Guaranteed"),
                      ("pod-guaranteed-pinned", "Guaranteed")):
        facts = backend_facts(by_name[name])
        assert facts["qos_class"] == qos and "snapshot copied" in facts["data"]
        assert by_name[name]["tps"] > 5 and by_name[name]["details"]["reset"]["method"] == "snapshot"
    assert backend_facts(by_name["pod-guaranteed-pinned"])["cpu_manager_policy"] == "static"
    for run in (r for r in runs if r["variant"].endswith("-noisy")):
        (hog,) = run["details"]["neighbours"]["neighbours"]
        assert hog["placement"] == "kubernetes" and hog["check"]["qos_class"] == "Burstable"
        assert hog["check"]["node"] == backend_facts(run)["node"]  # the server pod's node, as the API says
        # it ran: beside the pinned pod its cpu.shares (2, the kubelet's minimum: no CPU request) got it 3.6 % per
        # worker of the one shared CPU in a run of this test, while other work loaded the machine
        assert hog["achieved"]["bogo_ops_per_second"] > 0 and hog["achieved"]["cpu_percent_per_worker"] > 0
        assert run["details"]["resources"]["cpu_seconds"]["neighbour:burstable-hog"] > 0
    db = tmp_path / "out" / "layerbench.db"
    pods = ("pod-besteffort", "pod-guaranteed-pinned")
    kept = {v: paired_ratios(db, f"{v}-noisy", v) for v in pods}
    waited = {v: [p for r in runs if r["variant"] == v and (p := cgroup_pressure(r)) is not None]
              for v in (*pods, *(f"{v}-noisy" for v in pods))}  # [] where the kernel has no PSI for the pod's cgroup
    others = other_load(db, "pod-besteffort")
    print("TPS / quiet twin's, per round:", {v: [round(x, 2) for x in r] for v, r in kept.items()},
          "server cgroup PSI some:", {v: [round(x, 3) for x in w] for v, w in waited.items()},
          f"other load: {others:.0%}",
          "TPS:", [(r["variant"], round(r["tps"], 1)) for r in runs], "server CPU s/s:",
          [(r["variant"], round(r["details"]["resources"]["cpu_seconds"].get("server", 0)
                                / r["details"]["resources"]["window_seconds"], 2)) for r in runs])
    cpu = {v: server_cpu_ratio(runs, v) for v in pods}
    print("server CPU seconds / quiet twin's:", {v: round(x, 2) for v, x in cpu.items()})
    assert all(by_name[v]["details"]["resources"]["cpu_seconds"].get("server", 0) > 0 for v in pods)
    if others < OTHER_LOAD_LIMIT:  # else the machine's other work, not the neighbour, decides each run's CPU
        assert cpu["pod-guaranteed-pinned"] > cpu["pod-besteffort"], cpu
    assert namespaces() == []


def test_reprepare_as_jobs_needs_no_route_from_this_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a cluster whose node is elsewhere (the image already there): no snapshot through hostPath and no
    login from this host; cleanup, prepare and run are Jobs, each waiting for the Service from inside."""
    variant = {"name": "job", "backend": "kubernetes", "qos": "burstable", "client": "job", "storage": "emptydir"}
    parsed = parse_campaign(yaml.safe_load(campaign_file(tmp_path, name=OWN, baseline="job", variants=[variant],
                                                         workload=TINY).read_text())).variants[0]
    backend = KubernetesBackend(parsed)
    backend.check()
    backend.prepare(print)  # the image on the node, as a registry would have it there
    monkeypatch.setattr(kubernetes_cluster, "node_is_this_machine", lambda nodes: False)
    monkeypatch.setattr(kubernetes, "wait_until_ready", lambda *a, **k: pytest.fail("logged in from this host"))
    runs = run_campaign(tmp_path, [variant], {**TINY, "reset": "reprepare"})
    assert runs[0]["status"] == "ok", runs[0]["error"]
    assert runs[0]["details"]["reset"]["prepared_by"] == "a Job in the cluster" and runs[0]["tps"] > 5
    assert "prepared by sysbench Jobs in the cluster" in backend_facts(runs[0])["data"]
    jobs = [line.split()[3] for line in (Path(runs[0]["run_dir"]) / "commands.log").read_text().splitlines()
            if "kubernetes job" in line]
    assert jobs == ["sysbench-cleanup", "sysbench-prepare", "sysbench-run"]
    assert namespaces() == []


def node_names() -> list[str]:
    core = _kubernetes_core()
    assert core is not None, "the cluster does not answer"
    return [node.metadata.name for node in core.list_node().items]


def test_a_burstable_statefulset_on_a_hostpath_datadir_with_its_sysbench_job_placed_by_hostname(
        tmp_path: Path) -> None:
    """sysbench as a Job against a Burstable StatefulSet whose datadir is a hostPath (restored by a clone on this
    machine); client_node_selector by hostname: the Job lands where asked, and the run records the server pod's node
    and each Job pod's node (spec.nodeName read back from the API). The local cluster has one node: both match it."""
    node = node_names()[0]
    runs = run_campaign(tmp_path, [{"name": "job", "backend": "kubernetes", "qos": "burstable", "kind": "statefulset",
                                    "requests": {"cpu": "100m", "memory": "512Mi"}, "storage": "hostpath",
                                    "client": "job", "client_node_selector": {"kubernetes.io/hostname": node}}])
    assert runs[0]["status"] == "ok", runs[0]["error"]
    assert runs[0]["tps"] > 5 and runs[0]["details"]["reset"]["method"] == "snapshot"
    facts = backend_facts(runs[0])
    assert facts["qos_class"] == "Burstable"
    assert facts["client_path"].startswith("a Job") and "hostPath datadir" in facts["data"]
    placement = facts["placement"]
    assert placement["server_node"] == node and placement["client_node"] == node
    assert "sysbench-run" in placement["client_nodes"] and set(placement["client_nodes"].values()) == {node}
    assert namespaces() == []


def test_a_job_no_node_can_take_fails_the_run_at_once_with_the_schedulers_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The preflight refuses such a selector (see test_bad_input...); here the check is skipped, as when the node's
    labels change between the check and the run: the run fails on the scheduler's own verdict, not on the Job's
    deadline, and its namespace is gone."""
    monkeypatch.setattr(kubernetes_cluster, "check_client_placement", lambda *args: None)
    runs = run_campaign(tmp_path, [{"name": "nowhere", "backend": "kubernetes", "qos": "burstable", "kind": "pod",
                                    "client": "job", "client_node_selector": {"layerbench-test": "no-such-node"}}],
                        workload={**TINY, "duration": 600})
    assert runs[0]["status"] == "failed"
    assert "sysbench job pod cannot be scheduled" in runs[0]["error"], runs[0]["error"]
    assert "node affinity/selector" in runs[0]["error"] and "client_node_selector" in runs[0]["error"]
    assert namespaces() == []


def test_port_forward_works_and_warns(tmp_path: Path) -> None:
    runs = run_campaign(tmp_path, [{"name": "fwd", "backend": "kubernetes", "qos": "burstable", "kind": "pod",
                                    "client": "port-forward"}])
    assert runs[0]["status"] == "ok", runs[0]["error"]
    facts = backend_facts(runs[0])
    assert facts["client_path"].startswith("kubectl port-forward") and "slow path" in facts["warnings"][0]
    assert namespaces() == []


def test_sigint_deletes_the_namespace(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, name=OWN, repetitions=2, baseline="k", variants=[
        {"name": "k", "backend": "kubernetes", "qos": "guaranteed", "limits": {"cpu": "1", "memory": "1Gi"}}],
        workload={**TINY, "duration": 60})
    code, out = interrupt_campaign(path, lambda: bool(namespaces()), settle=3)
    assert code == 130, out[-2000:]
    assert namespaces() == []


@pytest.mark.parametrize(("variant", "expected"), [
    ({"storage": "pvc", "storage_class": "nope"}, "storage_class: 'nope' does not exist"),
    ({"requests": {"cpu": "64"}, "qos": "burstable"}, "requests.cpu: 64 is more than any node can give"),
    ({"qos": "besteffort", "cpu_manager_static": True}, "cpu_manager_static: exclusive cores need qos: guaranteed"),
    ({"node_selector": {"disk": "nvme"}}, "node_selector: {'disk': 'nvme'} matches no node"),
    ({"client": "job", "client_node_selector": {"disk": "nvme"}},
     "client_node_selector: {'disk': 'nvme'} matches no node"),
    ({"client": "job", "client_anti_affinity": True}, "client_anti_affinity: the server and the sysbench Job can "
                                                      "only run on node"),
])
def test_bad_input_before_anything_is_created(tmp_path: Path, variant: dict, expected: str) -> None:
    path = campaign_file(tmp_path, name=OWN, repetitions=1, baseline="k", variants=[
        {"name": "k", "backend": "kubernetes", **variant}], workload=TINY)
    done = run_cli(["run", str(path)])
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and expected in lines[0], done.stderr
    assert namespaces() == []


def test_unreachable_api_server_is_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}], "users": [{"name": "u", "user": {}}]}))
    path = campaign_file(tmp_path, name=OWN, repetitions=1, baseline="k", variants=[
        {"name": "k", "backend": "kubernetes", "kubeconfig": str(kubeconfig)}], workload=TINY)
    done = run_cli(["run", str(path)])
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and "does not answer" in lines[0], done.stderr
