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
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layerbench import owners
from layerbench.backends import kubernetes_cluster as cluster
from layerbench.backends import kubernetes_manifests as manifests
from layerbench.backends.base import ClientRunner, Endpoint, ServerSpec, host_client_processes
from layerbench.backends.kubernetes_job import JobClient
from layerbench.backends.kubernetes_procs import pod_components
from layerbench.backends.procfs import cgroup_dirs
from layerbench.campaign import KubernetesVariant
from layerbench.critical import signals_deferred
from layerbench.errors import BadInput, RunFailed
from layerbench.machine import free_port
from layerbench.owners import processes_with
from layerbench.procs import ManagedProcess, start
from layerbench.server.bootstrap import server_files
from layerbench.server.datadir import copy_tree, wait_until_ready
from layerbench.server.mycnf import check_overlay

DELETE_TIMEOUT = 180.0


class KubernetesBackend:
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

    # --- preflight -----------------------------------------------------------------------------------------

    def check(self) -> None:
        """The cluster answers and can hold the pod as asked; reads only, keeps nothing."""
        from kubernetes import client

        variant = self.variant
        check_overlay(variant.server.config, f"variants.{variant.name}")
        resources = manifests.resources_for(variant)
        api, core, nodes = connect(variant)
        cluster.check_client_placement(core, nodes, variant)
        cluster.check_capacity(nodes, resources, variant)
        cluster.check_storage_class(client.StorageV1Api(api), variant)
        cluster.check_cpu_manager(core, nodes, variant, manifests.exclusive_cpus(resources))
        if variant.storage == "hostpath" and not cluster.node_is_this_machine(nodes):
            raise BadInput(f"variants.{variant.name}.storage: hostpath puts the datadir in a folder of this "
                           "machine, which is not the cluster's node; use emptydir or pvc")

    def prepare(self, say: Callable[[str], None]) -> None:
        """Make sure the nodes have the locally built image (imported into the local cluster's containerd)."""
        variant = self.variant
        if variant.image is not None:
            return
        from layerbench.backends.docker_daemon import docker_client
        from layerbench.server.image import ensure_docker_image

        tag = ensure_docker_image(docker_client(), say)
        _, _, nodes = connect(variant)
        if cluster.image_on_nodes(nodes, tag):
            return
        script = cluster.k8s_local_script()
        if script is None or not cluster.node_is_this_machine(nodes):
            raise BadInput(f"variants.{variant.name}.image: the cluster's nodes do not have {tag}; push it to a "
                           "registry they can pull from and set image:")
        say(f"importing {tag} into the local cluster's containerd")
        done = subprocess.run([str(script), "image-import", tag], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RunFailed(f"scripts/k8s-local image-import {tag} failed: {done.stderr.strip()[-300:]}")

    # --- lifecycle -----------------------------------------------------------------------------------------

    def up(self, spec: ServerSpec) -> Endpoint:
        variant = self.variant
        self.api, self.core, self.nodes = connect(variant)
        self.facts["cpu_manager_policy"] = cluster.check_cpu_manager(
            self.core, self.nodes, variant, manifests.exclusive_cpus(manifests.resources_for(variant)))
        from layerbench.server.image import image_tag

        self.spec = spec
        self.image = variant.image or image_tag()
        with signals_deferred():  # the namespace is noted for down() before it is created
            self.ns = manifests.dns_name(spec.label)
            work = spec.work_dir / "k8s" / self.ns
            owners.record(spec.label, pid=None, marker="", paths=[work])
        self._create_base(spec)
        snapshot, host_datadir = self._data(spec, work)
        for body in manifests.server_objects(variant, self.image, self.ns, self._labels("server"),
                                             snapshot_path=snapshot, host_datadir=host_datadir):
            self._create(body)
        self.pod = self._wait_ready(variant)
        self._check_qos(variant)
        self._record_pod_facts()
        endpoint = self._endpoint(spec, variant)
        if variant.client != "job" or cluster.node_is_this_machine(self.nodes):
            wait_until_ready(endpoint, alive=self._alive, timeout=60, log_tail=self.server_log_tail)
        # else: this host may have no route to the cluster; every sysbench Job waits for the Service itself
        return endpoint

    def _labels(self, role: str) -> dict[str, str]:
        assert self.spec is not None
        return manifests.labels(self.spec.campaign, self.spec.label, role)

    def _create_base(self, spec: ServerSpec) -> None:
        assert self.ns is not None
        with signals_deferred():  # no Ctrl-C between the request and the API server's creation
            self.core.create_namespace(manifests.namespace(self.ns, self._labels("namespace")))
        owned = {"datadir": manifests.DATADIR, "port": manifests.PORT, "socket": manifests.SOCKET,
                 "bind-address": "0.0.0.0", "pid-file": "/run/mysqld/mysqld.pid", "user": "root"}
        files = server_files(spec, owned)
        self._create(manifests.config_map("mycnf", self.ns, {"my.cnf": files.mycnf}, self._labels("config")))
        self._create(manifests.secret("server-init", self.ns, {"init.sql": files.init_sql}, self._labels("secret")))

    def _data(self, spec: ServerSpec, work: Path) -> tuple[str | None, str | None]:
        """Where the pod finds the dataset: the snapshot through hostPath (copied into its volume), a hostPath
        copy used in place, or nothing (an empty datadir for reset: reprepare)."""
        variant = self.variant
        if spec.snapshot is None:
            where = "by sysbench Jobs in the cluster" if variant.client == "job" else "by sysbench on this host"
            self.facts["data"] = f"empty datadir (tables prepared {where}: reset reprepare)"
            return None, None
        if not cluster.node_is_this_machine(self.nodes):
            raise RunFailed("the dataset snapshot reaches a pod through hostPath, which needs the cluster's node to "
                            "be this machine; with a remote cluster set the workload's reset: reprepare")
        if variant.storage == "hostpath":
            target = work / "datadir"
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_tree(spec.snapshot, target)
            self.facts["data"] = "snapshot copied on the host into the hostPath datadir"
            return str(spec.snapshot.resolve()), str(target.resolve())
        self.facts["data"] = f"snapshot copied from a read-only hostPath into the {variant.storage} datadir"
        return str(spec.snapshot.resolve()), None

    def _create(self, body: dict[str, Any]) -> None:
        from kubernetes import client

        ns = body["metadata"].get("namespace")
        kind = body["kind"]
        if kind == "StatefulSet":
            client.AppsV1Api(self.api).create_namespaced_stateful_set(ns, body)
        elif kind == "Job":
            client.BatchV1Api(self.api).create_namespaced_job(ns, body)
        else:
            method = {"Pod": "pod", "Service": "service", "Secret": "secret", "ConfigMap": "config_map",
                      "PersistentVolumeClaim": "persistent_volume_claim"}[kind]
            getattr(self.core, f"create_namespaced_{method}")(ns, body)

    def _server_pod(self) -> Any:
        pods = self.core.list_namespaced_pod(self.ns, label_selector="layerbench.role=server",
                                             _request_timeout=cluster.TIMEOUT).items
        return pods[0] if pods else None

    def _wait_ready(self, variant: KubernetesVariant) -> Any:
        deadline = time.monotonic() + variant.ready_timeout
        pod = None
        while time.monotonic() < deadline:
            pod = self._server_pod()
            if pod is not None:
                if any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []):
                    return pod
                trouble = cluster.pod_trouble(self.core, self.ns, pod)
                if trouble:
                    raise RunFailed(self._failure(f"server pod {pod.metadata.name}: {trouble}"))
            time.sleep(0.5)
        phase = pod.status.phase if pod is not None else "not created"
        raise RunFailed(self._failure(f"server pod not Ready within {variant.ready_timeout} s (phase {phase}); "
                                      "raise ready_timeout or see the events"))

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

    def _endpoint(self, spec: ServerSpec, variant: KubernetesVariant) -> Endpoint:
        service = self.core.read_namespaced_service(manifests.SERVER, self.ns)
        self.facts["service_ip"] = service.spec.cluster_ip
        host, port = service.spec.cluster_ip, manifests.PORT
        if variant.client == "port-forward":
            host, port = "127.0.0.1", self._port_forward(spec)
        self.facts["client_path"] = {"host": "this host -> Service cluster IP (kube-proxy)",
                                     "job": "a Job in the cluster -> Service cluster IP",
                                     "port-forward": "kubectl port-forward (slow path)"}[variant.client]
        return Endpoint(host, port, spec.user, spec.password, spec.database)

    def _port_forward(self, spec: ServerSpec) -> int:
        kubectl = shutil.which("kubectl") or str(cluster.local_kubeconfig().parent / "kubectl")
        local = sorted(Path("/var/cache/layerbench/k8s").glob("*/bin/kubectl"))
        if not Path(kubectl).is_file() and local:
            kubectl = str(local[-1])
        if not Path(kubectl).is_file():
            raise RunFailed("client: port-forward needs kubectl on PATH; install it or use client: host or job")
        port = free_port()
        cmd = [kubectl, f"--kubeconfig={cluster.kubeconfig_path(self.variant)}", "-n", str(self.ns),
               "port-forward", f"svc/{manifests.SERVER}", f"{port}:{manifests.PORT}", "--address=127.0.0.1"]
        self.forward = start("kubectl port-forward", cmd, log_path=spec.run_dir / "port-forward.log")
        self.warn("sysbench reaches the server through kubectl port-forward: a slow path that swamps the "
                  "measurement; use client: host or job where the network allows")
        return port

    def warn(self, text: str) -> None:
        """Recorded in describe(); the report lists it under Warnings."""
        self.facts.setdefault("warnings", [])
        if text not in self.facts["warnings"]:
            self.facts["warnings"].append(text)

    def _alive(self) -> bool:
        with contextlib.suppress(Exception):
            pod = self._server_pod()
            return pod is not None and pod.status.phase in ("Pending", "Running")
        return False

    def down(self) -> None:
        with signals_deferred():
            self._delete_all()

    def _delete_all(self) -> None:
        if self.forward is not None:
            self.forward.stop(timeout=5)
            self.forward = None
        if self.ns is not None and self.core is not None:
            delete_namespace(self.core, self.ns)
        if self.spec is not None:
            shutil.rmtree(self.spec.work_dir / "k8s" / (self.ns or ""), ignore_errors=True)
            owners.forget(self.spec.label)
        self.ns, self.spec, self.pod, self.server_pids = None, None, None, []
        self.placement = {}

    def exit_cause(self) -> str | None:
        pod = self._server_pod() if self.ns else None
        for status in (pod.status.container_statuses or []) if pod else []:
            term = (status.state.terminated if status.state else None) or (
                status.last_state.terminated if status.last_state else None)
            if term and term.reason == "OOMKilled":
                limit = self.variant.limits.get("memory") or "of the pod"
                return f"was OOM-killed (memory limit {limit}; raise limits.memory)"
            if term:
                return f"exited with code {term.exit_code} ({term.reason})"
        return None

    # --- accounting and description ------------------------------------------------------------------------

    def components(self) -> dict[str, list[int]]:
        if self.pod is None:
            return {}
        found = pod_components(str(self.pod.metadata.uid))
        self.server_pids = found.get("server", self.server_pids)
        return found

    def client_processes(self, hook: Path) -> list[int]:
        """sysbench on this host (client: host, port-forward) or in a Job's pod on this machine (its hook under
        CLIENT_DIR)."""
        return host_client_processes(hook) + processes_with(f"{manifests.CLIENT_DIR}/hook.lua")

    def cgroups(self) -> list[Path]:
        if not self.server_pids:
            self.components()
        return cgroup_dirs(self.server_pids[0]) if self.server_pids else []

    def _record_pod_facts(self) -> None:
        """What describe() reports about the running pod: its CPUs, its node's versions, a CPU manager warning."""
        v = self.variant
        if self.components().get("server"):
            self.facts["server_cpus_allowed"] = cpus_allowed(self.server_pids[0])
        if not v.cpu_manager_static and self.facts.get("cpu_manager_policy") == "static" and \
                manifests.exclusive_cpus(manifests.resources_for(v)):
            self.warn("the kubelet's static CPU manager gave this Guaranteed pod exclusive cores although "
                      "cpu_manager_static is false (a whole CPU count); use a fractional cpu limit (like 999m) "
                      "for a pod on the shared cores")
        with contextlib.suppress(Exception):
            node = next(n for n in self.nodes if n.metadata.name == self.facts.get("node"))
            self.facts["kubelet_version"] = node.status.node_info.kubelet_version
            self.facts["container_runtime"] = node.status.node_info.container_runtime_version

    def describe(self) -> dict[str, Any]:
        v = self.variant
        # placement: the same dict the Job client fills as its pods are scheduled: the record has both nodes
        return {"backend": "kubernetes", "image": self.image, **self.facts, "placement": self.placement,
                "qos_asked": v.qos, "kind": v.kind, "storage": v.storage, "client": v.client,
                "resources": manifests.resources_for(v), "cpu_manager_static": v.cpu_manager_static}

    def client(self) -> ClientRunner | None:
        if self.variant.client != "job":
            return None
        assert self.spec is not None and self.ns is not None
        return JobClient(self.api, self.ns, self.image or "", self.spec, self.variant,
                         server=(str(self.facts.get("service_ip")), manifests.PORT), placement=self.placement)

    def server_log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(Exception):
            pod = self._server_pod()
            if pod is not None:
                return str(self.core.read_namespaced_pod_log(pod.metadata.name, self.ns, container=manifests.SERVER,
                                                             tail_lines=lines, _request_timeout=cluster.TIMEOUT))
        return ""


def connect(variant: KubernetesVariant) -> tuple[Any, Any, list[Any]]:
    """An API client for the variant's cluster, its core API, and the nodes the server may run on."""
    from kubernetes import client

    api = cluster.api_client(variant)
    core = client.CoreV1Api(api)
    return api, core, cluster.nodes_for(core, variant)


def cpus_allowed(pid: int) -> str | None:
    """The CPUs the server may run on (its cpuset): shows whether the static CPU manager gave it exclusive ones."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return None


def delete_namespace(core: Any, ns: str, timeout: float = DELETE_TIMEOUT) -> None:
    """Delete a namespace and wait until it is gone (its pods' cores and memory are free again)."""
    from kubernetes.client.exceptions import ApiException

    try:
        core.delete_namespace(ns, propagation_policy="Foreground", _request_timeout=cluster.TIMEOUT)
    except ApiException as error:
        if error.status == 404:
            return
        raise
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            core.read_namespace(ns, _request_timeout=cluster.TIMEOUT)
        except ApiException as error:
            if error.status == 404:
                return
        time.sleep(0.5)
    raise RunFailed(f"namespace {ns} still exists {timeout:.0f} s after its deletion; see `kubectl get ns {ns}`")
