"""What every variant has, whatever its backend: its name, its server (flavour, version, my.cnf overlay), its
CPU lists and hosts; and the questions the core asks a variant's backend (plan text, preflight and placement
rules, resources), each with its default given once here. Each backend's own variant model subclasses
VariantBase in backends/<name>/variant.py and overrides what differs; backends/registry.py lists them.

The campaign model (campaign/models.py) takes its variants through the registry; the pieces the fields are made
of (the strict base model, names, limits, sizes, CPU lists) are the vocabulary package's.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from layerbench.errors import shown
from layerbench.hosts.placement import Placement, tcp_path
from layerbench.neighbours.model import NeighbourList
from layerbench.server.postgresql_rootfs import is_rootfs_version
from layerbench.server.servers import DEFAULT_MYSQL, ServerChoice, resolve_server, rootfs_mysql
from layerbench.server.settings import SERVER_MEMORY_OVERHEAD, ServerSettings, mysql_only_refusal
from layerbench.vocabulary.base import ABSOLUTE_PATH_RE, NAME_RE, PrintableLine, Strict, Text
from layerbench.vocabulary.cpus import CpuList
from layerbench.vocabulary.limits import MAX_PATH
from layerbench.vocabulary.sizes import byte_text, in_mib, size_in_bytes


class VariantBase(Strict):
    """The fields every variant has, and the questions plan, preflight, placement, the harness and the campaign
    model ask its backend: the class attributes and methods below, whose defaults each backend's variant model
    (backends/<name>/variant.py) overrides where it differs."""

    name: Annotated[str, Field(pattern=NAME_RE)]
    server: ServerSettings = Field(default_factory=ServerSettings)
    cpus: CpuList = Field(default=None, description="CPU list for the server (taskset syntax: 0,1 or 0-1)")
    client_cpus: CpuList = Field(default=None, description="CPU list for sysbench")
    cost_per_month: float | None = Field(default=None, ge=0, le=1e12)
    description: Text = ""
    extends: str | None = None
    server_host: str | None = Field(default=None, description="the host of `hosts:` the server runs on")
    client_host: str | None = Field(default=None, description="the host of `hosts:` sysbench runs on")
    data_dir: PrintableLine | None = Field(default=None, max_length=MAX_PATH, pattern=ABSOLUTE_PATH_RE,
                                 description="an absolute directory on the filesystem the run's datadir lives on "
                                 "(default: the work folder); docs/datasets.md")
    neighbours: NeighbourList | None = None  # load beside this variant's server, besides the campaign's (#32)
    reset: Literal["snapshot", "reprepare", "none"] | None = Field(
        default=None, description="this variant's own reset for every workload (default: each workload's `reset`, "
        "or reprepare where this variant cannot restore a snapshot); docs/campaign.md")

    # --- what the core asks the variant's backend (defaults: a server layerbench starts, sysbench on a host) ---
    if TYPE_CHECKING:
        backend: str  # each backend's variant declares it as its Literal (the discriminator of the union)

    local_backend: ClassVar[str] = ""  # "module:Class" of the backend that runs this variant's server here
    remote_backend: ClassVar[str | None] = None  # ... on an ssh: host; None: it runs on this machine only
    remote_client: ClassVar[bool] = False  # sysbench may run on another host than the server's
    takes_reach: ClassVar[bool] = False  # its server on an ssh: host honours the host's reach: and bind_address:
    owns_server: ClassVar[bool] = True  # layerbench starts (and resets) the server; False: an existing one
    run_overhead: ClassVar[float] = 5  # seconds a run costs beyond warm-up and duration (start, stop; not the restore)
    leftovers: ClassVar[str | None] = None  # module whose LEFTOVERS (backends.base.Leftovers) `clean` removes
    pod_neighbours: ClassVar[str | None] = None  # module that checks and prepares neighbours in pods beside its server
    container_engine: ClassVar[str | None] = None  # module whose ENGINE (base.ContainerEngine) runs containers here
    memory_unit: ClassVar[str] = "m"  # the suffix of MiB in its memory sizes (Docker's m, QEMU's M, Kubernetes' Mi)
    guest_memory: ClassVar[int] = 0  # bytes its memory holds beside the server (a guest's kernel)
    dataset_on_server_host: ClassVar[bool] = False  # on an ssh: host, that host prepares and keeps its snapshots
    memory_here: ClassVar[bool] = True  # its server's memory is this machine's (False: a node's, its backend checks)
    runs_postgresql: ClassVar[bool] = False  # server: {flavour: postgresql} (issue #46: host, docker, vm, kubernetes)

    @property
    def client_kind(self) -> str:
        """Where sysbench runs: `host` (a host of the inventory) or the backend's own (container, job, ...)."""
        return "host"

    @property
    def client_reads_host_files(self) -> bool:
        """sysbench can read a file of this host (a Lua script of the user's)."""
        return True

    @property
    def builds_server_here(self) -> bool:
        """The server is this machine's MariaDB package, or an image built here from it (so its version and
        option names are those of this machine's mariadbd)."""
        return False

    def client_words(self) -> str | None:
        """Where sysbench runs when that is not simply a host (a container, a Job), for the plan; else None."""
        return None

    def describe_plan(self) -> str:
        """What a run of this variant creates, in the plan's words."""
        return self.backend

    def where_text(self, server: str, client: str, same_host: bool) -> str:
        """Where the server and sysbench run, in the plan's words, given the words for their hosts."""
        words = self.client_words()
        if words is not None:
            return f"server on {server}, {words}"
        return f"server and sysbench on {server}" if same_host else f"server on {server}, sysbench on {client}"

    def network_path(self, placement: Placement) -> str:
        """The way sysbench's packets reach the server, in words: what `validate` previews and each run records."""
        return tcp_path(placement)

    def remote_client_problem(self) -> str | None:
        """Why sysbench on another host cannot reach this variant's server (with the fix), or None."""
        return None

    def checks_options_here(self, local: bool) -> bool:
        """Preflight checks server.config's names against this machine's server binary (`local`: the server runs
        on this machine)."""
        return self.builds_server_here

    def runs_mysql(self, local: bool) -> bool:
        """`server: {flavour: mysql}` is supported for this variant so far."""
        return False

    def remote_backend_for(self) -> str | None:
        """The backend of its server on an ssh: host: remote_backend, or a subclass (a host variant's PostgreSQL)."""
        return self.remote_backend

    def runs_postgresql_on(self, local: bool) -> bool:  # server: {flavour: postgresql} here or on an ssh: host
        return local and self.runs_postgresql

    def where_the_harness_stands(self) -> VariantBase:
        """The variant with the defaults that depend on where the harness stands, read once by preflight before any
        other check (run/preflight.py: `resolve_defaults`); most variants have none: itself."""
        return self

    def check_server_here(self) -> None:
        """Preflight, first for a server on this machine: refuse a server that is not there or not known."""

    def snapshot_made_here(self) -> bool:
        """Whether this machine prepares its dataset snapshot (a cluster's Jobs may make it: Kubernetes)."""
        return True

    def check_data_room(self, dataset_bytes: int) -> None:
        """Preflight: refuse a variant whose own fixed-size storage cannot hold the largest dataset of the campaign
        (a Kubernetes PVC); most variants have none (their room is the disk space check's)."""

    def server_command_here(self) -> tuple[str, ...] | None:
        """The command of the server binary whose option names server.config is checked against, if installed."""
        return which_server("mariadbd")

    def note_resets(self, methods: frozenset[str]) -> None:
        """Preflight, before its backend's check: how the campaign resets this variant's data (the methods of
        Campaign.reset_for), for a backend whose check depends on them; most need not keep them."""

    def restore_problem(self) -> str | None:
        """Why a dataset snapshot cannot be restored into this variant's server (its backend's or storage's words),
        or None when it can. A server layerbench owns re-prepares instead (alone: the other variants restore); one
        it does not own is refused (its tables are the user's)."""
        return None if self.owns_server else f"backend {self.backend}: a server layerbench does not own"

    def memory_limit(self) -> tuple[str, str] | None:
        """(field, size) of the memory the variant gives its server, like ("resources.memory", "2g"); None: none."""
        return None

    def memory_limit_bytes(self) -> int | None:
        """memory_limit() in bytes (its backend's reading of the suffix); None: no limit, or no size."""
        limit = self.memory_limit()
        return None if limit is None else size_in_bytes(limit[1])

    def memory_text(self, size: int) -> str:
        """A size as this backend writes memory: whole GiB or MiB with its suffix (2g, 2560m, 2560M, 2560Mi)."""
        mib = in_mib(size)
        if mib % 1024 == 0:
            return f"{mib // 1024}{self.memory_unit.replace('m', 'g').replace('M', 'G')}"
        return f"{mib}{self.memory_unit}"

    def derived_memory(self) -> str:
        """The memory layerbench gives this server when the variant sets none: its buffer pool + the stated
        overhead (server/settings.py) + what a guest holds beside it, at least the old 2 GiB default."""
        return self.memory_text(self.server.memory_for(self.guest_memory))

    @model_validator(mode="after")
    def _postgresql_here(self) -> VariantBase:
        refusal = postgresql_refusal(self)
        if refusal:
            raise ValueError(refusal)
        return self

    @model_validator(mode="after")
    def _memory_holds_the_buffer_pool(self) -> VariantBase:
        """A memory limit below the buffer pool the server is asked for: the server is OOM-killed or thrashes."""
        pool, limit, size = self.server.buffer_pool_bytes(), self.memory_limit(), self.memory_limit_bytes()
        if pool is None or limit is None or size is None or size >= pool:
            return self
        name, value = self.server.buffer_pool_option() or ("innodb_buffer_pool_size", pool)
        pool_words = "shared_buffers" if self.server.flavour == "postgresql" else "buffer pool"
        extra = SERVER_MEMORY_OVERHEAD + self.guest_memory
        raise ValueError(f"variants.{self.name}.{limit[0]}: {shown(limit[1], quote=False)} is below the {pool_words} "
                         f"this variant asks for (server.config.{name}: {shown(value, quote=False)}); set {limit[0]} "
                         f"to at least {self.memory_text(pool + extra)} (the {pool_words} + "
                         f"{byte_text(extra, 'MiB', '.0f')}) or use a smaller {pool_words}")

    def run_copies(self, work: Path) -> list[DiskCopy]:
        """Where one run of this variant holds its dataset on this machine's disks (the disk preflight counts
        the largest at once per filesystem: one run at a time): by default a working copy in its datadir folder
        (its data_dir, else the work folder `work`), a clone where its filesystem shares the snapshot's."""
        return [DiskCopy(Path(self.data_dir) if self.data_dir else work, "working copy", clonable=True)]

    def data_in_memory(self) -> str | None:
        """The setting that holds this variant's datadir in memory (like "storage: tmpfs"), whose bytes then count
        against its memory limit and this machine's memory beside the buffer pool; None: the datadir is on a disk."""
        return None

    def snapshot_companions(self) -> list[str]:
        """What this variant keeps beside each snapshot it restores, in the snapshot's folder, each about the
        dataset's size (a VM's base image), for the disk preflight; file names, in its words."""
        return []

    def server_cpu_list(self) -> str | None:
        """The CPUs the server is pinned to on this machine, or None."""
        return self.cpus

    def fixed_port(self) -> int | None:
        """A port the campaign gives the server (a database neighbour must not take it); None: one chosen free."""
        return None

    def first_time_costs(self) -> list[FirstTimeCost]:
        """What is built once and cached on this machine before this variant's first run."""
        return []

    def snapshot_server(self) -> ServerChoice:
        """The private host server that prepares (and checks) this variant's dataset snapshot, for its datadir
        format: by default this host's MariaDB (the server the Docker, VM and Kubernetes images are built from)."""
        return ServerChoice("prepare")


class BuiltServerVariant(VariantBase):
    """A variant whose server is made here of this machine's bytes (an image, a guest's disk, a pod's image): this
    host's MariaDB package, the cached MySQL rootfs, or a `mysqld:` binary's root. Its option names are checked, and
    its datadir snapshots made, by those same bytes run here (Docker, VM, Kubernetes)."""

    if TYPE_CHECKING:  # each subclass's own field, with its own description
        mysqld: str | None

    @property
    def is_mysql(self) -> bool:
        return self.server.flavour == "mysql"

    def mysql_from_rootfs(self) -> bool:
        """Whether its server is the cached rootfs's mysqld (not one the user's image brings)."""
        return self.is_mysql

    def server_command_here(self) -> tuple[str, ...] | None:
        if self.mysqld is not None or self.server.flavour == "postgresql":  # the same bytes here: the root's own
            # loader, or this machine's postgres (the program its PostgreSQL image installs)
            return resolve_server(self).command
        if self.mysql_from_rootfs():  # the rootfs's mysqld: the image's, guest's or pod's own bytes
            return rootfs_mysql(self.server.version or DEFAULT_MYSQL, f"variants.{self.name}.server").command
        return super().server_command_here()

    def snapshot_server(self) -> ServerChoice:
        """MySQL's datadir is made by the rootfs's mysqld on this machine (the same bytes as the variant's server):
        the same snapshot a host variant of that version restores; a `mysqld:` binary's by that binary here
        (through its root's loader); MariaDB's by this host's MariaDB."""
        if self.mysqld is not None:
            return ServerChoice("prepare", self.server.flavour, self.server.version, self.mysqld)
        if self.server.flavour == "postgresql":  # this machine's, whose package its image installs
            return ServerChoice("prepare", "postgresql", self.server.version)
        if self.is_mysql and self.server_host is None:
            return ServerChoice("prepare", "mysql", self.server.version)
        return super().snapshot_server()


class ImageVariant(BuiltServerVariant):
    """A variant whose server runs from an image (Docker, Kubernetes): built here from this machine's packages when
    it names none, and whose sysbench may run beside it (`client:` equal to own_client) instead of on a host."""

    own_client: ClassVar[str]  # the client: value that runs sysbench beside the server (container, job)
    if TYPE_CHECKING:  # fields of each subclass, with their own choices
        client: str
        image: str | None

    @property
    def client_kind(self) -> str:
        return self.client

    @property
    def client_reads_host_files(self) -> bool:
        return self.client != self.own_client

    @property
    def builds_server_here(self) -> bool:
        return self.image is None

    def mysql_from_rootfs(self) -> bool:
        return super().mysql_from_rootfs() and self.image is None


def which_server(program: str) -> tuple[str, ...] | None:
    binary = shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")
    return (binary,) if binary else None


@dataclass(frozen=True)
class DiskCopy:
    """A copy of a run's dataset on this machine: the folder whose filesystem holds it, and what it is.
    `clonable`: restored from the snapshot by `restore_datadir`, so a reflink clone where the two share a
    filesystem that has it (the disk preflight then counts only the pages a run rewrites)."""

    folder: Path
    what: str
    clonable: bool = False


@dataclass(frozen=True)
class FirstTimeCost:
    """Something built once and cached (an image, boot files, a cluster): shared by the variants that need it."""

    what: str
    seconds: float
    rank: int  # the plan lists costs in this order
    cached: Callable[[], bool]


def postgresql_refusal(variant: VariantBase) -> str | None:
    """PostgreSQL runs where its backend says it does (runs_postgresql): refused at parse time, in one
    line, rather than failing later inside a backend made for MySQL-compatible servers; and a my.cnf key in its
    server.config (postgresql.conf, not my.cnf: the server's own list checks the rest)."""
    if variant.server.flavour != "postgresql":
        return None
    if not variant.runs_postgresql:
        return (f"variants.{variant.name}.server.flavour: postgresql is not yet in the {variant.backend} backend; "
                "use backend: host, docker, vm or kubernetes for this variant (docs/servers.md#postgresql)")
    version = variant.server.version
    if variant.backend != "host" and version and is_rootfs_version(version):
        return (f"variants.{variant.name}.server.version: PostgreSQL {version} of the sid rootfs runs on the host "
                f"backend only, and the {variant.backend} backend runs Debian's PostgreSQL 15 (this machine's); use "
                "version '15' or backend: host")
    for key in variant.server.config:
        refusal = mysql_only_refusal(key)
        if refusal:
            return f"variants.{variant.name}.server.config.{key}: {refusal}"
    return None
