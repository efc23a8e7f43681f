"""The Kubernetes backend: the same server image and dataset as the other variants, as a pod of the QoS class the
variant asks for (BestEffort, Burstable, Guaranteed, optionally with exclusive cores from the static CPU manager),
in a labelled namespace of its own per run, deleted at the end, on error and on Ctrl-C (`layerbench clean` finds
namespaces a crashed harness left). sysbench runs on this host against the Service's cluster IP, or as a Job in
the cluster, or (last resort, slow) through `kubectl port-forward`.

Data: on a cluster whose node is this machine (scripts/k8s-local), the run's dataset snapshot reaches the pod
through a read-only hostPath and is copied into the datadir volume (emptyDir or PVC) or used in place (a hostPath
copy); elsewhere, workloads need `reset: reprepare`: the tables are prepared from where sysbench runs, so with
`client: job` cleanup, prepare and run are Jobs in the cluster and this host needs no route to the pod.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layerbench.backends.base import BackendBase, ClientRunner, Endpoint, ServerSpec, host_client_processes
from layerbench.backends.kubernetes import (
    access,
    cluster,
    manifests,
    pod,
    podcpu,
    podexec,
    scoped,
    seed,
    volsnap,
)
from layerbench.backends.kubernetes.job import JobClient
from layerbench.backends.kubernetes.neighbours import NeighbourPods
from layerbench.backends.kubernetes.procs import pod_components
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.errors import RunFailed
from layerbench.hosts import owners
from layerbench.hosts.client_files import CLIENT_DIR
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.owners import processes_with
from layerbench.hosts.procfs import cgroup_dirs
from layerbench.hosts.procs import ManagedProcess
from layerbench.measure.cpu import QuietLoad
from layerbench.neighbours.placed import ContainerStarter
from layerbench.server.datadir import wait_until_ready
from layerbench.server.mycnf import check_overlay
from layerbench.server.servers import (
    ServerProgram,
    image_server,
    own_image_mysql,
    own_image_postgresql,
    rooted_image_server,
)
from layerbench.server.spec import HostDatasets

CLIENT_PATHS = {"host": "this host -> Service cluster IP (kube-proxy)",
                "job": "a Job in the cluster -> Service cluster IP", "port-forward": "kubectl port-forward (slow path)",
                "job-pod": "a Job in the cluster -> the server pod's IP"}


def client_path(variant: KubernetesVariant) -> str:
    return CLIENT_PATHS.get(f"{variant.client}-{variant.client_target}", CLIENT_PATHS[variant.client])


def server_program(variant: KubernetesVariant) -> ServerProgram:
    """The flavour's program in the local image (or an image: of MariaDB), the mysqld: binary's in the image of its
    root, or MySQL's or PostgreSQL's in an image: of a registry (a pushed one)."""
    if variant.mysqld:
        return rooted_image_server(variant)
    if variant.image and variant.server.flavour == "postgresql":
        return own_image_postgresql()
    return own_image_mysql() if variant.image and variant.is_mysql else image_server(variant)


def server_log_tail(core: Any, ns: str, lines: int) -> str:
    """The server container's last log lines, or "" when there is no server pod (yet, or any more)."""
    with contextlib.suppress(Exception):
        found = pod.server_pod(core, ns)
        if found is not None:
            return str(core.read_namespaced_pod_log(found.metadata.name, ns, container=manifests.SERVER,
                                                    tail_lines=lines, _request_timeout=cluster.TIMEOUT))
    return ""


def unasked_exclusive_cores(variant: KubernetesVariant, policy: Any) -> str | None:
    """The warning for a Guaranteed pod of whole CPUs that the static CPU manager pinned unasked."""
    if variant.cpu_manager_static or policy != "static" or \
            not manifests.exclusive_cpus(manifests.resources_for(variant)):
        return None
    return ("the kubelet's static CPU manager gave this Guaranteed pod exclusive cores although cpu_manager_static is "
            "false (a whole CPU count); use a fractional cpu limit (like 999m) for a pod on the shared cores")


def quiet_load_of(variant: KubernetesVariant, server_pod: Any, window: podcpu.PodCpuWindow | None) -> QuietLoad | None:
    """Where the wait for quiet reads: off a node, the server pod's node, read in the pod once it is up (before, no
    pod of the run is there to read it through); on a node, this machine (None)."""
    if server_pod is None:
        on_node = cluster.harness_is_a_node(pod.connect(variant)[2])
        return None if on_node else QuietLoad("the server pod's node", None)
    return None if window is None else window.quiet_load()


@access.readable_403s("check", "prepare", "up", "datasets_on_host")  # a 403: one line naming the right
class KubernetesBackend(BackendBase):
    kind = "kubernetes"

    def __init__(self, variant: KubernetesVariant) -> None:
        self.api: Any = None
        self.core: Any = None
        self.variant = variant
        self.spec: ServerSpec | None = None
        self.ns: str | None = None
        self.image: str | None = None
        self.pod: Any = None
        self.facts: dict[str, Any] = {}
        self.server_pids: list[int] = []
        self.forward: ManagedProcess | None = None
        self.nodes: list[Any] = []
        self.placement: dict[str, Any] = {}  # server and client nodes; the Job client adds its nodes as it runs
        self.content: str | None = None  # the run's VolumeSnapshotContent (cluster-scoped, so not in the namespace)
        self.server: ServerProgram = server_program(variant)
        self.on_node = True  # whether this machine is a node (cluster.harness_is_a_node): its /proc holds the pod
        self.neighbours: NeighbourPods | None = None  # this run's neighbour pods (neighbour_pods)

    # --- preflight -----------------------------------------------------------------------------------------

    def check(self) -> None:
        """The cluster answers and can hold the pod as asked; reads only, keeps nothing."""
        if not self.server.flavour.is_postgresql:  # PostgreSQL's settings: checked by its server (preflight)
            check_overlay(self.variant.server.config, f"variants.{self.variant.name}")
        pod.check_cluster(self.variant)

    def prepare(self, say: Callable[[str], None]) -> None:
        """Make sure the nodes have the local image of its flavour (imported into the local cluster's containerd)."""
        if self.variant.image is None:
            pod.ensure_image_on_nodes(self.variant, say)

    # --- lifecycle -----------------------------------------------------------------------------------------

    def up(self, spec: ServerSpec) -> Endpoint:
        variant = self.variant
        self.api, self.core, self.nodes = pod.connect(variant)
        self.facts["cpu_manager_policy"] = cluster.check_cpu_manager(
            self.core, self.nodes, variant, manifests.exclusive_cpus(manifests.resources_for(variant)))
        self.spec = spec
        self.image = variant.image or pod.local_image_tag(variant)
        self.facts["image_architecture"] = cluster.image_architecture(variant, self.nodes, pod.pulled_images(variant))
        with signals_deferred():  # the namespace is noted for down() before it is created
            self.ns = variant.namespace or manifests.dns_name(spec.label)
            work = spec.work_dir / "k8s" / self.ns
            owners.record(spec.label, pid=None, marker="", paths=[work])
        self._create_base(spec)
        seeded, started = seed.made_meta(spec.snapshot), time.monotonic()  # a dataset made in the cluster, or None
        restored = create_server(self, spec, work, seeded)
        self.pod = pod.wait_ready(self.core, str(self.ns), variant.ready_timeout, self._failure)
        if restored:  # the pod's init container hashed the restored files
            volsnap.record_restore(self.core, self.ns, self.pod.metadata.name, spec, time.monotonic() - started,
                                   seeded)
        self._check_qos(variant)
        self.on_node = cluster.harness_is_a_node(self.nodes)
        self.facts |= podcpu.source_facts(self.on_node, str(self.pod.spec.node_name)) | {
            "server_sql": podexec.server_sql_path(self.on_node, self.server.flavour.name)}
        self._record_pod_facts()
        endpoint = service_endpoint(self, spec, variant)
        if variant.client != "job" or cluster.node_is_this_machine(self.nodes):
            wait_until_ready(endpoint, alive=self._alive, timeout=60, log_tail=self.server_log_tail)
        # else: this host may have no route to the cluster; every sysbench Job waits for the Service itself
        return endpoint

    def datasets_on_host(self) -> HostDatasets | None:
        """Where the hostPath cannot reach the server's node (off a node, or namespace-scoped mode), the dataset is
        made in the cluster by Jobs (seed.py); else None: this machine prepares it and a hostPath brings it."""
        return seed.cluster_seeds(self.variant, self.server)

    def _labels(self, role: str) -> dict[str, str]:
        assert self.spec is not None
        return manifests.labels(self.spec.campaign, self.spec.label, role)

    def _create_base(self, spec: ServerSpec) -> None:
        assert self.ns is not None
        scoped.create_run_namespace(self.core, self.variant, self.ns, self._labels("namespace"))
        conf, secret = manifests.config_files(self.server, spec)
        self._create(manifests.config_map(manifests.conf_map(self.server), self.ns, conf, self._labels("config")))
        self._create(manifests.secret("server-init", self.ns, secret, self._labels("secret")))

    def _create(self, body: dict[str, Any]) -> None:
        pod.create_object(self.api, self.core, body)

    def _failure(self, text: str) -> str:
        events = cluster.recent_events(self.core, self.ns or "")
        tail = self.server_log_tail(3).strip().replace("\n", " | ")
        return text + (f"; events: {events}" if events else "") + (f"; server log: {tail}" if tail else "")

    def _check_qos(self, variant: KubernetesVariant) -> None:
        got = self.pod.status.qos_class
        wanted = manifests.QOS_CLASS[variant.qos]
        self.facts |= {"qos_class": got, "node": self.pod.spec.node_name, "pod_ip": self.pod.status.pod_ip}
        self.placement = {"server_node": self.pod.spec.node_name}
        if got != wanted:
            raise RunFailed(f"variants.{variant.name}.qos: asked for {wanted}, the pod is {got}; check "
                            "requests/limits (a LimitRange in the namespace may add some)")

    def warn(self, text: str) -> None:
        """Recorded in describe(); the report lists it under Warnings."""
        if text not in (warnings := self.facts.setdefault("warnings", [])):
            warnings.append(text)

    def _alive(self) -> bool:
        with contextlib.suppress(Exception):
            found = pod.server_pod(self.core, str(self.ns))
            return found is not None and found.status.phase in ("Pending", "Running")
        return False

    def down(self) -> None:
        with signals_deferred():
            self._delete_all()

    def _delete_all(self) -> None:
        if self.forward is not None:
            self.forward.stop(timeout=5)
            self.forward = None
        if self.ns is not None and self.core is not None and self.spec is not None:
            scoped.remove_run(self.api, self.core, self.variant, self.ns, self.spec.label)
        if self.content is not None and self.api is not None:
            volsnap.delete_content(self.api, self.content)
            self.content = None
        if self.spec is not None:
            shutil.rmtree(self.spec.work_dir / "k8s" / (self.ns or ""), ignore_errors=True)
            owners.forget(self.spec.label)
        self.ns, self.spec, self.pod, self.server_pids, self.placement = None, None, None, [], {}

    def exit_cause(self) -> str | None:
        found = pod.server_pod(self.core, self.ns) if self.ns else None
        return pod.pod_exit_cause(found, self.variant.limits.get("memory"))

    # --- accounting and description ------------------------------------------------------------------------

    def components(self) -> dict[str, list[int]]:
        if self.pod is None or not self.on_node:  # off a node, this machine's processes are never the pod's
            return {}
        found = pod_components(str(self.pod.metadata.uid), Path(self.server.program).name)
        self.server_pids = found.get("server", self.server_pids)
        return found

    def client_processes(self, hook: Path) -> list[int]:
        """sysbench here (client: host, port-forward) or in a Job's pod on this node (its hook in CLIENT_DIR)."""
        return host_client_processes(hook) + (processes_with(f"{CLIENT_DIR}/hook.lua") if self.on_node else [])

    def cgroups(self) -> list[Path]:  # off a node none: components() finds no server here
        if not self.server_pids:
            self.components()
        return cgroup_dirs(self.server_pids[0]) if self.server_pids else []

    def _record_pod_facts(self) -> None:
        """What describe() reports about the running pod: its CPUs, its node's versions, a CPU manager warning."""
        if self.components().get("server"):
            self.facts["server_cpus_allowed"] = pod.cpus_allowed(self.server_pids[0])
        self.facts |= pod.node_versions(self.nodes, self.facts.get("node")) | pod.image_id(self.pod)
        if warning := unasked_exclusive_cores(self.variant, self.facts.get("cpu_manager_policy")):
            self.warn(warning)

    def describe(self) -> dict[str, Any]:
        v = self.variant
        # placement: the same dict the Job client fills as its pods are scheduled: the record has both nodes
        return {"backend": "kubernetes", "image": self.image, **self.server.flavour.facts(), **self.facts,
                "placement": self.placement, "qos_asked": v.qos, "kind": v.kind, "storage": v.storage,
                "client": v.client, "resources": manifests.resources_for(v), "cpu_manager_static": v.cpu_manager_static}

    def client(self) -> ClientRunner | None:
        if self.variant.client != "job":
            return None
        assert self.spec is not None and self.ns is not None
        return JobClient(self.api, self.ns, self.image or "", self.spec, self.variant, placement=self.placement,
                         server=(str(self.facts.get(f"{self.variant.client_target}_ip")),
                                 manifests.port_of(self.server)))

    def server_sql(self) -> Callable[[str], list[tuple[Any, ...]]] | None:
        """Off a node, the server's SQL in its container with its own client (podexec.py): no connection from
        here."""
        if self.on_node or self.pod is None or self.spec is None:
            return None
        return podexec.PodSql(self.core, str(self.ns), self.pod.metadata.name, self.server.flavour.name,
                              self.spec.database)

    def server_cpu_window(self) -> podcpu.PodCpuWindow | None:  # off a node: the server's CPU, read in its pod,
        beside = self.neighbours.refs if self.neighbours else list  # and its neighbours' pods not on this machine
        return None if self.pod is None or self.on_node else podcpu.PodCpuWindow(
            self.core, str(self.ns), self.pod.metadata.name, manifests.SERVER, str(self.pod.spec.node_name), beside)

    def quiet_load(self) -> QuietLoad | None:
        return quiet_load_of(self.variant, self.pod, self.server_cpu_window())

    def neighbour_pods(self) -> ContainerStarter | None:  # in the run's namespace, on the server pod's node
        self.neighbours = None if self.pod is None else NeighbourPods.of(self.core, str(self.ns), self.pod, self.nodes)
        return None if self.neighbours is None else self.neighbours.start

    def server_log_tail(self, lines: int = 20) -> str:
        return server_log_tail(self.core, str(self.ns), lines) if self.ns else ""


def service_endpoint(backend: KubernetesBackend, spec: ServerSpec, variant: KubernetesVariant) -> Endpoint:
    """The Service's cluster IP and the flavour's port (or kubectl port-forward's), in the flavour's driver."""
    service = backend.core.read_namespaced_service(manifests.SERVER, backend.ns)
    backend.facts["service_ip"] = service.spec.cluster_ip
    host, port = service.spec.cluster_ip, manifests.port_of(backend.server)
    if variant.client == "port-forward":
        (backend.forward, port), host = pod.port_forward(variant, str(backend.ns), spec.run_dir, port), "127.0.0.1"
        backend.warn(pod.PORT_FORWARD_WARNING)
    backend.facts["client_path"] = client_path(variant)
    return Endpoint(host, port, spec.user, spec.password, spec.database, driver=backend.server.flavour.driver)


def create_server(backend: KubernetesBackend, spec: ServerSpec, work: Path, seeded: dict[str, Any] | None) -> bool:
    """The server's objects on the run's data: a PVC (or an emptydir's source PVC) made from a VolumeSnapshot
    (True), a hostPath copy of this machine's snapshot, or an empty datadir; the record says which."""
    variant, ns = backend.variant, str(backend.ns)
    restored = spec.snapshot is not None and (variant.snapshot_class is not None or seeded is not None)
    source, snapshot, host_datadir = manifests.RESTORED_SNAPSHOT, None, None
    if restored:  # the run's VolumeSnapshotContent is cluster-scoped: noted for down() before it exists
        backend.content = volsnap.content_name(ns) if variant.namespace is None else None
        source = volsnap.snapshot_for_run(backend.api, backend.core, variant, spec, ns, str(backend.image),
                                          backend.nodes, seeded)
        backend.facts["data"] = seed.data_words(seeded, variant.storage)
    else:
        snapshot, host_datadir, backend.facts["data"] = pod.data_source(variant, spec, work, backend.nodes)
    backend.facts["dataset_path"] = seed.SEEDED if seeded is not None else volsnap.COPIED if spec.snapshot else None
    for body in manifests.server_objects(variant, backend.server, str(backend.image), ns, backend._labels("server"),
                                         snapshot_path=snapshot, host_datadir=host_datadir, restored=restored,
                                         source=source):
        backend._create(body)
        backend.facts |= volsnap.bound_claim(backend.api, backend.core, ns, variant, body)
    return restored
