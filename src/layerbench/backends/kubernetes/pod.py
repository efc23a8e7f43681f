"""The pod side of the Kubernetes backend, as plain functions: connect to a cluster, create an object, find the
server pod and why it stopped, where it finds its dataset, a port-forward to it, facts of its node, and the
deletion of a run's namespace (also used by `layerbench clean`)."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layerbench.backends.base import ServerSpec
from layerbench.backends.kubernetes import access, cluster, manifests
from layerbench.backends.kubernetes.variant import KubernetesVariant, restores_snapshots
from layerbench.errors import BadInput, RunFailed
from layerbench.hosts import procfs
from layerbench.hosts.machine import free_port
from layerbench.hosts.procs import ManagedProcess, capture, start
from layerbench.server.restore import RestoreFacts, copy_tree

DELETE_TIMEOUT = 180.0
IMPORT_TIMEOUT = 900.0  # scripts/k8s-local image-import: one image into the local cluster's containerd
PORT_FORWARD_WARNING = ("sysbench reaches the server through kubectl port-forward: a slow path that swamps the "
                        "measurement; use client: host or job where the network allows")


def check_cluster(variant: KubernetesVariant) -> None:
    """The cluster answers and can hold the variant's pod (nodes, placement, capacity, storage, CPU manager)."""
    from kubernetes import client

    resources = manifests.resources_for(variant)
    api = cluster.api_client(variant)
    access.check_rights(api, access.needed_rights(variant), f"variants.{variant.name}", variant.namespace or "")
    core = client.CoreV1Api(api)
    if variant.namespace is not None:  # reads no node nor class: the variant refuses what would need them
        cluster.check_client_reach(core, [], variant)
        return
    nodes = cluster.nodes_for(core, variant)
    cluster.check_client_reach(core, nodes, variant)
    cluster.check_client_placement(core, nodes, variant)
    cluster.check_capacity(nodes, resources, variant)
    cluster.check_storage_class(client.StorageV1Api(api), variant)
    cluster.check_snapshot_class(api, variant)
    cluster.check_cpu_manager(core, nodes, variant, manifests.exclusive_cpus(resources))
    cluster.image_architecture(variant, nodes, pulled_images(variant))
    if variant.storage == "hostpath" and not cluster.node_is_this_machine(nodes):
        raise BadInput(f"variants.{variant.name}.storage: hostpath puts the datadir in a folder of this "
                       "machine, which is not the cluster's node; use emptydir or pvc")
    if restores_snapshots(variant) and not cluster.node_is_this_machine(nodes):  # made in the cluster (seed.py)
        cluster.seed_snapshot_class(api, variant)


def pulled_images(variant: KubernetesVariant) -> list[str]:
    """The images the nodes pull (image: and the sysbench Job's, manifests.client_image); none when layerbench
    builds them here and imports them into the local cluster."""
    if variant.image is None:
        return []
    client = manifests.client_image(variant, variant.image) if variant.client == "job" else variant.image
    return list(dict.fromkeys([variant.image, client]))


def local_image_tag(variant: KubernetesVariant) -> str:
    """The tag of the locally built image of the variant's flavour: MariaDB's (this machine's package) or MySQL's
    (imported from the cached rootfs: server/mysql_image.py); a MySQL rootfs that is not built is a one-line
    BadInput naming the command that builds it; a `mysqld:` variant's: the image of its root filesystem."""
    if variant.mysqld is not None:
        from layerbench.server.binary_root import require_root
        from layerbench.server.mysql_image import root_image_tag

        return root_image_tag(require_root(variant.mysqld, f"variants.{variant.name}.mysqld").root)
    if variant.server.flavour == "mysql":
        from layerbench.server.mysql_image import mysql_image_tag
        from layerbench.server.mysql_rootfs import require_rootfs
        from layerbench.server.servers import DEFAULT_MYSQL

        where = f"variants.{variant.name}.server.version"
        return mysql_image_tag(require_rootfs(variant.server.version or DEFAULT_MYSQL, where))
    if variant.server.flavour == "postgresql":
        from layerbench.server.postgresql_image import postgresql_image_tag

        return postgresql_image_tag()
    from layerbench.server.image import image_tag

    return image_tag()


def local_image_in_docker(variant: KubernetesVariant, say: Callable[[str], None]) -> str:
    """The variant's local image in this machine's Docker (built or imported now when missing): its tag."""
    from layerbench.backends.docker.daemon import docker_client

    if variant.mysqld is not None:
        from layerbench.server.binary_root import require_root
        from layerbench.server.mysql_image import ensure_root_image

        found = require_root(variant.mysqld, f"variants.{variant.name}.mysqld")
        return ensure_root_image(docker_client(), found.root, found.inside, say)
    if variant.server.flavour == "postgresql":
        from layerbench.server.postgresql_image import ensure_postgresql_image

        return ensure_postgresql_image(docker_client(), say)
    if variant.server.flavour == "mysql":
        from layerbench.server.mysql_image import ensure_mysql_image
        from layerbench.server.servers import DEFAULT_MYSQL

        return ensure_mysql_image(docker_client(), variant.server.version or DEFAULT_MYSQL,
                                  f"variants.{variant.name}.server.version", say)
    from layerbench.server.image import ensure_docker_image

    return ensure_docker_image(docker_client(), say)


def ensure_image_on_nodes(variant: KubernetesVariant, say: Callable[[str], None]) -> None:
    """The locally built image of the variant's flavour on the cluster's nodes: imported into the local cluster's
    containerd if missing (from this machine's Docker, where it is built or imported first); a MySQL variant's
    sysbench Job needs the MariaDB image too (manifests.client_image)."""
    import_into_nodes(variant, local_image_in_docker(variant, say), say, f"variants.{variant.name}.image",
                      "and set image:")
    if (variant.server.flavour == "mysql" or variant.mysqld is not None) and variant.client == "job":
        from layerbench.backends.docker.daemon import docker_client
        from layerbench.server.image import ensure_docker_image

        import_into_nodes(variant, ensure_docker_image(docker_client(), say), say, f"variants.{variant.name}.client",
                          "(layerbench's MariaDB image: its sysbench runs the Job), or use client: host")


def import_into_nodes(variant: KubernetesVariant, tag: str, say: Callable[[str], None], where: str,
                      fix: str) -> None:
    """A local Docker image on the variant's nodes: imported into the local cluster's containerd if missing."""
    _, _, nodes = connect(variant)
    if cluster.image_on_nodes(nodes, tag):
        return
    script = cluster.k8s_local_script()
    if script is None or not cluster.node_is_this_machine(nodes):
        raise BadInput(f"{where}: the cluster's nodes do not have {tag}; push it to a registry they can pull from "
                       f"{fix}")
    say(f"importing {tag} into the local cluster's containerd")
    done = capture([str(script), "image-import", tag], timeout=IMPORT_TIMEOUT)
    if done.returncode != 0:
        raise RunFailed(f"scripts/k8s-local image-import {tag} failed: {done.stderr.strip()[-300:]}")


def wait_ready(core: Any, ns: str, timeout: int, failure: Callable[[str], str]) -> Any:
    """The server pod once Ready; RunFailed (with `failure`'s events and log) when it cannot start in time."""
    deadline = time.monotonic() + timeout
    found = None
    while time.monotonic() < deadline:
        found = server_pod(core, ns)
        if found is not None:
            if any(c.type == "Ready" and c.status == "True" for c in found.status.conditions or []):
                return found
            trouble = cluster.pod_trouble(core, ns, found)
            if trouble:
                raise RunFailed(failure(f"server pod {found.metadata.name}: {trouble}"))
        time.sleep(0.5)
    phase = found.status.phase if found is not None else "not created"
    raise RunFailed(failure(f"server pod not Ready within {timeout} s (phase {phase}); "
                            "raise ready_timeout or see the events"))


def create_object(api: Any, core: Any, body: dict[str, Any]) -> None:
    from kubernetes import client

    ns = body["metadata"].get("namespace")
    kind = body["kind"]
    if kind == "StatefulSet":
        client.AppsV1Api(api).create_namespaced_stateful_set(ns, body)
    elif kind == "Job":
        client.BatchV1Api(api).create_namespaced_job(ns, body)
    else:
        method = {"Pod": "pod", "Service": "service", "Secret": "secret", "ConfigMap": "config_map",
                  "PersistentVolumeClaim": "persistent_volume_claim"}[kind]
        getattr(core, f"create_namespaced_{method}")(ns, body)


def server_pod(core: Any, ns: str) -> Any:
    pods = core.list_namespaced_pod(ns, label_selector="layerbench.role=server", _request_timeout=cluster.TIMEOUT).items
    return pods[0] if pods else None


def pod_exit_cause(pod: Any, memory_limit: str | None) -> str | None:
    """Why the server container stopped: OOM-killed by its memory limit, or its exit code; None while it runs."""
    for status in (pod.status.container_statuses or []) if pod else []:
        term = (status.state.terminated if status.state else None) or (
            status.last_state.terminated if status.last_state else None)
        if term and term.reason == "OOMKilled":
            return f"was OOM-killed (memory limit {memory_limit or 'of the pod'}; raise limits.memory)"
        if term:
            return f"exited with code {term.exit_code} ({term.reason})"
    return None


def data_source(variant: KubernetesVariant, spec: ServerSpec, work: Path,
                nodes: list[Any]) -> tuple[str | None, str | None, str]:
    """Where the pod finds the dataset: the snapshot through hostPath (copied into its volume), a hostPath copy
    used in place, or nothing (an empty datadir for reset: reprepare); and a sentence saying which."""
    if spec.snapshot is None:
        where = "by sysbench Jobs in the cluster" if variant.client == "job" else "by sysbench on this host"
        return None, None, f"empty datadir (tables prepared {where}: reset reprepare)"
    if not cluster.node_is_this_machine(nodes):
        raise RunFailed("the dataset snapshot reaches a pod through hostPath, which needs the cluster's node to "
                        "be this machine; with a remote cluster set the variant's reset: reprepare")
    if variant.storage == "hostpath":
        target, _ = restore_hostpath_datadir(spec.snapshot, work, facts_dir=spec.run_dir)
        return str(spec.snapshot.resolve()), str(target.resolve()), \
            "snapshot copied on the host into the hostPath datadir"
    return str(spec.snapshot.resolve()), None, \
        f"snapshot copied from a read-only hostPath into the {variant.storage} datadir"


def restore_hostpath_datadir(snapshot: Path, work: Path, *,
                             facts_dir: Path | None = None) -> tuple[Path, RestoreFacts]:
    """A `hostpath` variant's datadir: the snapshot restored on this host (a clone where the filesystem has reflink,
    else a checked copy) into the folder that the pod then mounts in place (bench/scale.py times this path too)."""
    target = work / "datadir"
    target.parent.mkdir(parents=True, exist_ok=True)
    return target, copy_tree(snapshot, target, facts_dir=facts_dir)


def port_forward(variant: KubernetesVariant, ns: str, run_dir: Path,
                 target: int = manifests.PORT) -> tuple[ManagedProcess, int]:
    """`kubectl port-forward` of the server's Service to a free port of this host, through the variant's
    kubeconfig and context (the one every API call of the run used)."""
    kubectl = shutil.which("kubectl") or str(cluster.local_kubeconfig().parent / "kubectl")
    local = sorted(Path("/var/cache/layerbench/k8s").glob("*/bin/kubectl"))
    if not Path(kubectl).is_file() and local:
        kubectl = str(local[-1])
    if not Path(kubectl).is_file():
        raise RunFailed("client: port-forward needs kubectl on PATH; install it or use client: host or job")
    port = free_port()
    context = [f"--context={variant.context}"] if variant.context else []
    cmd = [kubectl, f"--kubeconfig={cluster.kubeconfig_path(variant)}", *context, "-n", ns,
           "port-forward", f"svc/{manifests.SERVER}", f"{port}:{target}", "--address=127.0.0.1"]
    return start("kubectl port-forward", cmd, log_path=run_dir / "port-forward.log"), port


def node_versions(nodes: list[Any], name: str | None) -> dict[str, str]:
    """The kubelet and container runtime versions of the node the pod runs on."""
    with contextlib.suppress(Exception):
        node = next(n for n in nodes if n.metadata.name == name)
        return {"kubelet_version": node.status.node_info.kubelet_version,
                "container_runtime": node.status.node_info.container_runtime_version,
                "node_architecture": node.status.node_info.architecture}
    return {}


def image_id(server_pod: Any) -> dict[str, str]:
    """The image the node ran for the server (its digest: for a registry's image, the pushed one)."""
    with contextlib.suppress(Exception):
        statuses = server_pod.status.container_statuses or []
        return {"image_id": next(s.image_id for s in statuses if s.name == manifests.SERVER)}
    return {}


def connect(variant: KubernetesVariant) -> tuple[Any, Any, list[Any]]:
    """An API client for the variant's cluster, its core API, and the nodes the server may run on (none in
    namespace-scoped mode: reading nodes is a cluster-scoped right)."""
    from kubernetes import client

    api = cluster.api_client(variant)
    core = client.CoreV1Api(api)
    return api, core, [] if variant.namespace else cluster.nodes_for(core, variant)


def cpus_allowed(pid: int) -> str | None:
    """The CPUs the server may run on (its cpuset): shows whether the static CPU manager gave it exclusive ones."""
    for line in procfs.status(pid).splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    return None


def delete_namespace(core: Any, ns: str, timeout: float = DELETE_TIMEOUT) -> None:
    """Delete a namespace and wait until it is gone (its pods' cores and memory are free again)."""
    if request_namespace_deletion(core, ns):
        wait_namespace_gone(core, ns, timeout)


def remove_run_namespace(core: Any, ns: str, data_on_pvc: bool, timeout: float = DELETE_TIMEOUT) -> None:
    """A run's namespace: its pods deleted first and waited for (their CPUs, memory and emptyDir volumes are free
    then: the kubelet deletes a pod only once its volumes are torn down), then the namespace. The namespace object
    itself goes some 5 s after each of its events (the namespace controller's fixed delay before it acts on a
    deleted namespace); deleting only the namespace, as before, cost 10.6 s per run (its pods went only after the
    first delay). That last wait is the campaign end's, unless the data is on a PVC: its volume goes with the
    namespace, and must not be deleted (I/O) during the next run."""
    from kubernetes.client.exceptions import ApiException

    try:
        core.delete_collection_namespaced_pod(ns, _request_timeout=cluster.TIMEOUT)
    except ApiException as error:
        if error.status != 404:
            raise
    if not request_namespace_deletion(core, ns):
        return
    if data_on_pvc:
        wait_namespace_gone(core, ns, timeout)
        return
    from layerbench.backends.base import at_campaign_end

    at_campaign_end(lambda: wait_namespace_gone(core, ns, timeout))
    deadline = time.monotonic() + timeout
    while core.list_namespaced_pod(ns, _request_timeout=cluster.TIMEOUT).items:
        if time.monotonic() > deadline:
            raise RunFailed(f"the pods of namespace {ns} still exist {timeout:.0f} s after their deletion; see "
                            f"`kubectl get pods -n {ns}`")
        time.sleep(0.2)


def request_namespace_deletion(core: Any, ns: str) -> bool:
    """Ask the API server to delete a namespace (its objects first); False when it does not exist."""
    from kubernetes.client.exceptions import ApiException

    try:
        core.delete_namespace(ns, propagation_policy="Foreground", _request_timeout=cluster.TIMEOUT)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def wait_namespace_gone(core: Any, ns: str, timeout: float = DELETE_TIMEOUT) -> None:
    from kubernetes.client.exceptions import ApiException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            core.read_namespace(ns, _request_timeout=cluster.TIMEOUT)
        except ApiException as error:
            if error.status == 404:
                return
        time.sleep(0.5)
    raise RunFailed(f"namespace {ns} still exists {timeout:.0f} s after its deletion; see `kubectl get ns {ns}`")
