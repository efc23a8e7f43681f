"""Neighbours in Kubernetes pods (`placement: kubernetes`, docs/neighbours.md): a pod of the QoS class asked for, on
the node the run's server pod was scheduled on (read from the API) or the node named, in the run's namespace and
labelled like every object of the run (`layerbench.role=neighbour`), so deleting the namespace (at the end of the
run, or `layerbench clean` after a SIGKILL of the harness) removes it too. Its image is the neighbour's `image:`,
pulled by the node, else the Docker neighbours' image (backends/docker/neighbours.py: stress-ng, fio, iperf3 from
Debian), imported into the local cluster's containerd like the server's, never pulled. The tool writes its report
into an emptyDir at the run's neighbours folder's own path, and the report comes back through the pod's log, read by
the API (podfiles.py). On a node that is this machine its processes are found by the pod's UID in their cgroup, for
the start check and the CPU sampler (`neighbour:<name>`), and a disk neighbour's data folder is a hostPath; on any
other node (the harness off the cluster's nodes, or a neighbour on another node) its container cgroup is read in the
pod through the exec API (podcpu.py: the start check's CPU, and `neighbour:<name>@<node>` beside the server's, never
the node's other load), and a disk neighbour writes in an emptyDir on the node's own disk."""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from layerbench.backends.kubernetes import access, cluster, manifests, pod, podcpu, podfiles
from layerbench.backends.kubernetes.procs import pod_processes
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.errors import BadInput, PrerequisiteMissing, RunFailed, shown
from layerbench.hosts import procfs
from layerbench.hosts.critical import signals_deferred
from layerbench.neighbours.model import ContainerSize, Neighbour
from layerbench.neighbours.placed import ContainerRequest, Placed
from layerbench.vocabulary.sizes import quantity, quantity_text, tool_size_bytes

BURSTABLE_MEMORY = "64Mi"  # a Burstable pod without `resources` asks for this much memory, and nothing else
GUARANTEED_MEMORY = 256 * 2**20  # a Guaranteed pod's memory without `resources.memory`, plus a memory kind's workers
START_TIMEOUT = 120.0
CONTAINER = "neighbour"
POLL = 0.3


def k8s_memory(text: str) -> str:
    """A neighbour's memory as Docker writes it (512m, 2g) as a Kubernetes quantity (512Mi, 2Gi)."""
    return text[:-1] + {"k": "Ki", "m": "Mi", "g": "Gi"}[text[-1]]


def pod_resources(neighbour: Neighbour) -> dict[str, dict[str, str]]:
    """Requests and limits that make its pod the QoS class asked for: BestEffort none; Burstable requests only
    (`resources.cpus` as its CPU request, if set; its memory, default 64Mi); Guaranteed requests = limits
    (`resources.cpus`, default 1, whole for guaranteed-pinned; memory default 256Mi plus a memory neighbour's
    workers x size)."""
    size, qos = neighbour.resources or ContainerSize(), neighbour.pod_qos
    if qos == "besteffort":
        return {}
    if qos == "burstable":
        requests = {"memory": k8s_memory(size.memory) if size.memory else BURSTABLE_MEMORY}
        return {"requests": requests | ({"cpu": f"{round(size.cpus * 1000)}m"} if size.cpus else {})}
    cpus = size.cpus or 1.0
    held = neighbour.worker_count * tool_size_bytes(neighbour.file_size) if neighbour.kind == "memory" else 0
    memory = k8s_memory(size.memory) if size.memory else f"{(GUARANTEED_MEMORY + held) >> 20}Mi"
    cpu = str(int(cpus)) if qos == "guaranteed-pinned" else f"{round(cpus * 1000)}m"
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


def pod_name(name: str) -> str:
    """A DNS-1123 name of its own per neighbour name (names differ in case or in `_` and `.` too)."""
    return f"{manifests.dns_name('nb-' + name)[:48]}-{hashlib.sha256(name.encode()).hexdigest()[:6]}"


def neighbour_pod(request: ContainerRequest, ns: str, node: str, image: str, here: bool = True) -> dict[str, Any]:
    """The pod: the tool's command under podfiles' wrapper, the run's neighbours folder (the first mount, where the
    tool writes its report) an emptyDir at its own path whose files come back through the pod's log, any other
    folder (a disk neighbour's data) a hostPath at its own path when `node` is this machine (`here`), else an
    emptyDir there too (on the node's own disk: no path of this machine is one of the node's); placed on `node`
    through the scheduler (a required node affinity on the node's name, so a pod that does not fit is reported
    Unschedulable with the scheduler's reason), never restarted."""
    mounts = [{"name": f"folder{i}", "mountPath": str(m)} for i, m in enumerate(request.mounts)]
    volumes = [{"name": f"folder{i}", **({"emptyDir": {}} if i == 0 or not here else {
        "hostPath": {"path": str(m.resolve()), "type": "Directory"}})} for i, m in enumerate(request.mounts)]
    command = podfiles.wrapped(request.mounts[0], request.command) if request.mounts else request.command
    container = {"name": CONTAINER, "image": image, "imagePullPolicy": "IfNotPresent", "command": command,
                 "resources": pod_resources(request.neighbour), "volumeMounts": mounts}
    on_node = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    spec = {"containers": [container], "volumes": volumes, "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 15, "enableServiceLinks": False, "automountServiceAccountToken": False,
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [on_node]}}}}
    labels = manifests.labels(request.campaign, request.name, "neighbour")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod_name(request.neighbour.name),
                                                            "namespace": ns, "labels": labels}, "spec": spec}


@dataclass
class NeighbourPods:
    """What a kubernetes run hands to neighbours/running.py: starts a neighbour's pod in the run's namespace, on
    the server pod's node (or the neighbour's own `node`). `here`: the nodes that are this machine, whose pods'
    processes are found and sampled here; on any other node the pod's CPU is read in it (podcpu.py). `started`:
    its pods, for the server's CPU window (refs)."""

    core: Any
    ns: str
    server_node: str
    here: frozenset[str] = frozenset()
    started: list[NeighbourPod] = field(default_factory=list)

    @classmethod
    def of(cls, core: Any, ns: str, server: Any, nodes: list[Any]) -> NeighbourPods:
        """For a run whose server pod is `server`, its candidate nodes `nodes` (those that are this machine: here);
        the backend's server CPU window reads the others' pods (refs)."""
        return cls(core, ns, str(server.spec.node_name), cluster.nodes_here(nodes))

    def refs(self) -> list[podcpu.PodRef]:
        """The pods read in them (off this machine) that still run: the server's CPU window reads them too."""
        return [podcpu.PodRef(p.neighbour, p.name, CONTAINER, p.node) for p in self.started
                if not p.on_node and p.code is None]

    def start(self, request: ContainerRequest) -> Placed:
        from layerbench.backends.docker.neighbours import neighbour_image_tag

        node = request.neighbour.node or self.server_node
        on_node = node in self.here
        body = neighbour_pod(request, self.ns, node, request.neighbour.image or neighbour_image_tag(), on_node)
        from kubernetes.client.exceptions import ApiException

        try:
            with signals_deferred():  # in the run's namespace: deleted with it, whatever happens next
                self.core.create_namespaced_pod(self.ns, body, _request_timeout=cluster.TIMEOUT)
        except ApiException as error:
            refused = access.forbidden_text(error.body) if error.status == 403 else None
            raise RunFailed(f"neighbour {request.neighbour.name}: the API refused its pod: {error.status} "
                            f"{error.reason}" + (f" ({refused}; grant it: {access.RBAC_FILE})" if refused else "")
                            ) from None
        placed = NeighbourPod(self.core, self.ns, body["metadata"]["name"], request.neighbour.name, request.log_path,
                              request.mounts[0] if request.mounts else None, node=node, on_node=on_node)
        self.started.append(placed)
        try:
            placed.wait_running(START_TIMEOUT)
        except BaseException:
            placed.stop(timeout=1)
            raise
        return placed


@dataclass
class NeighbourPod:
    """One neighbour's pod (placed.Placed)."""

    core: Any
    ns: str
    name: str
    neighbour: str
    log_path: Path | None
    folder: Path | None = None  # where its report goes here (podfiles: through its log)
    node: str = ""
    on_node: bool = True  # its node is this machine: its processes are found here; else its CPU is read in it
    roots: list[int] = field(default_factory=list)
    seen: dict[str, Any] = field(default_factory=dict)
    code: int | None = None

    def _read(self) -> Any:
        from kubernetes.client.exceptions import ApiException

        try:
            return self.core.read_namespaced_pod(self.name, self.ns, _request_timeout=cluster.TIMEOUT)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def wait_running(self, timeout: float) -> None:
        """Until its container runs and its processes are found here (off this machine: its cgroup is read in it,
        cpu_seconds); RunFailed with the reason otherwise."""
        deadline, unread = time.monotonic() + timeout, ""
        while time.monotonic() < deadline:
            found = self._read()
            trouble = cluster.pod_trouble(self.core, self.ns, found) if found is not None else "it is gone"
            if trouble or (found is not None and found.status.phase in ("Succeeded", "Failed")):
                raise RunFailed(f"neighbour {self.neighbour}: its pod did not run: {trouble or found.status.phase}; "
                                f"{self.tail(3) or cluster.recent_events(self.core, self.ns) or 'no output'}")
            if found.status.phase == "Running":
                self.seen = {"node": found.spec.node_name, "qos_class": found.status.qos_class, "pod": self.name}
                if not self.on_node:
                    try:
                        self.cpu_seconds()
                        return
                    except RunFailed as error:  # not yet exec-able: polled again
                        unread = f"its CPU could not be read in it ({error}); "
                else:
                    self.roots = pod_processes(str(found.metadata.uid))
                    if self.roots:
                        return
            time.sleep(POLL)
        raise RunFailed(f"neighbour {self.neighbour}: its pod was not running within {timeout:.0f} s; {unread}"
                        f"{cluster.recent_events(self.core, self.ns) or 'see kubectl describe pod'}")

    def pids(self) -> list[int]:
        return [pid for pid in self.roots if procfs.exists(pid)]

    def cpu_seconds(self) -> float | None:
        """Off this machine, its container cgroup's CPU seconds so far, read in the pod (podcpu.exec_reading;
        RunFailed when it cannot be); None on a node that is this machine (pids() are sampled here)."""
        if self.on_node:
            return None
        used = podcpu.exec_reading(self.core, self.ns, self.name, CONTAINER).usage_ns
        if used is None:
            raise RunFailed(f"neighbour {self.neighbour}: its pod's cgroup gives no CPU usage")
        return used / 1e9

    def alive(self) -> bool:
        with contextlib.suppress(Exception):
            found = self._read()
            return found is not None and found.status.phase == "Running" and (not self.on_node or bool(self.pids()))
        return False

    def exit_code(self) -> int | None:
        with contextlib.suppress(Exception):
            self._note_exit(self._read())
        return self.code

    def _note_exit(self, found: Any) -> None:
        for status in (found.status.container_statuses or []) if found is not None else []:
            if status.state and status.state.terminated:
                self.code = int(status.state.terminated.exit_code)

    def tail(self, lines: int) -> str:
        with contextlib.suppress(Exception):
            return str(self.core.read_namespaced_pod_log(self.name, self.ns, tail_lines=lines,
                                                         _request_timeout=cluster.TIMEOUT)).strip()
        return ""

    def facts(self) -> dict[str, Any]:
        return dict(self.seen)

    def stop(self, timeout: float) -> int | None:
        """Deleted with a grace period of `timeout` (SIGTERM: the tool writes its report; SIGKILL after it); its
        log, followed from before the deletion to the container's end, holds the tool's output (kept in log_path)
        and its report (written to `folder`: podfiles); then waited for until it is gone."""
        stream = None
        with contextlib.suppress(Exception):
            stream = self.core.read_namespaced_pod_log(self.name, self.ns, follow=True, _preload_content=False,
                                                       _request_timeout=(cluster.TIMEOUT, timeout + 60))
        with contextlib.suppress(Exception):
            self.core.delete_namespaced_pod(self.name, self.ns, grace_period_seconds=max(1, int(timeout)),
                                            _request_timeout=cluster.TIMEOUT)
        kept = stream is not None and self._keep_output(read_bounded(stream))
        deadline = time.monotonic() + timeout + 60
        while time.monotonic() < deadline:
            try:
                found = self._read()
            except Exception:
                break
            if found is None:
                break
            self._note_exit(found)
            if self.code is not None and not kept:  # the follow was cut short: the ended container's log, once
                with contextlib.suppress(Exception):
                    kept = self._keep_output(self.core.read_namespaced_pod_log(
                        self.name, self.ns, limit_bytes=podfiles.LOG_LIMIT, _preload_content=False,
                        _request_timeout=cluster.TIMEOUT).data) or True
            time.sleep(POLL)
        return self.code

    def _keep_output(self, log: bytes) -> bool:
        """The tool's output into log_path, its files into `folder`; True when the wrapper's end was in it."""
        output, files = podfiles.unpack(log)
        if self.log_path is not None:
            self.log_path.write_text(output, encoding="utf-8")
        if self.folder is not None:
            podfiles.write_files(self.folder, files)
        return bool(files)


def read_bounded(stream: Any) -> bytes:
    """A followed log until its container ends (or podfiles.LOG_LIMIT bytes, or the read timeout)."""
    data = bytearray()
    with contextlib.suppress(Exception):
        for chunk in stream.stream(2**16):
            data += chunk
            if len(data) > podfiles.LOG_LIMIT:
                break
    with contextlib.suppress(Exception):
        stream.release_conn()
    return bytes(data)


# --- before anything starts (validate) and once per campaign -------------------------------------------------


def check_neighbour_pods(variant: KubernetesVariant, pods: list[Neighbour]) -> None:
    """The cluster answers, a named node exists, off a node the pod's image is one the nodes pull (check_off_node),
    a guaranteed-pinned pod finds the static CPU manager, and the pods fit beside the server's."""
    where = f"variants.{variant.name}.neighbours.{pods[0].name}"
    if variant.namespace is not None:
        raise BadInput(f"{where}.placement: kubernetes: a pod neighbour is placed on the server's node, which "
                       f"namespace: {variant.namespace} cannot read (nodes are cluster-scoped); remove namespace, or "
                       "place the neighbour elsewhere")
    try:
        api = cluster.api_client(variant)
    except PrerequisiteMissing as error:
        raise BadInput(f"{where}.placement: kubernetes: {error}") from None
    with access.readable_403(f"{where}.placement"):
        pinned = any(n.pod_qos == "guaranteed-pinned" for n in pods)
        access.check_rights(api, access.needed_rights(variant, pinned), f"{where}.placement")
        _, core, nodes = pod.connect(variant)
        every = {n.metadata.name: n for n in core.list_node(_request_timeout=cluster.TIMEOUT).items}
    on_node = cluster.harness_is_a_node(nodes)
    for neighbour in pods:
        where = f"variants.{variant.name}.neighbours.{neighbour.name}"
        if neighbour.node is not None and neighbour.node not in every:
            raise BadInput(f"{where}.node: {shown(neighbour.node)} is not a node of the cluster (it has: "
                           f"{', '.join(sorted(every))}); name one of them, or remove node (the server pod's node)")
        placed = [every[neighbour.node]] if neighbour.node else nodes
        check_off_node(variant, neighbour, on_node, cluster.node_is_this_machine(placed), placed)
        if neighbour.pod_qos == "guaranteed-pinned":
            check_static(core, placed, where)
    check_room(variant, pods, nodes)


def check_off_node(variant: KubernetesVariant, neighbour: Neighbour, on_node: bool, here: bool,
                   placed: list[Any]) -> None:
    """Off a node the nodes pull the neighbour's image (`image:`, checked in its registry against the nodes'
    architecture), and a disk neighbour's `folder`, a path of this machine, is none of its node's."""
    where = f"variants.{variant.name}.neighbours.{neighbour.name}"
    if not here and neighbour.folder is not None:
        raise BadInput(f"{where}.folder: {shown(neighbour.folder)} is a folder of this machine, and the pod's node is "
                       "not this machine (its fio writes in an emptyDir on the node's own disk); remove folder")
    if on_node or neighbour.image is not None:
        if neighbour.image is not None:
            cluster.check_pulled_image(neighbour.image, placed, f"{where}.image")
        return
    raise BadInput(f"{where}.image: off a node the nodes pull the neighbour pod's image, and layerbench's is "
                   "imported only into a local cluster; push it (layerbench image push <registry>) and set image: "
                   "to the layerbench/neighbours reference it printed")


def check_static(core: Any, nodes: list[Any], where: str) -> None:
    for node in nodes:
        policy = cluster.kubelet_config(core, node.metadata.name).get("cpuManagerPolicy", "unknown")
        if policy != "static":
            raise BadInput(f"{where}.qos: guaranteed-pinned needs exclusive cores, and the kubelet on node "
                           f"{node.metadata.name} runs the CPU manager policy {policy!r}; restart the local cluster "
                           "with K8S_LOCAL_CPU_MANAGER_POLICY=static scripts/k8s-local up, or use qos: guaranteed")


def check_room(variant: KubernetesVariant, pods: list[Neighbour], nodes: list[Any]) -> None:
    """The server's requests and those of the neighbours beside it (no `node` of their own) fit in the largest
    allocatable of the server's nodes: else the neighbour's pod would stay Pending."""
    beside = [n for n in pods if n.node is None]
    for key in ("cpu", "memory"):
        asked = quantity(manifests.resources_for(variant).get("requests", {}).get(key, "0"))
        best = max(quantity(n.status.allocatable.get(key, "0")) for n in nodes)
        for neighbour in beside:
            asked += quantity(pod_resources(neighbour).get("requests", {}).get(key, "0"))
            if asked > best:
                raise BadInput(f"variants.{variant.name}.neighbours.{neighbour.name}.resources: its pod's {key} "
                               f"request and the server's come to {amount(asked, key)}, more than its node can give "
                               f"({amount(best, key)} allocatable); lower it (a burstable pod may ask for memory "
                               "only)")


def amount(value: Decimal, key: str) -> str:
    return quantity_text(value, key) + (" CPU" if key == "cpu" else "")


IMPORTED: set[tuple[str | None, str | None, str]] = set()  # (kubeconfig, context, image) done by this harness


def ensure_neighbour_image_on_nodes(variant: KubernetesVariant, say: Callable[[str], None]) -> None:
    """The Docker neighbours' image (built here when missing), imported into the local cluster's containerd once
    per cluster (a node lists a new image only at its next status update)."""
    from layerbench.backends.docker.daemon import docker_client
    from layerbench.backends.docker.neighbours import ensure_neighbour_image

    tag = ensure_neighbour_image(docker_client(), say)  # asked only when a pod neighbour has no image: of its own
    if (variant.kubeconfig, variant.context, tag) not in IMPORTED:
        pod.import_into_nodes(variant, tag, say, f"variants.{variant.name}.neighbours",
                              "(pod neighbours: not yet on a remote cluster)")
        IMPORTED.add((variant.kubeconfig, variant.context, tag))
