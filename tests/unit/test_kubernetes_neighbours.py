"""Neighbours in Kubernetes pods (placement: kubernetes, docs/neighbours.md): the requests and limits that give
each QoS class by the kubelet's rule, the pod's manifest (labels, node, the run's folders), and the refusals
`validate` gives in one line with exit code 2 before anything starts. The pods themselves run in
tests/integration/test_kubernetes_backend.py on the local cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from layerbench.backends.kubernetes import podfiles
from layerbench.backends.kubernetes.neighbours import neighbour_pod, pod_name, pod_resources
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.neighbours.model import Neighbour
from layerbench.neighbours.placed import ContainerRequest
from layerbench.run.neighbour_checks import check_neighbours
from layerbench.run.neighbour_plan import neighbour_lines
from layerbench.vocabulary.sizes import quantity


def qos_class(resources: dict[str, dict[str, str]]) -> str:
    """The kubelet's rule (kubernetes.io/docs/concepts/workloads/pods/pod-qos), written out independently."""
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    if not requests and not limits:
        return "BestEffort"
    if all(k in limits and quantity(limits[k]) == quantity(requests.get(k, limits[k])) for k in ("cpu", "memory")):
        return "Guaranteed"
    return "Burstable"


@pytest.mark.parametrize(("entry", "wanted", "cpu"), [
    ({"qos": "besteffort"}, "BestEffort", None),
    ({}, "Burstable", None),  # the default: the published study's neighbour, memory asked for only
    ({"qos": "burstable", "resources": {"cpus": 0.5, "memory": "128m"}}, "Burstable", "500m"),
    ({"qos": "guaranteed"}, "Guaranteed", "1000m"),
    ({"qos": "guaranteed", "resources": {"cpus": 0.999}}, "Guaranteed", "999m"),
    ({"qos": "guaranteed-pinned", "resources": {"cpus": 2}}, "Guaranteed", "2"),
])
def test_each_qos_class_gets_the_requests_and_limits_of_its_class(entry: dict[str, Any], wanted: str,
                                                                   cpu: str | None) -> None:
    neighbour = Neighbour(name="hog", kind="cpu", placement="kubernetes", **entry)
    resources = pod_resources(neighbour)
    assert qos_class(resources) == wanted
    assert resources.get("requests", {}).get("cpu") == cpu
    if wanted == "Burstable" and "resources" not in entry:
        assert resources == {"requests": {"memory": "64Mi"}}


def test_a_guaranteed_memory_neighbour_holds_what_its_workers_write() -> None:
    neighbour = Neighbour(name="mem", kind="memory", workers=2, size="100M", placement="kubernetes",
                          qos="guaranteed")
    assert pod_resources(neighbour)["limits"]["memory"] == f"{256 + 200}Mi"
    sized = Neighbour(name="mem", kind="memory", placement="kubernetes", qos="guaranteed",
                      resources={"memory": "2g"})
    assert pod_resources(sized)["limits"]["memory"] == "2Gi"


def test_the_pod_is_labelled_placed_on_the_node_and_its_report_folder_is_no_hostpath(tmp_path: Path) -> None:
    neighbour = Neighbour(name="Hog_1", kind="cpu", placement="kubernetes")
    data = tmp_path / "data"
    request = ContainerRequest("lb7-abc-3-nb-Hog_1", "my campaign", neighbour, ["stress-ng", "--cpu", "1"],
                               [tmp_path, data], tmp_path / "hog.log")
    body = neighbour_pod(request, "lb7-abc-3-base", "node-1", "layerbench/neighbours:abc")
    labels = body["metadata"]["labels"]
    assert labels["layerbench"] == "1" and labels["layerbench.role"] == "neighbour"
    assert labels["layerbench.campaign"] == "my-campaign" and body["metadata"]["namespace"] == "lb7-abc-3-base"
    assert body["metadata"]["name"] == pod_name("Hog_1") != pod_name("hog-1")
    terms = body["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["node-1"]
    (container,) = body["spec"]["containers"]
    assert container["command"] == podfiles.wrapped(tmp_path, ["stress-ng", "--cpu", "1"])
    assert container["command"][-3:] == ["stress-ng", "--cpu", "1"] and container["image"].startswith("layerbench/")
    assert [m["mountPath"] for m in container["volumeMounts"]] == [str(tmp_path), str(data)]
    assert body["spec"]["volumes"][0] == {"name": "folder0", "emptyDir": {}}  # the report: through the pod's log
    assert body["spec"]["volumes"][1]["hostPath"]["path"] == str(data.resolve())  # a disk neighbour's data
    assert body["spec"]["restartPolicy"] == "Never"
    elsewhere = neighbour_pod(request, "lb7-abc-3-base", "node-2", "10.250.0.1:15000/layerbench/neighbours:abc",
                              here=False)  # another machine's node: no path of this machine is one of its own
    assert elsewhere["spec"]["volumes"] == [{"name": "folder0", "emptyDir": {}}, {"name": "folder1", "emptyDir": {}}]
    assert elsewhere["spec"]["containers"][0]["image"] == "10.250.0.1:15000/layerbench/neighbours:abc"


def test_off_a_node_a_pod_neighbour_needs_an_image_the_nodes_pull_and_no_folder_of_this_machine() -> None:
    """check_off_node, before any cluster is asked: one line naming the field and the fix."""
    from layerbench.backends.kubernetes.neighbours import check_off_node

    campaign = parse_campaign({"name": "c", "baseline": "k", "workload": {"reset": "reprepare"}, "variants": [
        {"name": "k", "backend": "kubernetes", "qos": "burstable", "client": "job"}]})
    hog = Neighbour(name="hog", kind="cpu", placement="kubernetes")
    check_off_node(campaign.variants[0], hog, True, True, [])  # on a node: the local image, imported
    with pytest.raises(BadInput, match=r"^variants\.k\.neighbours\.hog\.image: off a node the nodes pull .* set "
                                       r"image: to the layerbench/neighbours reference it printed$"):
        check_off_node(campaign.variants[0], hog, False, False, [])
    disk = Neighbour(name="dd", kind="disk", placement="kubernetes", folder="/srv/fio", image="r.example:5000/n:1")
    with pytest.raises(BadInput, match=r"^variants\.k\.neighbours\.dd\.folder: '/srv/fio' is a folder of this "
                                       r"machine, .*; remove folder$"):
        check_off_node(campaign.variants[0], disk, False, False, [])


def test_image_is_a_pod_neighbours_only() -> None:
    with pytest.raises(ValueError, match=r"image: 'r\.example:5000/n:1' is only for placement: kubernetes"):
        Neighbour(name="hog", kind="cpu", placement="docker", image="r.example:5000/n:1")


def test_the_plan_says_where_the_pod_runs() -> None:
    data = {"name": "c", "baseline": "k", "workload": {"tables": 1, "table_size": 1000},
            "variants": [{"name": "k", "backend": "kubernetes", "neighbours": [
                {"name": "hog", "kind": "cpu", "placement": "kubernetes", "resources": {"memory": "256m"}}]}]}
    (line,) = neighbour_lines(parse_campaign(data))
    assert "on the kubernetes pod (qos burstable, memory 256m) on the server node" in line


def test_a_pod_neighbour_of_a_server_that_is_no_pod_is_refused_before_any_cluster_is_asked() -> None:
    data = {"name": "c", "baseline": "h", "workload": {"tables": 1, "table_size": 1000},
            "variants": [{"name": "h", "backend": "host", "neighbours": [
                {"name": "hog", "kind": "cpu", "placement": "kubernetes"}]}]}
    with pytest.raises(BadInput) as caught:
        check_neighbours(parse_campaign(data))
    said = str(caught.value)
    assert said.startswith("variants.h.neighbours.hog.placement: kubernetes puts a pod on the server pod's node")
    assert "backend host" in said and "\n" not in said


def unreachable_kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}], "users": [{"name": "u", "user": {}}]}))
    return str(path)


@pytest.mark.parametrize(("backend", "entry", "said"), [
    ("host", {}, "variants.v.neighbours.x.placement: kubernetes puts a pod on the server pod's node"),
    ("kubernetes", {"qos": 10**400}, "qos"),
    ("kubernetes", {"node": "node-1\nrm -rf /"}, "node"),
    ("kubernetes", {"resources": ["cpus", 1]}, "resources"),
    ("kubernetes", {"cpus": "0"}, "cpus: x runs in a kubernetes pod"),
    ("kubernetes", {}, "variants.v.neighbours.x.placement: kubernetes: variants.v: the Kubernetes API at "),
])
def test_validate_refuses_in_one_line_with_exit_2(tmp_path: Path, backend: str, entry: dict[str, Any],
                                                  said: str) -> None:
    variant: dict[str, Any] = {"name": "v", "backend": backend, "neighbours": [
        {"name": "x", "kind": "cpu", "placement": "kubernetes", **entry}]}
    if backend == "kubernetes":  # no cluster answers there; a written client: is not read from it first
        variant |= {"kubeconfig": unreachable_kubeconfig(tmp_path), "client": "host"}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "c", "baseline": "v", "variants": [variant], "output": str(tmp_path / "o"),
                                    "workload": {"tables": 1, "table_size": 1000}}))
    done = subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "300"})
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], lines
    assert not (tmp_path / "o").exists()
