"""The campaign's `neighbours:`: load generators started beside the server for a run (docs/neighbours.md), as
Pydantic models. One model with a `kind` (cpu, memory, disk, network, database) whose own fields are checked per
kind, so that every error names the field the user wrote. What depends on the machine (its CPUs, free space, the
inventory's hosts, the Docker daemon) is checked before anything starts by run/neighbour_checks.py (from
preflight). Placements: `host` (a process here), `docker` (a container here, with a QoS preset or limits of its
own), `kubernetes` (a pod of a QoS class on the node of a kubernetes variant's server pod), `ssh` (a process on an
ssh: host of the inventory, named by `host:`). A network neighbour's peer (its iperf3 server) runs on the host
`to:` names; a database neighbour is layerbench's own server under its own sysbench."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from layerbench.errors import shown
from layerbench.vocabulary.base import ABSOLUTE_PATH_RE, DNS_SUBDOMAIN_RE, IMAGE_RE, NAME_RE, PrintableLine, Strict
from layerbench.vocabulary.cpus import NeighbourCpuList, QosPreset, cpus_of_a_container, whole_cpus_problem
from layerbench.vocabulary.limits import MAX_PATH
from layerbench.vocabulary.sizes import CONTAINER_MEMORY_RE, TOOL_SIZE_RE, refuse_zero, tool_size_bytes

MAX_NEIGHBOURS = 16  # per variant, its campaign's included
MAX_WORKERS = 1024  # a static bound; the machine's own (CPUs x WORKERS_PER_CPU) is checked by preflight
WORKERS_PER_CPU = 4  # a neighbour may start at most this many workers per CPU of this machine
MAX_STREAMS = 32
NOT_YET = frozenset({"container", "pod"})
PLACEMENTS = ("host", "docker", "kubernetes", "ssh")
SIZED = ("docker", "kubernetes")  # the placements with a QoS class and limits of their own
KIND_FIELDS = {"cpu": {"workers", "load"}, "memory": {"workers", "method", "size"},
               "disk": {"pattern", "size", "block_size", "folder"}, "network": {"to", "bitrate", "streams"},
               "database": {"test", "tables", "table_size", "threads", "rate", "port"}}
DATABASE_TESTS = ("oltp_read_write", "oltp_read_only", "oltp_write_only", "oltp_point_select", "oltp_update_index",
                  "oltp_update_non_index", "oltp_insert", "oltp_delete")
MAX_DATABASE_ROWS = 10_000_000  # tables x table_size of a database neighbour: it is prepared again for every run
# What a neighbour does where a field of its intensity is unset (docs/neighbours.md); a kubernetes-placed one's pod
# is Burstable by default, as the published study's neighbour.
UNSET = {"workers": 1, "load": 100, "pattern": "randwrite", "qos": "burstable", "tables": 1, "table_size": 10_000,
         "threads": 1, "test": "oltp_read_write"}


def as_written_or_default(field: str) -> Any:
    """A property of a neighbour: its `field` as written, else that field's default of UNSET."""
    return property(lambda self: getattr(self, field) or UNSET[field], doc=f"{field}, else {UNSET[field]!r}")


class ContainerSize(Strict):
    """A docker- or kubernetes-placed neighbour's own size (its container's limits, its pod's requests): CPUs and
    memory."""

    cpus: float | None = Field(default=None, gt=0, le=1024, description="CPUs (CFS quota; a preset's size)")
    memory: str | None = Field(default=None, pattern=CONTAINER_MEMORY_RE, max_length=12,
                               description="memory limit, like 512m")

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, value: float | None) -> float | None:
        return cpus_of_a_container(value)

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: str | None) -> str | None:
        return refuse_zero(value, value and int(value[:-1]), "Docker and Kubernetes", "write it like 512m")


class Neighbour(Strict):
    """One load generator: its kind and intensity, and where it runs (a host process, a container, an ssh: host)."""

    name: Annotated[str, Field(pattern=NAME_RE)]
    kind: Literal["cpu", "memory", "disk", "network", "database"]
    placement: Literal["host", "docker", "kubernetes", "ssh"] = "host"
    host: str | None = Field(default=None, max_length=63, pattern=NAME_RE,
                             description="ssh: the host of `hosts:` it runs on")
    node: str | None = Field(default=None, max_length=253, pattern=DNS_SUBDOMAIN_RE,
                             description="kubernetes: the node its pod runs on (default: the server pod's node)")
    image: str | None = Field(
        default=None, max_length=255, pattern=IMAGE_RE,
        description="kubernetes: its pod's image, pulled by the node (default: layerbench's neighbours image, imported "
                    "into a local cluster; off a node the one `layerbench image push` printed)")
    qos: QosPreset | None = Field(
        default=None, description="docker: a QoS preset for its container; kubernetes: its pod's QoS class")
    resources: ContainerSize | None = Field(default=None, description="docker, kubernetes: its CPUs and memory")
    cpus: NeighbourCpuList = Field(default=None, description="CPU list the neighbour is pinned to (taskset)")
    nice: int = Field(default=0, ge=0, le=19, description="its nice value (0: as the harness)")
    workers: int | None = Field(default=None, ge=1, le=MAX_WORKERS, description="cpu, memory: stress-ng workers")
    load: int | None = Field(default=None, ge=1, le=100, description="cpu: duty cycle of each worker, percent")
    method: Literal["stream", "vm"] | None = Field(default=None, description="memory: stress-ng's stressor")
    size: str | None = Field(default=None, max_length=12, description="memory: bytes per worker; disk: file size")
    pattern: Literal["randread", "randwrite", "read", "write", "randrw", "fsync"] | None = Field(
        default=None, description="disk: fio's access pattern (fsync: random writes, each followed by fsync)")
    block_size: str | None = Field(default=None, max_length=12, description="disk: fio's block size, like 4K")
    folder: PrintableLine | None = Field(default=None, max_length=MAX_PATH, pattern=ABSOLUTE_PATH_RE,
                               description="disk: where fio writes (default: the run's data filesystem)")
    to: str | None = Field(default=None, max_length=63, description="network: loopback or a host of `hosts:`")
    bitrate: str | None = Field(default=None, max_length=12, description="network: iperf3's target, like 100M")
    streams: int | None = Field(default=None, ge=1, le=MAX_STREAMS, description="network: parallel streams")
    test: Literal[DATABASE_TESTS] | None = Field(  # type: ignore[valid-type]
        default=None, description="database: the sysbench test its own sysbench runs")
    tables: int | None = Field(default=None, ge=1, le=64, description="database: its own tables")
    table_size: int | None = Field(default=None, ge=1, le=MAX_DATABASE_ROWS, description="database: rows per table")
    threads: int | None = Field(default=None, ge=1, le=256, description="database: its sysbench's threads")
    rate: int | None = Field(default=None, ge=0, le=1_000_000,
                             description="database: its sysbench's target transactions per second (0: unlimited)")
    port: int | None = Field(default=None, ge=1024, le=65535, description="database: the port its server listens on")

    @field_validator("placement", mode="before")
    @classmethod
    def _placement_today(cls, value: Any) -> Any:
        if isinstance(value, str) and value in NOT_YET:
            raise ValueError(f"{shown(value)}: not yet; a neighbour runs on the host, in a docker container, in "
                             "a kubernetes pod or on an ssh host (docs/neighbours.md)")
        return value

    @field_validator("size", "block_size")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        if value is not None and not TOOL_SIZE_RE.fullmatch(value):
            raise ValueError(f"{shown(value)} is not a size; write it like 4K, 64M or 1G")
        return refuse_zero(value, value and tool_size_bytes(value), "fio and stress-ng",
                           "write it like 4K, 64M or 1G", meaning="the whole file or a default, not this size,")

    @field_validator("bitrate")
    @classmethod
    def _rate(cls, value: str | None) -> str | None:
        if value is not None and not TOOL_SIZE_RE.fullmatch(value):
            raise ValueError(f"{shown(value)} is not a bit rate; write it like 500K, 100M or 1G (bits per second)")
        return refuse_zero(value, value and tool_size_bytes(value), "iperf3", "write it like 500K, 100M or 1G")

    @model_validator(mode="after")
    def _fields_of_its_kind(self) -> Neighbour:
        mine = KIND_FIELDS[self.kind]
        for other in sorted(set().union(*KIND_FIELDS.values()) - mine):
            if getattr(self, other) is not None:
                kinds = " or ".join(k for k, f in KIND_FIELDS.items() if other in f)
                raise ValueError(f"{other}: only a {kinds} neighbour has it, and {self.name} is a {self.kind} "
                                 f"neighbour; remove it (it may use: {', '.join(sorted(mine))})")
        if self.kind == "memory" and self.size and tool_size_bytes(self.size) > 64 * 2**30:
            raise ValueError(f"size: {self.size} per memory worker is more than 64G; use less")
        return self._fields_of_its_placement()

    def _fields_of_its_placement(self) -> Neighbour:
        if (self.qos or self.resources) and self.placement not in SIZED:
            field = "qos" if self.qos else "resources"
            raise ValueError(f"{field}: only a neighbour with placement: docker or kubernetes has it; remove it or "
                             f"place {self.name} in docker or kubernetes")
        if self.placement == "kubernetes":
            self._fields_of_a_pod()
        elif self.node or self.image:
            field, value = ("node", self.node) if self.node else ("image", self.image)
            raise ValueError(f"{field}: {shown(value)} is only for placement: kubernetes; set placement: kubernetes "
                             "or remove it")
        if self.placement == "ssh" and not self.host:
            raise ValueError(f"host: a neighbour with placement: ssh names the host of `hosts:` it runs on; add "
                             f"host: <name> to {self.name}")
        if self.host and self.placement != "ssh":
            raise ValueError(f"host: {shown(self.host)} is only for placement: ssh; set placement: ssh or remove it")
        if self.placement == "docker" and self.kind == "network" and (self.to or "loopback") == "loopback":
            raise ValueError(f"to: a network neighbour in a container sends to a host of `hosts:` (loopback is the "
                             f"container's own); set to: <host> for {self.name}")
        if self.placement != "host" and self.kind == "database":
            raise ValueError(f"placement: {self.placement}: a database neighbour runs on the host (in a container or "
                             "on an ssh host: not yet); use placement: host")
        if self.kind == "database" and self.database_tables * self.database_rows > MAX_DATABASE_ROWS:
            raise ValueError(f"table_size: {self.database_tables} x {self.database_rows:,} rows is more than "
                             f"{MAX_DATABASE_ROWS:,} (prepared again for every run); use fewer")
        if self.placement == "ssh" and self.folder:
            raise ValueError("folder: an ssh-placed disk neighbour writes in its own folder on its host (a folder "
                             "of your choice there: not yet); remove folder")
        problem = whole_cpus_problem(self.qos, self.resources.cpus if self.resources else None)
        if problem is not None:
            raise ValueError(problem)
        return self

    def _fields_of_a_pod(self) -> None:
        """A pod's CPUs are the kubelet's to choose; a BestEffort pod has no requests or limits; a network
        neighbour in a pod is not yet (its peer and route through the pod network)."""
        if self.kind == "network":
            raise ValueError("placement: kubernetes: a network neighbour in a pod is not yet; use placement: host, "
                             "docker or ssh")
        if self.cpus:
            raise ValueError(f"cpus: {self.name} runs in a kubernetes pod, whose CPUs the kubelet chooses; remove "
                             "cpus (exclusive cores: qos: guaranteed-pinned, on the static CPU manager)")
        if self.pod_qos == "besteffort" and self.resources:
            raise ValueError(f"resources: a BestEffort pod has no requests or limits; remove resources from "
                             f"{self.name} or use qos: burstable")

    # --- the effective intensity: each field as written, else its default (UNSET, once) ----------------------

    worker_count = as_written_or_default("workers")
    duty_cycle = as_written_or_default("load")
    disk_pattern = as_written_or_default("pattern")
    pod_qos = as_written_or_default("qos")  # placement kubernetes: its pod's QoS class
    database_tables = as_written_or_default("tables")
    database_rows = as_written_or_default("table_size")
    database_threads = as_written_or_default("threads")
    database_test = as_written_or_default("test")

    @property
    def file_size(self) -> str:
        return self.size or ("64M" if self.kind == "memory" else "256M")

    def intensity(self) -> str:
        """The asked intensity in words, for the plan and the report."""
        if self.kind == "cpu":
            return f"{self.worker_count} worker(s) at {self.duty_cycle} %"
        if self.kind == "memory":
            return f"{self.worker_count} {self.method or 'stream'} worker(s) of {self.file_size}"
        if self.kind == "disk":
            where = self.folder or "the data's filesystem"
            return f"{self.disk_pattern} {self.block_size or '4K'} blocks on a {self.file_size} file in {where}"
        if self.kind == "database":
            rate = f" at {self.rate} tps" if self.rate else " unlimited"
            return (f"sysbench {self.database_test}, {self.database_threads} thread(s){rate}, on its own server "
                    f"({self.database_tables} x {self.database_rows:,} rows)")
        rate = f" at {self.bitrate}bit/s" if self.bitrate else " unlimited"
        return f"{self.streams or 1} TCP stream(s) to {self.to or 'loopback'}{rate}"

    def where(self) -> str:
        """Its placement in words: `host`, `docker (qos burstable, 1 CPU)`, `ssh host app`; pinning and nice."""
        place = self.placement
        if self.placement == "ssh":
            place = f"ssh host {self.host}"
        elif self.placement == "docker":
            size = self.resources or ContainerSize()
            said = [f"qos {self.qos}"] if self.qos else []
            said += [f"{size.cpus:g} CPU"] if size.cpus else []
            said += [f"memory {size.memory}"] if size.memory else []
            place = f"docker ({', '.join(said)})" if said else "docker"
        elif self.placement == "kubernetes":
            size = self.resources or ContainerSize()
            said = [f"qos {self.pod_qos}", *([f"{size.cpus:g} CPU"] if size.cpus else []),
                    *([f"memory {size.memory}"] if size.memory else [])]
            place = f"kubernetes pod ({', '.join(said)}) on {f'node {self.node}' if self.node else 'the server node'}"
        pinned = f", CPUs {self.cpus}" if self.cpus else ""
        return f"{place}{pinned}{f', nice {self.nice}' if self.nice else ''}"


def check_kinds(value: Any) -> Any:
    """Before the items are read: an unknown kind named in one line with the kinds there are."""
    if isinstance(value, list):
        for position, item in enumerate(value):
            kind = item.get("kind") if isinstance(item, dict) else None
            if isinstance(item, dict) and (not isinstance(kind, str) or kind not in KIND_FIELDS):
                raise ValueError(f"item {position + 1}: kind {shown(kind)} is not a kind of neighbour; use one of: "
                                 f"{', '.join(KIND_FIELDS)}")
    return value


def unique_names(value: list[Neighbour]) -> list[Neighbour]:
    names = [n.name for n in value]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"two neighbours are named {shown(name)}; give each its own name")
    return value


NeighbourList = Annotated[list[Neighbour], BeforeValidator(check_kinds), AfterValidator(unique_names),
                          Field(max_length=MAX_NEIGHBOURS)]


def check_neighbour_count(name: str, campaign_list: list[Neighbour], variant_list: list[Neighbour] | None) -> None:
    """A variant's neighbours, its campaign's included, are at most MAX_NEIGHBOURS (each list alone is bounded by
    its own model): ValueError naming the variant, with the total."""
    own, shared = len(variant_list or []), len(campaign_list)
    if own + shared > MAX_NEIGHBOURS:
        raise ValueError(f"variants.{name}.neighbours: {own} of its own + {shared} of the campaign's = "
                         f"{own + shared} neighbours; a variant has at most {MAX_NEIGHBOURS}, its campaign's "
                         f"included; remove {own + shared - MAX_NEIGHBOURS}")


def neighbours_of(campaign_list: list[Neighbour], variant_list: list[Neighbour] | None) -> list[Neighbour]:
    """A variant's neighbours: the campaign's (for every variant) and its own (inherited through `extends:`)."""
    return [*campaign_list, *(variant_list or [])]
