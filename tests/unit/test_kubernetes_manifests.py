"""The Kubernetes objects of a run, built without a cluster: QoS -> resources, names, the server pod's volumes."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.backends.kubernetes import manifests as m
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.errors import BadInput
from layerbench.server.flavour import MARIADB
from layerbench.server.servers import IMAGE_PROGRAMS, ServerProgram
from layerbench.vocabulary.sizes import quantity

MARIADB_IMAGE = ServerProgram(MARIADB, (IMAGE_PROGRAMS["mariadb"],))  # the local image's server


def variant(**kw) -> KubernetesVariant:
    """Built without the model's own QoS check, so resources_for's messages can be tested directly (the
    campaign's validation calls the same function: see test_qos_rules_are_checked_at_validation)."""
    defaults = {k: f.get_default(call_default_factory=True) for k, f in KubernetesVariant.model_fields.items()
                if not f.is_required()}
    return KubernetesVariant.model_construct(**{**defaults, "name": "pod", "backend": "kubernetes", **kw})


def test_qos_rules_are_checked_at_validation() -> None:
    from layerbench.campaign.models import parse_campaign

    data = {"name": "q", "baseline": "pod", "workload": {}, "variants": [
        {"name": "pod", "backend": "kubernetes", "qos": "besteffort", "limits": {"cpu": "1"}}]}
    with pytest.raises(BadInput, match=r"variants\.pod\.qos: a BestEffort pod has no requests or limits"):
        parse_campaign(data)


def kubelet_qos(resources: dict) -> str:
    """The kubelet's classification (pkg/apis/core/helper/qos), for one container."""
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    if not requests and not limits:
        return "BestEffort"
    if all(k in limits and quantity(limits[k]) == quantity(requests.get(k, limits[k])) for k in ("cpu", "memory")):
        return "Guaranteed"
    return "Burstable"


@pytest.mark.parametrize(("text", "value"), [
    ("500m", Decimal("0.5")), ("2", Decimal(2)), ("1.5", Decimal("1.5")), ("512Mi", Decimal(512 * 2**20)),
    ("4Gi", Decimal(4 * 2**30)), ("1G", Decimal(10**9)), ("1e3", Decimal(1000)), ("100k", Decimal(100_000)),
])
def test_quantities(text: str, value: Decimal) -> None:
    assert quantity(text) == value


@given(st.text(max_size=12))
def test_quantity_parser_never_crashes(text: str) -> None:
    try:
        assert quantity(text) >= 0
    except ValueError as error:
        assert "not a Kubernetes quantity" in str(error)


@pytest.mark.parametrize("qos", ["besteffort", "burstable", "guaranteed"])
def test_each_qos_gets_resources_the_kubelet_classifies_as_asked(qos: str) -> None:
    resources = m.resources_for(variant(qos=qos))
    assert kubelet_qos(resources) == m.QOS_CLASS[qos]


@given(cpu=st.sampled_from(["250m", "1", "2", "1500m"]), mem=st.sampled_from(["256Mi", "1Gi", "3Gi"]),
       side=st.sampled_from(["requests", "limits"]))
def test_guaranteed_overrides_stay_guaranteed(cpu: str, mem: str, side: str) -> None:
    resources = m.resources_for(variant(qos="guaranteed", **{side: {"cpu": cpu, "memory": mem}}))
    assert kubelet_qos(resources) == "Guaranteed"
    assert resources["limits"] == {"cpu": cpu, "memory": mem}


@given(req=st.sampled_from(["100m", "500m", "1"]), lim=st.sampled_from(["1", "2", None]))
def test_burstable_overrides_stay_burstable(req: str, lim: str | None) -> None:
    limits = {"cpu": lim} if lim else {}
    resources = m.resources_for(variant(qos="burstable", requests={"cpu": req}, limits=limits))
    assert kubelet_qos(resources) == "Burstable"


@pytest.mark.parametrize(("kw", "expected"), [
    ({"qos": "besteffort", "limits": {"cpu": "1"}}, "a BestEffort pod has no requests or limits"),
    ({"qos": "guaranteed", "requests": {"cpu": "1"}, "limits": {"cpu": "2"}}, "Guaranteed needs requests equal"),
    ({"qos": "burstable", "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
     "makes the pod Guaranteed"),
    ({"qos": "guaranteed", "limits": {"cpu": "lots"}}, "variants.pod.limits.cpu: 'lots' is not a Kubernetes"),
    ({"qos": "guaranteed", "limits": {"gpu": "1"}}, "variants.pod.limits.gpu: not a resource"),
])
def test_contradictory_resources_are_one_line_errors(kw: dict, expected: str) -> None:
    with pytest.raises(BadInput) as error:
        m.resources_for(variant(**kw))
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_exclusive_cpus_only_for_whole_guaranteed_cores() -> None:
    assert m.exclusive_cpus(m.resources_for(variant(qos="guaranteed")))
    assert not m.exclusive_cpus(m.resources_for(variant(qos="guaranteed", limits={"cpu": "1500m"})))
    assert not m.exclusive_cpus(m.resources_for(variant(qos="burstable")))


@given(st.text(min_size=1, max_size=100))
def test_names_are_dns_labels(text: str) -> None:
    name = m.dns_name(text)
    assert 1 <= len(name) <= 63 and name == name.lower() and not name.startswith("-") and not name.endswith("-")
    assert all(c.isascii() and (c.isalnum() or c == "-") for c in name)


def test_server_pod_restores_the_snapshot_and_never_holds_the_password() -> None:
    labels = m.labels("my study", "lb1-abc-1-Pod_BE", "server")
    objs = m.server_objects(variant(qos="guaranteed", kind="pod"), MARIADB_IMAGE,
                               "img:1", "ns1", labels,
                            snapshot_path="/cache/snap", host_datadir=None)
    pod, service = objs
    assert [o["kind"] for o in objs] == ["Pod", "Service"]
    script = pod["spec"]["containers"][0]["command"][-1]
    assert "cp -a /snapshot/. /var/lib/mysql/" in script and "--init-file=/etc/layerbench-secret/init.sql" in script
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["snapshot"]["hostPath"]["path"] == "/cache/snap" and "emptyDir" in volumes["data"]
    assert volumes["init"]["secret"]["secretName"] == "server-init"
    assert service["spec"]["selector"] == {"layerbench.label": "lb1-abc-1-pod-be", "layerbench.role": "server"}
    assert all(v == v.strip() and len(v) <= 63 for v in labels.values())


def test_statefulset_with_a_claim_and_a_hostpath_datadir_in_place() -> None:
    sts = m.server_objects(variant(kind="statefulset", storage="pvc", storage_class="fast"), MARIADB_IMAGE,
                               "img", "ns", {
        "layerbench.label": "x"}, snapshot_path="/s", host_datadir=None)[0]
    assert sts["kind"] == "StatefulSet"
    assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == "fast"
    pod = m.server_objects(variant(kind="pod", storage="hostpath"), MARIADB_IMAGE,
                               "img", "ns", {"layerbench.label": "x"},
                           snapshot_path="/s", host_datadir="/work/d")[0]
    assert "cp -a" not in pod["spec"]["containers"][0]["command"][-1]
    assert {v["name"] for v in pod["spec"]["volumes"]} == {"conf", "init", "data"}


def test_client_job_never_retries() -> None:
    job = m.client_job("img", "ns", ["sysbench", "run"], {"a": "b"})
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_each_sysbench_step_is_a_job_of_its_own() -> None:
    """cleanup, prepare and run share a namespace: their Jobs and Secrets must not collide."""
    from layerbench.backends.kubernetes.job import job_name

    names = [job_name(["sysbench", "--config-file=/x/sysbench.cfg", "oltp_read_write", step])
             for step in ("cleanup", "prepare", "run")]
    assert names == ["sysbench-cleanup", "sysbench-prepare", "sysbench-run"]
    assert all(m.dns_name(n) == n for n in names)
    job = m.client_job("img", "ns", ["sysbench", "prepare"], {}, name="sysbench-prepare", secret="sp-files")
    assert job["metadata"]["name"] == "sysbench-prepare"
    assert job["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"] == "sp-files"


def test_a_job_waits_for_the_service_then_runs_sysbench(monkeypatch) -> None:
    """The wrapper every client Job runs (real bash): at once when the address answers, after its bounded
    wait when nothing listens, and always with the command's own exit code and arguments."""
    import socket
    import subprocess
    import time

    from layerbench.backends.kubernetes import job as kubernetes_job

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        started = time.monotonic()
        done = subprocess.run(kubernetes_job.wait_for_server("127.0.0.1", port, ["sh", "-c", "echo ran $0", "a b"]),
                              capture_output=True, text=True, timeout=30)
        assert done.stdout == "ran a b\n" and time.monotonic() - started < 5
    monkeypatch.setattr(kubernetes_job, "WAIT_SECONDS", 1)
    started = time.monotonic()
    done = subprocess.run(kubernetes_job.wait_for_server("127.0.0.1", port, ["sh", "-c", "exit 3"]), timeout=30)
    assert done.returncode == 3 and 0.9 < time.monotonic() - started < 10


def _matches(selector: dict, pod_labels: dict) -> bool:
    return all(pod_labels.get(k) == v for k, v in selector["matchLabels"].items())


def test_client_job_follows_the_server_selector_unless_told_otherwise() -> None:
    server = m.labels("c", "lb1-run", "server")
    same = m.client_job("img", "ns", ["sysbench"], {}, placement=m.client_placement(
        variant(client="job", node_selector={"disk": "ssd"}), server))["spec"]["template"]["spec"]
    assert same["nodeSelector"] == {"disk": "ssd"} and "affinity" not in same
    own = m.client_placement(variant(client="job", node_selector={"disk": "ssd"},
                                     client_node_selector={"role": "load"}), server)
    assert own == {"nodeSelector": {"role": "load"}}
    assert m.client_placement(variant(client="job", node_selector={"disk": "ssd"}, client_node_selector={}),
                              server) == {}


def test_client_anti_affinity_keeps_the_job_off_the_server_pods_node() -> None:
    server_labels = m.labels("c", "lb1-run", "server")
    other_run = m.labels("c", "lb2-run", "server")
    placement = m.client_placement(variant(client="job", client_anti_affinity=True), server_labels)
    terms = placement["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert len(terms) == 1 and terms[0]["topologyKey"] == "kubernetes.io/hostname"
    pod = m.server_objects(variant(client="job"), MARIADB_IMAGE,
                               "img", "ns", server_labels, snapshot_path=None,
                           host_datadir=None)[0]["spec"]["template"]
    assert _matches(terms[0]["labelSelector"], pod["metadata"]["labels"])
    assert not _matches(terms[0]["labelSelector"], other_run)
    assert not _matches(terms[0]["labelSelector"], m.labels("c", "lb1-run", "client"))


@pytest.mark.parametrize("key", [{"client_node_selector": {"a": "b"}}, {"client_anti_affinity": True}])
@pytest.mark.parametrize("client", ["host", "port-forward"])
def test_client_placement_without_a_job_is_refused(key: dict, client: str) -> None:
    from layerbench.campaign.models import parse_campaign

    variants = [{"name": "k", "backend": "kubernetes", "client": client, **key}]
    data = {"name": "c", "baseline": "k", "workloads": [{}], "variants": variants}
    with pytest.raises(BadInput, match=f"variants.k.*{next(iter(key))}.*set client: job"):
        parse_campaign(data)


def test_an_unschedulable_pod_is_named_with_the_schedulers_message() -> None:
    from types import SimpleNamespace as NS

    from layerbench.backends.kubernetes.job import unschedulable_reason

    message = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    pending = NS(status=NS(conditions=[NS(type="PodScheduled", status="False", reason="Unschedulable",
                                          message=message)]))
    assert unschedulable_reason(pending) == message
    assert unschedulable_reason(NS(status=NS(conditions=None))) is None
    assert unschedulable_reason(None) is None
    scheduled = NS(status=NS(conditions=[NS(type="PodScheduled", status="True", reason=None, message=None)]))
    assert unschedulable_reason(scheduled) is None
