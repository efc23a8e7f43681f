"""The rights a kubernetes plan needs (access.needed_rights) and a 403 as one line (access.readable_403): the
SelfSubjectAccessReview side runs against the real cluster in tests/integration/test_kubernetes_rbac.py."""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from layerbench.backends.kubernetes import access, cluster
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.errors import EXIT_BAD_INPUT, BadInput


def variant(**kw) -> KubernetesVariant:
    return KubernetesVariant.model_validate({"name": "k", "backend": "kubernetes", **kw})


def status(message: str) -> str:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                       "reason": "Forbidden", "code": 403})


NODES = ('nodes is forbidden: User "system:serviceaccount:rbac-x:lb" cannot list resource "nodes" in API group "" '
         "at the cluster scope")
PODS = ('pods "server-0" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace '
        '"lb-run-1"')
CLASSES = ('storageclasses.storage.k8s.io is forbidden: User "bob" cannot list resource "storageclasses" in API group '
           '"storage.k8s.io" at the cluster scope')


@pytest.mark.parametrize(("body", "expected"), [
    (status(NODES), "list nodes at the cluster scope to 'system:serviceaccount:rbac-x:lb'"),
    (status(PODS), "get pods/log in namespace lb-run-1 to 'alice'"),
    (status(CLASSES), "list storageclasses (API group storage.k8s.io) at the cluster scope to 'bob'"),
    (NODES.encode(), "list nodes at the cluster scope"),
])
def test_a_403_names_the_verb_the_resource_and_the_namespace(body: object, expected: str) -> None:
    assert access.forbidden_text(body) is not None and expected in str(access.forbidden_text(body))


@pytest.mark.parametrize("body", ["", "{}", "not json", None, 403, status("admission webhook denied it"),
                                  "[1, 2]", '{"message": 7}'])
def test_a_body_that_names_no_right_is_none(body: object) -> None:
    assert access.forbidden_text(body) is None


@given(st.one_of(st.text(max_size=300), st.binary(max_size=300),
                 st.text(max_size=200).map(lambda t: status(NODES.replace("alice", t) + t)),
                 st.text(max_size=200).map(lambda t: status(f'User "{t}" cannot list resource "nodes" in API group '
                                                            '"" at the cluster scope'))))
def test_hostile_bodies_give_none_or_one_printable_line(body: str | bytes) -> None:
    text = access.forbidden_text(body)
    assert text is None or (text.isprintable() and len(text) < 400)


def test_a_huge_body_is_read_only_so_far() -> None:
    assert access.forbidden_text("x" * 10**7 + NODES) is None
    assert access.forbidden_text(NODES + "x" * 10**7) is not None


def refused(status_code: int, body: str) -> ApiException:
    error = ApiException(status=status_code, reason="Forbidden")
    error.body = body
    return error


def test_readable_403_is_one_line_exit_2_naming_what_to_grant() -> None:
    with pytest.raises(access.Forbidden) as caught, access.readable_403("variants.k"):
        raise refused(403, status(NODES))
    text = str(caught.value)
    assert caught.value.exit_code == EXIT_BAD_INPUT and "\n" not in text
    assert text.startswith("variants.k: the Kubernetes API refused list nodes at the cluster scope") and \
        access.RBAC_FILE in text


def test_readable_403_of_an_unknown_body_and_other_statuses() -> None:
    with pytest.raises(access.Forbidden, match="refused a call"), access.readable_403("variants.k"):
        raise refused(403, "<html>")
    with pytest.raises(ApiException), access.readable_403("variants.k"):
        raise refused(404, status(NODES))


def rights(v: KubernetesVariant, pinned: bool = False) -> set[str]:
    return {r.text() for r in access.needed_rights(v, pinned)}


def test_the_default_plan_needs_per_run_namespaces_nodes_and_the_runs_objects() -> None:
    needed = rights(variant())
    assert {"list nodes at the cluster scope", "create namespaces at the cluster scope",
            "delete namespaces at the cluster scope", "create pods in every namespace (per-run namespaces)",
            "create statefulsets (API group apps) in every namespace (per-run namespaces)",
            "get pods/log in every namespace (per-run namespaces)"} <= needed
    assert not any(word in " ".join(needed) for word in ("storageclasses", "volumesnapshot", "jobs", "nodes/proxy",
                                                          "portforward", "persistentvolumeclaims"))


@pytest.mark.parametrize(("kw", "pinned", "more"), [
    ({"storage": "pvc"}, False, {"list storageclasses (API group storage.k8s.io) at the cluster scope",
                                 "create persistentvolumeclaims in every namespace (per-run namespaces)"}),
    ({"storage": "pvc", "snapshot_class": "csi"}, False, {
        "create volumesnapshotcontents (API group snapshot.storage.k8s.io) at the cluster scope",
        "list volumesnapshotclasses (API group snapshot.storage.k8s.io) at the cluster scope",
        "create volumesnapshots (API group snapshot.storage.k8s.io) in every namespace (per-run namespaces)"}),
    ({"client": "job"}, False, {"create jobs (API group batch) in every namespace (per-run namespaces)"}),
    ({"client": "port-forward"}, False, {"create pods/portforward in every namespace (per-run namespaces)"}),
    ({"qos": "guaranteed", "limits": {"cpu": "1"}, "cpu_manager_static": True}, False,
     {"get nodes/proxy at the cluster scope"}),
    ({}, True, {"get nodes/proxy at the cluster scope"}),
    ({"kind": "pod"}, False, set()),
])
def test_each_option_adds_the_rights_it_uses(kw: dict, pinned: bool, more: set[str]) -> None:
    base, needed = rights(variant()), rights(variant(**kw), pinned)
    assert more <= needed - base and (needed - base == set()) == (not more)
    if kw.get("kind") == "pod":
        assert "create statefulsets (API group apps) in every namespace (per-run namespaces)" not in needed


def test_the_plan_groups_the_rights_by_scope() -> None:
    text = variant(client="job").describe_plan()
    assert "API rights it uses (checked): at the cluster scope: list nodes, create/get/delete namespaces; in the " \
           "run's namespace: create/get/list/delete/deletecollection pods, get pods/log" in text
    assert "create jobs" in text


RBAC = Path(__file__).resolve().parents[2] / access.RBAC_FILE


def shipped(kind: str, name: str) -> set[tuple[str, str, str]]:
    """The (verb, resource, group) triples of one role of the shipped file."""
    for body in yaml.safe_load_all(RBAC.read_text()):
        if body["kind"] == kind and body["metadata"]["name"] == name:
            return {(verb, resource, group) for rule in body["rules"] for group in rule["apiGroups"]
                    for resource in rule["resources"] for verb in rule["verbs"]}
    raise AssertionError(f"{RBAC} has no {kind} {name}")


def every_variant(namespace: str | None) -> list[KubernetesVariant]:
    found = []
    for kind, storage, client, snapshot, static in itertools.product(
            ("statefulset", "pod"), ("emptydir", "pvc", "hostpath"), ("host", "job", "port-forward"),
            (None, "csi"), (False, True)):
        kw = {"kind": kind, "storage": storage, "client": client, "snapshot_class": snapshot,
              "cpu_manager_static": static, "qos": "guaranteed", "limits": {"cpu": "1", "memory": "1Gi"}}
        if namespace is not None:
            kw |= {"namespace": namespace, "reset": "reprepare"}
        with contextlib.suppress(ValidationError):
            found.append(variant(**kw))
    return found


def triples(rights: list[access.Right], cluster: bool) -> set[tuple[str, str, str]]:
    return {(r.verb, r.resource, r.group) for r in rights if r.cluster == cluster}


def test_the_shipped_roles_grant_what_the_plans_use_and_nothing_more() -> None:
    per_run = [r for v in every_variant(None) for pinned in (False, True) for r in access.needed_rights(v, pinned)]
    scoped = [r for v in every_variant("layerbench") for r in access.needed_rights(v)]
    assert len(every_variant("layerbench")) >= 12 and not triples(scoped, cluster=True)
    assert shipped("ClusterRole", "layerbench-cluster") == triples(per_run + access.clean_rights(), cluster=True)
    assert shipped("ClusterRole", "layerbench-run") == triples(per_run, cluster=False)
    assert shipped("Role", "layerbench") == triples(scoped, cluster=False)


@pytest.mark.parametrize(("kw", "expected"), [
    ({"cpu_manager_static": True, "limits": {"cpu": "1", "memory": "1Gi"}}, "cpu_manager_static: the CPU manager"),
    ({"storage": "hostpath"}, "storage: storage: hostpath needs the pod's node"),
    ({"reset": None}, "reset: snapshot (the workloads' default) in namespace: lb makes the dataset in the cluster"),
    ({"reset": "snapshot"}, "reset: snapshot in namespace: lb makes the dataset in the cluster and restores "
                            "every run from a VolumeSnapshot of it, and namespace-scoped mode cannot read the "
                            "VolumeSnapshotClasses (cluster-scoped); set snapshot_class"),
    ({"reset": "snapshot", "storage": "hostpath", "snapshot_class": "csi"}, "snapshot_class: restores each run's"),
])
def test_namespace_mode_refuses_what_needs_cluster_rights(kw: dict, expected: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(f"variants.k.{expected}")):
        variant(**{"namespace": "lb", "reset": "reprepare", **kw})


@given(st.text(max_size=80))
def test_a_namespace_is_a_dns_label(name: str) -> None:
    try:
        v = variant(namespace=name, reset="reprepare")
    except ValidationError:
        return
    assert re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", str(v.namespace))


def test_the_namespace_mode_plan_says_what_it_gives_up() -> None:
    text = variant(namespace="team-db", reset="reprepare", client="job").describe_plan()
    assert text.startswith("the existing namespace team-db (namespace-scoped mode, which gives up: a namespace per "
                           "run, the nodes' facts")
    assert "at the cluster scope" not in text and "in namespace team-db: " in text


def node(*addresses: tuple[str, str]) -> SimpleNamespace:
    found = [SimpleNamespace(type=kind, address=address) for kind, address in addresses]
    return SimpleNamespace(metadata=SimpleNamespace(name="n"), status=SimpleNamespace(addresses=found))


def test_the_harness_is_a_node_when_a_nodes_internal_ip_is_one_of_its_addresses() -> None:
    assert cluster.harness_is_a_node([node(("InternalIP", "192.0.2.7")), node(("InternalIP", "127.0.0.1"))])
    assert not cluster.harness_is_a_node([node(("InternalIP", "192.0.2.7"), ("ExternalIP", "198.51.100.1"))])
    assert not cluster.harness_is_a_node([node(("ExternalIP", "127.0.0.1"))])  # an InternalIP only
    assert not cluster.harness_is_a_node([])


class Services:
    """The API's answer for the probe Service default/kubernetes: its cluster IP and port, or a 403."""

    def __init__(self, port: int | None) -> None:
        self.port = port

    def read_namespaced_service(self, name: str, ns: str, **_: object) -> SimpleNamespace:
        if self.port is None:
            raise ApiException(status=403, reason="Forbidden")
        return SimpleNamespace(spec=SimpleNamespace(cluster_ip="127.0.0.1", ports=[SimpleNamespace(port=self.port)]))


OFF_NODE = [node(("InternalIP", "192.0.2.7"))]


def test_client_host_off_a_node_needs_a_service_ip_that_answers_from_here() -> None:
    with socket.create_server(("127.0.0.1", 41501)) as listening:
        cluster.check_client_reach(Services(listening.getsockname()[1]), OFF_NODE, variant(client="host"))  # kept
    with pytest.raises(BadInput, match=r"^variants\.k\.client: host runs sysbench here .* this "
                                       r"machine is not a node of the cluster and its cluster IP 127\.0\.0\.1:41502 "
                                       r"does not answer from here .*; remove client \(off a node the default is a "
                                       r"Job in the cluster\) or set client: job$"):
        cluster.check_client_reach(Services(41502), OFF_NODE, variant(client="host"))
    with pytest.raises(BadInput, match="namespace-scoped mode cannot read nodes and the Service default/kubernetes, "
                                       "the probe, cannot be read"):
        cluster.check_client_reach(Services(None), [], variant(client="host", namespace="ns", reset="reprepare"))
    cluster.check_client_reach(Services(None), OFF_NODE, variant(client="job"))  # a Job needs no route


def sized(memory: str) -> SimpleNamespace:
    return SimpleNamespace(status=SimpleNamespace(allocatable={"cpu": "4", "memory": memory}))


def test_a_pods_memory_is_checked_against_the_nodes_not_this_machine() -> None:
    from layerbench.hosts.machine import total_memory
    from layerbench.run.preflight import check_machine_fits

    huge = f"{(total_memory() >> 30) * 4 + 4}Gi"  # more than this machine has, less than the big node
    big = variant(qos="guaranteed", limits={"cpu": "1", "memory": huge})
    check_machine_fits(big)  # not this machine's memory: the harness need not be a node
    cluster.check_capacity([sized("1Gi"), sized(f"{(total_memory() >> 30) * 8 + 8}Gi")], {}, big)
    with pytest.raises(BadInput, match=rf"^variants\.k\.limits\.memory: {huge} is more than any node's allocatable "
                                       r"memory \(largest: 2048Mi\); lower it$"):
        cluster.check_capacity([sized("1Gi"), sized("2Gi")], {}, big)
