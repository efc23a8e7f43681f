"""A kubernetes variant: the server in a pod (StatefulSet or bare) of a namespace of its own, with the QoS class,
storage and node placement it asks for; sysbench on a host, in a Job, or through kubectl port-forward."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, PrivateAttr, model_validator

from layerbench.backends.base import POSTGRESQL_IMAGE_COST, SERVER_IMAGE_COST
from layerbench.backends.kubernetes.kubeconfigs import cluster_words
from layerbench.backends.kubernetes.qos import resources_for
from layerbench.backends.variant_base import DiskCopy, FirstTimeCost, ImageVariant
from layerbench.errors import BadInput, PrerequisiteMissing
from layerbench.hosts.placement import Placement
from layerbench.server.servers import (
    DEFAULT_MYSQL,
    check_rooted_binary,
    image_server,
)
from layerbench.vocabulary.base import DNS_SUBDOMAIN_RE, IMAGE_RE, PrintableLine
from layerbench.vocabulary.limits import MAX_SECONDS
from layerbench.vocabulary.sizes import K8S_STORAGE_RE, byte_text, quantity

PATH_WORDS = {"host": "this machine to the Service's cluster IP (kube-proxy)",
              "job": "a Job's pod in the cluster to the Service's cluster IP",
              "port-forward": "kubectl port-forward from this machine (a slow path)"}
COLD_BUILD_SECONDS = 310
DNS_LABEL_RE = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"  # a namespace's name
NAMESPACE_MODE_GIVES_UP = ("namespace-scoped mode, which gives up: a namespace per run, the nodes' facts (the image's "
                           "architecture is recorded, not checked against them), the "
                           "checks of capacity, placement and storage class, the image import, `layerbench clean`")
NAMESPACE_MODE_REFUSES = (  # (key, why) refused in namespace-scoped mode: true, hostpath
    ("cpu_manager_static", "the CPU manager policy is read from the kubelets (nodes/proxy, cluster-scoped)"),
    ("storage", "storage: hostpath needs the pod's node to be this machine (reading nodes)"),
)
# what the pod runs from a mysqld: binary's root besides the server (manifests.py: the datadir's fill, the
# VolumeSnapshot path's file check); the readiness probe is the flavour's admin program, checked by the flavour
POD_PROGRAMS = ("sh", "mkdir", "cp")
SNAPSHOT_CHECK_PROGRAMS = ("find", "sort", "xargs", "sha256sum")


def local_cluster_built() -> bool:
    from layerbench.hosts.workdirs import cache_dir

    folder = cache_dir() / "k8s"
    return folder.is_dir() and any(folder.iterdir())


LOCAL_CLUSTER_COST = FirstTimeCost("the local Kubernetes cluster, built once: run `scripts/k8s-local up` before `run` "
                                   "(docs/backends/kubernetes-local.md)", COLD_BUILD_SECONDS, rank=2,
                                   cached=local_cluster_built)


class KubernetesVariant(ImageVariant):
    own_client: ClassVar[str] = "job"
    backend: Literal["kubernetes"]
    context: str | None = Field(default=None, max_length=253)
    kubeconfig: str | None = Field(default=None, max_length=4096)
    image: str | None = Field(default=None, max_length=255, pattern=IMAGE_RE)
    qos: Literal["besteffort", "burstable", "guaranteed"] = "guaranteed"
    requests: dict[str, str] = Field(default_factory=dict, max_length=8)
    limits: dict[str, str] = Field(default_factory=dict, max_length=8)
    kind: Literal["statefulset", "pod"] = "statefulset"
    storage: Literal["pvc", "emptydir", "hostpath"] = "emptydir"
    storage_class: str | None = Field(default=None, pattern=DNS_SUBDOMAIN_RE)
    snapshot_class: str | None = Field(
        default=None, pattern=DNS_SUBDOMAIN_RE,
        description="a VolumeSnapshotClass: reset by VolumeSnapshot (each run's PVC, or an emptydir's source, made "
        "from it)")
    storage_size: str = Field(default="2Gi", pattern=K8S_STORAGE_RE)
    node_selector: dict[str, str] = Field(default_factory=dict, max_length=20)
    client: Literal["host", "job", "port-forward"] = Field(
        default="host", description="where sysbench runs: host (the default on a node of the cluster), job (the "
        "default off one: where_the_harness_stands), port-forward")
    client_node_selector: dict[str, str] | None = Field(
        default=None, max_length=20,
        description="node labels for the sysbench Job (client: job); default: node_selector")
    client_anti_affinity: bool = Field(default=False, description="keep the sysbench Job off the server's node")
    client_image: str | None = Field(default=None, max_length=255, pattern=IMAGE_RE, description="client: job: "
                                     "its Jobs' image (default: image:; beside MySQL layerbench's MariaDB image)")
    client_target: Literal["service", "pod"] = Field(
        default="service", description="what a sysbench Job connects to: the Service's cluster IP or the pod IP")
    cpu_manager_static: bool = False
    namespace: str | None = Field(default=None, max_length=63, pattern=DNS_LABEL_RE, description="namespace-scoped "
                                  "mode: every run in this existing namespace, no cluster-scoped right")
    ready_timeout: int = Field(default=180, ge=5, le=MAX_SECONDS)
    _resets: frozenset[str] | None = PrivateAttr(default=None)  # the campaign's reset methods for it (preflight)
    mysqld: PrintableLine | None = Field(default=None, max_length=4096, description="a server binary inside a root "
                               "filesystem; the pod runs an image of that root (docs/servers.md)")

    _client_default: str | None = PrivateAttr(default=None)  # "on a node" / "off a node": client was not written
    runs_postgresql: ClassVar[bool] = True  # the PostgreSQL image in a pod (pgpod.py), its data made off a node too

    memory_unit: ClassVar[str] = "Mi"
    memory_here: ClassVar[bool] = False  # a node's: cluster.check_capacity (the harness need not be a node)
    local_backend: ClassVar[str] = "layerbench.backends.kubernetes.backend:KubernetesBackend"
    run_overhead: ClassVar[float] = 6  # pod scheduling, start and removal: 15-16 s per run until its pods were deleted
    # before its namespace (2026-11-26); since, 2.2-2.6 s up + 0.7-0.9 s down measured here, + the campaign end's 5 s
    leftovers: ClassVar[str | None] = "layerbench.backends.kubernetes.cleanup"
    pod_neighbours: ClassVar[str | None] = "layerbench.backends.kubernetes.neighbours"  # placement: kubernetes

    @model_validator(mode="after")
    def _qos_rules(self) -> KubernetesVariant:
        """The kubelet's QoS rules, checked here so validate says what run would refuse."""
        try:
            resources_for(self)
        except BadInput as error:
            raise ValueError(str(error)) from None
        return self

    @model_validator(mode="after")
    def _client_placement_needs_a_job(self) -> KubernetesVariant:
        """Only a Job is placed by the scheduler: placement options for any other client would be ignored."""
        if self.client == "job":
            return self
        for key, value in (("client_node_selector", self.client_node_selector),
                           ("client_anti_affinity", self.client_anti_affinity)):
            if value not in (None, False):
                raise ValueError(f"variants.{self.name}.{key}: places the sysbench Job, but client is "
                                 f"{self.client!r}; set client: job or remove {key}")
        return self

    @model_validator(mode="after")
    def _binary_or_image(self) -> KubernetesVariant:
        if self.mysqld is not None and self.image is not None:
            raise ValueError(f"variants.{self.name}.mysqld: a server binary of your own runs in an image made from "
                             "its root filesystem, image: names another; remove mysqld: or image:")
        return self

    @model_validator(mode="after")
    def _snapshot_needs_a_pvc(self) -> KubernetesVariant:
        if self.snapshot_class is not None and self.storage == "hostpath":
            raise ValueError(f"variants.{self.name}.snapshot_class: restores each run's data from a VolumeSnapshot "
                             "(a PVC made from it: the datadir, or an emptydir's source), but storage is 'hostpath'; "
                             "set storage: pvc or emptydir, or remove snapshot_class")
        if problem := job_keys_problem(self):
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _only_what_applies(self) -> KubernetesVariant:
        """Keys every variant has (or a PVC's) that this variant would not apply, which the plan would print as if
        it did: a pod's CPUs are the kubelet's (a Job's pod's too), a size and class are a PVC's."""
        where = f"variants.{self.name}"
        if self.cpus is not None:
            raise ValueError(f"{where}.cpus: backend kubernetes: the kubelet chooses a pod's CPUs; for CPUs of its "
                             "own use qos: guaranteed with a whole limits.cpu and cpu_manager_static: true, and remove "
                             "cpus")
        if self.client_cpus is not None and self.client == "job":
            raise ValueError(f"{where}.client_cpus: backend kubernetes, client: job: the kubelet chooses the Job pod's "
                             "CPUs; remove client_cpus, or use client: host to pin sysbench here")
        for key in ("storage_size", "storage_class"):
            if key in self.model_fields_set and not self.claims_volumes:
                raise ValueError(f"{where}.{key}: backend kubernetes: only a PVC has it, and storage is "
                                 f"{self.storage!r}{' without snapshot_class' if self.storage == 'emptydir' else ''}; "
                                 f"set storage: pvc (or emptydir with snapshot_class) or remove {key}")
        return self


    @property
    def claims_volumes(self) -> bool:  # PVCs: the datadir's, or an emptydir's source made from a VolumeSnapshot
        return self.storage == "pvc" or (self.storage == "emptydir" and self.snapshot_class is not None)

    def note_resets(self, methods: frozenset[str]) -> None:
        self._resets = methods  # restores_snapshots(): a snapshot restore off a node needs a snapshot class

    @model_validator(mode="after")
    def _namespace_mode(self) -> KubernetesVariant:
        check_namespace_mode(self)
        if problem := postgresql_problem(self):
            raise ValueError(problem)
        return self

    def where_the_harness_stands(self) -> KubernetesVariant:
        return resolve_client(self)

    def snapshot_made_here(self) -> bool:
        """Off a node, or in namespace-scoped mode, the dataset is made in the cluster by Jobs (seed.py)."""
        return nodes_are_this_machine(self)

    def run_copies(self, work: Path) -> list[DiskCopy]:
        """On the local cluster a run's datadir is on this machine's disks; off a node, on the nodes' own."""
        return super().run_copies(work) if nodes_are_this_machine(self) else []

    def check_data_room(self, dataset_bytes: int) -> None:
        if self.claims_volumes and quantity(self.storage_size) < dataset_bytes:
            raise BadInput(f"variants.{self.name}.storage_size: {self.storage_size} is smaller than the dataset "
                           f"({byte_text(dataset_bytes)} with the server's own files); raise storage_size")

    def client_words(self) -> str | None:
        return "sysbench as a Job in the cluster" if self.client == "job" else None

    def memory_limit(self) -> tuple[str, str] | None:
        """limits.memory; for Guaranteed without one, its requests.memory or the limit derived from the buffer
        pool (qos.resources_for)."""
        if "memory" in self.limits:
            return "limits.memory", self.limits["memory"]
        if self.qos == "guaranteed":
            return ("requests.memory", self.requests["memory"]) if "memory" in self.requests else \
                ("qos", self.derived_memory())
        return None

    def memory_limit_bytes(self) -> int | None:
        """A Kubernetes quantity: 2Gi is 2 GiB, 2G is 2 x 10^9 bytes."""
        limit = self.memory_limit()
        try:
            return None if limit is None else int(quantity(limit[1]))
        except ValueError:
            return None  # _qos_rules says what is wrong with it

    def describe_plan(self) -> str:
        return plan_text(self)

    def where_text(self, server: str, client: str, same_host: bool) -> str:
        return f"server in the cluster, {self.client_words() or 'sysbench on ' + client}"

    def network_path(self, placement: Placement) -> str:
        pod_ip = self.client == "job" and self.client_target == "pod"
        return PATH_WORDS["job"].replace("the Service's cluster IP", "the server pod's IP") if pod_ip else \
            PATH_WORDS[self.client]

    def first_time_costs(self) -> list[FirstTimeCost]:
        costs = [] if self.image is not None else [mysql_image_cost(self)] if self.is_mysql else \
            [root_image_cost(self)] if self.mysqld else \
            [POSTGRESQL_IMAGE_COST] if self.server.flavour == "postgresql" else [SERVER_IMAGE_COST]
        if self.client == "job" and costs and costs[0] is not SERVER_IMAGE_COST:  # the Job's sysbench's image:
            costs.append(SERVER_IMAGE_COST)  # manifests.client_image
        return costs + ([LOCAL_CLUSTER_COST] if cluster_words(self.kubeconfig, self.context, self.name)[1] else [])

    # --- MySQL: the image imported from the cached rootfs (server/mysql_image.py), as the docker backend's; a
    # mysqld: binary's: an image of its root filesystem (server/binary_root.py), as the docker backend's ---

    def runs_mysql(self, local: bool) -> bool:
        return local  # the image is imported from this machine's rootfs into the cluster

    def check_server_here(self) -> None:
        check_server(self)


def check_server(variant: KubernetesVariant) -> None:
    """Preflight, first (check_server_here): a PostgreSQL variant: what its pod needs of this machine (pgpod.py); a
    MySQL variant: its rootfs is built (else the command that builds it), or an image: of a registry
    (a sysbench Job runs layerbench's MariaDB image, from that registry beside an image:: manifests.client_image);
    a `mysqld:` variant: a server layerbench knows, inside a root holding its libraries and what the pod runs
    besides it."""
    if variant.server.flavour == "postgresql":
        from layerbench.backends.kubernetes.pgpod import check_postgresql

        here = nodes_are_this_machine(variant)  # its dataset prepared here (hostPath), else in the cluster
        if variant.image is None or here:  # the image built here, or the dataset made here
            check_postgresql(variant, here)
        return
    if variant.mysqld is not None:
        check_rooted_binary(variant, POD_PROGRAMS + (SNAPSHOT_CHECK_PROGRAMS if variant.snapshot_class else ()),
                            "the pod")
        return
    if not variant.is_mysql:
        return
    where = f"variants.{variant.name}"
    if variant.image is None:
        image_server(variant)
        return
    from layerbench.server.image_registry import registry_of

    if variant.client == "job" and variant.client_image is None and registry_of(variant.image) is None:
        raise BadInput(f"{where}.image: with client: job beside MySQL, the sysbench Job runs layerbench's MariaDB "
                       f"image from the registry of image:, and {variant.image} names none; push both (layerbench "
                       "image push <registry>) and name <registry>/... in image:, or use client: host")


def postgresql_problem(variant: KubernetesVariant) -> str | None:
    """What a postgresql kubernetes variant cannot be, in one line with the fix: its server is layerbench's PostgreSQL
    image (built here from this machine's postgresql-15, or that image from a registry: `image:`), whose sysbench and
    pgbench run its Jobs."""
    if variant.server.flavour != "postgresql":
        return None
    where = f"variants.{variant.name}"
    if variant.mysqld is not None:
        return f"{where}.mysqld: a postgresql variant runs this machine's PostgreSQL (in its image); remove mysqld:"
    if variant.client_image is not None:
        return (f"{where}.client_image: a postgresql variant's Jobs (sysbench with the pgsql driver, pgbench, the "
                "seed's file check) run its PostgreSQL image; remove client_image")
    return None


def job_keys_problem(variant: KubernetesVariant) -> str | None:
    """A key only a sysbench Job has (client_target, client_image) on a variant whose client is not one; None when
    none (client_image beside an unwritten client: the cluster may still make it a Job, resolve_client)."""
    v = variant
    if v.client_target != "service" and v.client != "job":
        return (f"variants.{v.name}.client_target: chooses what a sysbench Job connects to, but client is "
                f"{v.client!r}; set client: job or remove client_target")
    if v.client_image is not None and "client" in v.model_fields_set and v.client != "job":
        return (f"variants.{v.name}.client_image: the image of the sysbench Jobs, but client is {v.client!r}; set "
                "client: job or remove client_image")
    return None


def restores_snapshots(variant: KubernetesVariant) -> bool:
    """Some run of the campaign restores a dataset snapshot (as preflight noted; else from the variant alone)."""
    noted = variant._resets
    return "snapshot" in noted if noted is not None else variant.reset in (None, "snapshot")


def nodes_are_this_machine(variant: KubernetesVariant) -> bool:
    """Whether the variant's dataset is made here (cluster.dataset_made_here, the rule seed.cluster_seeds follows
    too); an API that does not answer counts as not (the backend's check then names the API), and namespace-scoped
    mode reads no node."""
    from kubernetes import client

    from layerbench.backends.kubernetes.access import readable_403
    from layerbench.backends.kubernetes.cluster import api_client, dataset_made_here, nodes_for

    if variant.namespace is not None:
        return dataset_made_here(variant, [])
    try:
        with readable_403(f"variants.{variant.name}"):
            return dataset_made_here(variant, nodes_for(client.CoreV1Api(api_client(variant)), variant))
    except PrerequisiteMissing:
        return False


def resolve_client(variant: KubernetesVariant) -> KubernetesVariant:
    """Without a written `client:`, the cluster decides it, once: job off a node (this machine has no route to a
    Service's cluster IP of its own), host on one (cluster.default_client); every later reader (the checks, the plan,
    the runs, the stored campaign) gets the copy it returns."""
    if "client" in variant.model_fields_set or variant._client_default is not None:
        return variant
    from layerbench.backends.kubernetes.cluster import default_client

    try:
        client, where = default_client(variant)
    except PrerequisiteMissing:  # the API does not answer: left unread, so that what this machine can check
        return variant  # (a server that is not built) is said first; the backend's check says the API's line
    if client == "job" and variant.client_cpus is not None:
        raise BadInput(f"variants.{variant.name}.client_cpus: pins sysbench here, but the harness runs {where} of the "
                       "cluster, where the default client is a Job whose CPUs the kubelet chooses; write client: host "
                       "(when a Service answers from here) or remove client_cpus")
    resolved = variant.model_copy(update={"client": client})
    resolved._client_default = where
    return resolved


def client_text(variant: KubernetesVariant) -> str:
    """The plan's words for `client`: its value, and where the default came from when it was not written."""
    if variant._client_default is not None:
        return f"client: {variant.client} (the default {variant._client_default})"
    if "client" in variant.model_fields_set:
        return f"client: {variant.client}"
    return "client: host on a node of the cluster, job off one (not read yet)"


def check_namespace_mode(variant: KubernetesVariant) -> None:
    """One existing namespace and no cluster-scoped right: what needs the nodes or cluster objects is refused."""
    if variant.namespace is None:
        return
    where = f"variants.{variant.name}"
    used = {"cpu_manager_static": variant.cpu_manager_static, "storage": variant.storage == "hostpath"}
    for key, why in NAMESPACE_MODE_REFUSES:
        if used[key]:
            raise ValueError(f"{where}.{key}: {why}, which namespace: {variant.namespace} (one namespace, no "
                             f"cluster-scoped right) cannot use; remove {key} or remove namespace")
    if variant.reset not in ("reprepare", "none") and variant.snapshot_class is None:
        written = "snapshot" if variant.reset else "snapshot (the workloads' default)"
        raise ValueError(f"{where}.reset: {written} in namespace: {variant.namespace} makes the dataset in the "
                         "cluster and restores every run from a VolumeSnapshot of it, and namespace-scoped mode "
                         "cannot read the VolumeSnapshotClasses (cluster-scoped); set snapshot_class, or reset: "
                         "reprepare on the variant")


def namespace_words(namespace: str | None) -> str:
    return f"the existing namespace {namespace} ({NAMESPACE_MODE_GIVES_UP})" if namespace else "a namespace"


def plan_text(variant: KubernetesVariant) -> str:
    """The plan's line for a kubernetes variant: where, what, QoS, storage and the API rights it uses."""
    resources = ", ".join(f"{kind} {k}={val}" for kind, values in (("requests", variant.requests),
                                                                   ("limits", variant.limits))
                          for k, val in values.items())
    where = cluster_words(variant.kubeconfig, variant.context, variant.name)[0]
    kind = "a StatefulSet's pod" if variant.kind == "statefulset" else "a bare pod"
    snapshot = f", each run's {'PVC' if variant.storage == 'pvc' else 'emptydir filled from a PVC'} made from a " \
        f"VolumeSnapshot ({variant.snapshot_class})" if variant.snapshot_class else ""
    limit = variant.memory_limit()
    derived = f"; memory {limit[1]} (the buffer pool + overhead)" if limit and limit[0] == "qos" else ""
    version = variant.server.version or DEFAULT_MYSQL
    mysql = f" of the PostgreSQL image {variant.image}" if variant.image and variant.server.flavour == "postgresql" \
        else " of the local PostgreSQL image (this machine's postgresql-15, run as user postgres)" \
        if variant.server.flavour == "postgresql" else \
        f" of the image {variant.image}" if variant.image and variant.is_mysql else \
        f" of the local MySQL {version} image (the cached rootfs)" if variant.is_mysql else \
        f" of an image of the root filesystem of {variant.mysqld}" if variant.mysqld else ""
    from layerbench.backends.kubernetes.access import needed_rights, rights_summary

    return (f"{namespace_words(variant.namespace)} on {where} with {kind}{mysql}, {client_text(variant)}, QoS "
            f"{variant.qos}"
            f"{'; ' + resources if resources else ''}{derived}; storage {variant.storage}{snapshot}; API rights it "
            f"uses (checked): {rights_summary(needed_rights(variant), variant.namespace)}")


def mysql_image_cost(variant: KubernetesVariant) -> FirstTimeCost:
    from layerbench.server.mysql_image import IMPORT_SECONDS, mysql_image_imported

    version = variant.server.version or DEFAULT_MYSQL
    return FirstTimeCost(f"the MySQL {version} image, imported once from its rootfs (docker import)",
                         IMPORT_SECONDS, rank=1, cached=lambda: mysql_image_imported(version))


def root_image_cost(variant: KubernetesVariant) -> FirstTimeCost:
    from layerbench.server.binary_root import find_root
    from layerbench.server.mysql_image import IMPORT_SECONDS, root_image_imported

    found = find_root(str(variant.mysqld))
    return FirstTimeCost(f"an image of {found.root if found else variant.mysqld}, the root of variant {variant.name}'s "
                         "mysqld, imported once (docker import)", IMPORT_SECONDS, rank=1,
                         cached=lambda: bool(found and root_image_imported(found.root)))
