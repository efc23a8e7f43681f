"""Talking to a cluster: which kubeconfig, whether the API answers, what the nodes can hold, which CPU manager
policy their kubelets run, whether the local image is on the node, and the pod events that explain a pod that
does not come up. Uses the official `kubernetes` client."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layerbench.backends.kubernetes.kubeconfigs import chosen_kubeconfig
from layerbench.backends.kubernetes.kubeconfigs import local_kubeconfig as local_kubeconfig  # its users import it here
from layerbench.bounded_read import read_kubeconfig
from layerbench.errors import BadInput, PrerequisiteMissing
from layerbench.hosts.architecture import check_same, normalise, this_machine
from layerbench.hosts.procs import capture
from layerbench.vocabulary.sizes import quantity, quantity_text

if TYPE_CHECKING:  # the variant asks default_client where the harness stands
    from layerbench.backends.kubernetes.variant import KubernetesVariant

TIMEOUT = 15


def kubeconfig_path(variant: KubernetesVariant) -> Path:
    """The variant's kubeconfig, else $KUBECONFIG, else ~/.kube/config, else the local cluster's: a regular file
    (bounded_read.py; read by read_kubeconfig, and by kubectl for a port-forward); kubeconfigs.chosen_kubeconfig."""
    return chosen_kubeconfig(variant.kubeconfig, f"variants.{variant.name}.kubeconfig")


def kubeconfig_client(path: Path, context: str | None, where: str) -> Any:
    """An API client (not checked to answer) for a kubeconfig read within bounds and checked
    (bounded_read.read_kubeconfig: one line naming `where` otherwise) and one of its contexts (None: its
    current-context). Paths inside the kubeconfig are relative to its folder, as the client's own file loader takes
    them. kubernetes' ConfigException when the context or a credential does not load."""
    from kubernetes import client, config

    data = read_kubeconfig(path, where)
    loader = config.kube_config.KubeConfigLoader(config_dict=data, active_context=context,
                                                 config_base_path=str(path.parent))
    configuration = type.__call__(client.Configuration)  # a fresh one, not the client's shared default
    loader.load_and_set(configuration)
    return client.ApiClient(configuration=configuration)


def api_client(variant: KubernetesVariant) -> Any:
    """An API client for the variant's kubeconfig and context, checked to answer (one line if it does not)."""
    from kubernetes import client, config

    path = kubeconfig_path(variant)
    try:
        api = kubeconfig_client(path, variant.context, f"variants.{variant.name}.kubeconfig")
    except config.ConfigException as error:
        raise BadInput(f"variants.{variant.name}.context: {error}; check the kubeconfig {path}") from None
    try:
        client.VersionApi(api).get_code(_request_timeout=TIMEOUT)
    except Exception as error:
        host = api.configuration.host
        raise PrerequisiteMissing(f"variants.{variant.name}: the Kubernetes API at {host} does not answer "
                                  f"({type(error).__name__}); start the cluster (scripts/k8s-local up) or fix "
                                  f"the kubeconfig {path}") from None
    return api


def image_architecture(variant: KubernetesVariant, nodes: list[Any], images: list[str]) -> str:
    """The CPU architecture of the variant's images (`images`: its image: and the sysbench Job's; none: the
    images built here, for this machine's), checked against the nodes' (node.status.nodeInfo.architecture) before
    the first run: one line naming image: when a node could not run them. Without nodes (namespace-scoped mode
    cannot read them) the architecture is only recorded."""
    where = f"variants.{variant.name}.image"
    machines = [(str(n.metadata.name), str(n.status.node_info.architecture)) for n in nodes]
    if not images:
        check_same("the image built here from this machine's packages", this_machine(), where, machines,
                   "run the campaign from a machine of the nodes' architecture, or push an image built for them "
                   "(layerbench image push on such a machine) and name it in image:")
        return this_machine()
    from layerbench.server.image_registry import image_architecture as in_registry

    found = ""
    want = normalise(machines[0][1]) if machines else this_machine()  # no node readable (namespace-scoped mode):
    for image in images:  # recorded, checked against no node; a multi-architecture list's entry for this machine's
        found = in_registry(image, want, where)
        check_same(f"image {image}", found, where, machines, "push an image built for the nodes' architecture "
                   "(layerbench image push on such a machine) and name it in image:")
    return normalise(found)


def check_pulled_image(image: str, nodes: list[Any], where: str) -> None:
    """An image the nodes pull: in its registry (one line naming `where` if not), of the nodes' architecture."""
    from layerbench.server.image_registry import image_architecture as in_registry

    machines = [(str(n.metadata.name), str(n.status.node_info.architecture)) for n in nodes]
    want = normalise(machines[0][1]) if machines else this_machine()
    check_same(f"image {image}", in_registry(image, want, where), where, machines,
               "push an image built for the nodes' architecture (layerbench image push on such a machine)")


def nodes_for(core: Any, variant: KubernetesVariant) -> list[Any]:
    selector = ",".join(f"{k}={v}" for k, v in variant.node_selector.items())
    nodes = core.list_node(label_selector=selector or None, _request_timeout=TIMEOUT).items
    if not nodes:
        raise BadInput(f"variants.{variant.name}.node_selector: {variant.node_selector} matches no node of the "
                       "cluster; fix the labels or remove node_selector")
    return list(nodes)


def check_client_placement(core: Any, server_nodes: list[Any], variant: KubernetesVariant) -> None:
    """A sysbench Job the scheduler can never place would fail every run: refuse, before anything is created,
    a client_node_selector that matches no node, and client_anti_affinity when the server and the client can
    only go to one and the same node."""
    if variant.client != "job":
        return
    where = f"variants.{variant.name}"
    clients = server_nodes
    if variant.client_node_selector is not None:
        selector = ",".join(f"{k}={v}" for k, v in variant.client_node_selector.items())
        clients = core.list_node(label_selector=selector or None, _request_timeout=TIMEOUT).items
        if not clients:
            raise BadInput(f"{where}.client_node_selector: {variant.client_node_selector} matches no node of the "
                           "cluster; fix the labels or remove client_node_selector")
    names = {n.metadata.name for n in server_nodes} | {n.metadata.name for n in clients}
    if variant.client_anti_affinity and len(names) < 2:
        raise BadInput(f"{where}.client_anti_affinity: the server and the sysbench Job can only run on node "
                       f"{names.pop()}, so the Job could never be placed; widen client_node_selector or set "
                       "client_anti_affinity: false")
    only = {n.metadata.name for n in clients}
    if variant.client_anti_affinity and len(only) == 1 and only <= {n.metadata.name for n in server_nodes}:
        raise BadInput(f"{where}.client_node_selector: the sysbench Job can only run on node {only.pop()}, where the "
                       "server may be scheduled too, and client_anti_affinity asks for another node; pin the "
                       "server elsewhere with node_selector or widen client_node_selector")


def check_capacity(nodes: list[Any], resources: dict[str, dict[str, str]], variant: KubernetesVariant) -> None:
    """Requests no node can hold would leave the pod Pending forever, and a memory limit above every node's
    allocatable memory is one the pod can never use: refuse them before anything is created (against the nodes,
    not this machine, which need not be one)."""
    limit, wanted = variant.memory_limit(), variant.memory_limit_bytes()
    most = max(quantity(node.status.allocatable.get("memory", "0")) for node in nodes)
    if limit and wanted and wanted > most:
        raise BadInput(f"variants.{variant.name}.{limit[0]}: {limit[1]} is more than any node's allocatable memory "
                       f"(largest: {quantity_text(most, 'memory')}); lower it")
    for key, asked in resources.get("requests", {}).items():
        if key not in ("cpu", "memory"):
            continue
        best = max(quantity(node.status.allocatable.get(key, "0")) for node in nodes)
        if quantity(asked) > best:
            raise BadInput(f"variants.{variant.name}.requests.{key}: {asked} is more than any node can give "
                           f"(largest allocatable: {quantity_text(best, key)}); lower it")


def check_storage_class(storage: Any, variant: KubernetesVariant) -> None:
    if not variant.claims_volumes:
        return
    classes = storage.list_storage_class(_request_timeout=TIMEOUT).items
    names = [c.metadata.name for c in classes]
    if variant.storage_class and variant.storage_class not in names:
        raise BadInput(f"variants.{variant.name}.storage_class: {variant.storage_class!r} does not exist in the "
                       f"cluster (it has: {', '.join(names) or 'none'}); fix it or use storage: emptydir")
    default = [c for c in classes if (c.metadata.annotations or {}).get(
        "storageclass.kubernetes.io/is-default-class") == "true"]
    if not variant.storage_class and not default:
        raise BadInput(f"variants.{variant.name}.storage: pvc needs a storage class and the cluster has no default "
                       "one; set storage_class or use storage: emptydir or hostpath")


def check_snapshot_class(api: Any, variant: KubernetesVariant) -> None:
    """snapshot_class names a VolumeSnapshotClass the cluster has, whose driver provisions the PVC's class."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    if variant.snapshot_class is None:
        return
    where = f"variants.{variant.name}.snapshot_class"
    try:
        classes = client.CustomObjectsApi(api).list_cluster_custom_object(
            "snapshot.storage.k8s.io", "v1", "volumesnapshotclasses", _request_timeout=TIMEOUT)["items"]
    except ApiException as error:
        if error.status != 404:
            raise
        raise BadInput(f"{where}: the cluster serves no VolumeSnapshot API (snapshot.storage.k8s.io/v1); install "
                       "the snapshot CRDs and controller (k8s-local up --csi) or remove snapshot_class") from None
    drivers = {c["metadata"]["name"]: c.get("driver") for c in classes}
    if variant.snapshot_class not in drivers:
        raise BadInput(f"{where}: {variant.snapshot_class!r} is not a VolumeSnapshotClass of the cluster (it has: "
                       f"{', '.join(sorted(drivers)) or 'none'}); fix it or remove snapshot_class")


def seed_snapshot_class(api: Any, variant: KubernetesVariant, error: type[Exception] = BadInput) -> str:
    """The VolumeSnapshotClass a dataset made in the cluster is snapshotted with (reset: snapshot off a node): the
    variant's snapshot_class, else one whose driver is the provisioner of the PVC's storage class (the variant's,
    else the cluster's default), the class marked default first; `error` (one line) when there is none."""
    if variant.snapshot_class is not None:
        return variant.snapshot_class
    from kubernetes import client

    where = f"variants.{variant.name}.reset"
    why = (f"{where}: snapshot off a node makes the dataset in the cluster and restores every run from a "
           "VolumeSnapshot of it")
    storage = [c for c in client.StorageV1Api(api).list_storage_class(_request_timeout=TIMEOUT).items
               if c.metadata.name == variant.storage_class or (variant.storage_class is None and (
                   c.metadata.annotations or {}).get("storageclass.kubernetes.io/is-default-class") == "true")]
    if not storage:
        raise error(f"{why}, and the cluster has no {'default ' if not variant.storage_class else ''}storage class "
                    f"{variant.storage_class or ''}".rstrip() + " for its PVC; set reset: reprepare")
    driver = storage[0].provisioner
    try:
        found = client.CustomObjectsApi(api).list_cluster_custom_object(
            "snapshot.storage.k8s.io", "v1", "volumesnapshotclasses", _request_timeout=TIMEOUT)["items"]
    except client.exceptions.ApiException as failure:
        if failure.status != 404:
            raise
        found = []
    fits = sorted((c for c in found if c.get("driver") == driver), key=lambda c: (c.get("metadata", {}).get(
        "annotations", {}).get("snapshot.storage.kubernetes.io/is-default-class") != "true", c["metadata"]["name"]))
    if not fits:
        raise error(f"{why}, and storage class {storage[0].metadata.name} (driver {driver}) has no "
                    "VolumeSnapshotClass; set reset: reprepare, or install a snapshot class for that driver")
    return str(fits[0]["metadata"]["name"])


def kubelet_config(core: Any, node: str) -> dict[str, Any]:
    """The kubelet's running configuration (its /configz), or {} when the API does not proxy it."""
    try:
        raw = core.connect_get_node_proxy_with_path(node, "configz", _preload_content=False,
                                                    _request_timeout=TIMEOUT).data
        return dict(json.loads(raw).get("kubeletconfig", {}))
    except Exception:
        return {}


def check_cpu_manager(core: Any, nodes: list[Any], variant: KubernetesVariant, exclusive: bool) -> str:
    """The nodes' CPU manager policy; with cpu_manager_static it must be static, and the pod must qualify; unknown
    without nodes (namespace-scoped mode: the variant refuses cpu_manager_static there)."""
    if not nodes:
        return "unknown (namespace-scoped mode)"
    policies = {n.metadata.name: kubelet_config(core, n.metadata.name).get("cpuManagerPolicy", "unknown")
                for n in nodes}
    if not variant.cpu_manager_static:
        return ",".join(sorted(set(policies.values())))
    where = f"variants.{variant.name}.cpu_manager_static"
    if not exclusive:
        raise BadInput(f"{where}: exclusive cores need qos: guaranteed with a whole number of CPUs (like cpu: 1)")
    wrong = {n: p for n, p in policies.items() if p != "static"}
    if wrong:
        node, policy = next(iter(wrong.items()))
        raise BadInput(f"{where}: the kubelet on node {node} runs the CPU manager policy {policy!r}, not 'static'; "
                       "restart the local cluster with K8S_LOCAL_CPU_MANAGER_POLICY=static scripts/k8s-local up "
                       "(after `down`), or set cpu_manager_static: false")
    return "static"


def this_machine_addresses() -> set[str]:
    out = capture(["ip", "-o", "addr", "show"], timeout=30).stdout
    found = {line.split()[3].split("/")[0] for line in out.splitlines() if len(line.split()) > 3}
    return found | {socket.gethostname()}


def node_is_this_machine(nodes: list[Any]) -> bool:
    """True when every candidate node is this machine (k8s-local), so hostPath reaches our dataset snapshots; False
    when no node is known (namespace-scoped mode does not read them)."""
    if not nodes:
        return False
    mine = this_machine_addresses()
    for node in nodes:
        addresses = {a.address for a in node.status.addresses or []}
        if not addresses & mine:
            return False
    return True


def nodes_here(nodes: list[Any]) -> frozenset[str]:
    """The names of the nodes that are this machine (node_is_this_machine's rule, one node at a time)."""
    mine = this_machine_addresses()
    return frozenset(str(n.metadata.name) for n in nodes if {a.address for a in n.status.addresses or []} & mine)


def dataset_made_here(variant: KubernetesVariant, nodes: list[Any]) -> bool:
    """The one rule of where a variant's dataset is made: here, brought to the pod by a hostPath of this machine,
    when every candidate node is this machine (node_is_this_machine); else in the cluster by Jobs (seed.py):
    namespace-scoped mode, which reads no node, or a node that is another machine."""
    return variant.namespace is None and node_is_this_machine(nodes)


def harness_is_a_node(nodes: list[Any]) -> bool:
    """The rule for "layerbench runs on a node of the cluster": one of the nodes' InternalIPs is an address of this
    machine (docs/backends/kubernetes.md, "Where the harness stands")."""
    mine = this_machine_addresses()
    return any(a.type == "InternalIP" and a.address in mine for n in nodes for a in n.status.addresses or [])


def default_client(variant: KubernetesVariant) -> tuple[str, str]:
    """`client` of a variant that does not write it, and where the harness stands: ("host", "on a node") when
    this machine is a node of the cluster (harness_is_a_node), else ("job", "off a node"): namespace-scoped mode,
    which cannot read the nodes, counts as off one, as the backend's readings do."""
    from kubernetes import client

    from layerbench.backends.kubernetes.access import readable_403

    if variant.namespace is not None:
        return "job", "off a node"
    core = client.CoreV1Api(api_client(variant))
    with readable_403(f"variants.{variant.name}.client"):
        on_node = harness_is_a_node(nodes_for(core, variant))
    return ("host", "on a node") if on_node else ("job", "off a node")


def service_reach(core: Any) -> str | None:
    """None when a Service's cluster IP answers from here (a TCP connection to the `kubernetes` Service of
    namespace default, the API server's own), else why not."""
    try:
        service = core.read_namespaced_service("kubernetes", "default", _request_timeout=TIMEOUT)
        address = (service.spec.cluster_ip, int(service.spec.ports[0].port))
    except Exception as error:
        return f"the Service default/kubernetes, the probe, cannot be read ({type(error).__name__})"
    try:
        socket.create_connection(address, timeout=3).close()
    except OSError as error:
        return f"its cluster IP {address[0]}:{address[1]} does not answer from here ({error.strerror or error})"
    return None


def check_client_reach(core: Any, nodes: list[Any], variant: KubernetesVariant) -> None:
    """A written `client: host` off a node (the default there is job: default_client): only when a Service's
    cluster IP answers from here (probed), else every run would fail to reach the server; a Job in the cluster does
    not need it."""
    if variant.client != "host" or (nodes and harness_is_a_node(nodes)):
        return
    why = service_reach(core)
    if why is not None:
        where = "this machine is not a node of the cluster" if nodes else "namespace-scoped mode cannot read nodes"
        raise BadInput(f"variants.{variant.name}.client: host runs sysbench here against the Service's "
                       f"cluster IP, and {where} and {why}; remove client (off a node the default is a Job in "
                       "the cluster) or set client: job")


def image_on_nodes(nodes: list[Any], image: str) -> bool:
    wanted = {image, f"docker.io/{image}", f"docker.io/library/{image}"}
    return all(any(wanted & set(i.names or []) for i in node.status.images or []) for node in nodes)


def k8s_local_script() -> Path | None:
    """scripts/k8s-local of this source tree (the backend runs from a checkout or an editable install)."""
    path = Path(__file__).resolve().parents[4] / "scripts" / "k8s-local"
    return path if path.is_file() else None


def pod_trouble(core: Any, ns: str, pod: Any) -> str | None:
    """Why a pod cannot become ready, if it is clear already: unschedulable, image pull, crash loop, OOM."""
    for cond in pod.status.conditions or []:
        if cond.type == "PodScheduled" and cond.status == "False" and cond.reason == "Unschedulable" and \
                "unbound immediate PersistentVolumeClaims" not in (cond.message or ""):  # a PVC still binding
            return f"unschedulable: {cond.message}"
    for status in pod.status.container_statuses or []:
        waiting = status.state.waiting if status.state else None
        if waiting and waiting.reason in ("ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull",
                                          "CrashLoopBackOff", "CreateContainerConfigError", "InvalidImageName",
                                          "CreateContainerError"):
            return f"{waiting.reason}: {waiting.message or ''}".strip()
        terminated = (status.state.terminated if status.state else None) or (
            status.last_state.terminated if status.last_state else None)
        if terminated and (terminated.reason == "OOMKilled" or status.restart_count or pod.spec.restart_policy
                           == "Never"):
            return f"container {terminated.reason or 'terminated'} (exit {terminated.exit_code})"
    return None


def recent_events(core: Any, ns: str, limit: int = 3) -> str:
    try:
        events = core.list_namespaced_event(ns, _request_timeout=TIMEOUT).items
    except Exception:
        return ""
    events.sort(key=lambda e: str(e.last_timestamp or e.event_time or e.metadata.creation_timestamp or ""))
    return "; ".join(f"{e.reason}: {e.message}" for e in events[-limit:] if e.type == "Warning" or e.reason in (
        "FailedScheduling", "Failed", "BackOff", "FailedMount", "OOMKilling"))

