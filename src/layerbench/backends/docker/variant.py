"""A docker variant: the server in a container (image, network, storage, resource limits), sysbench on a host
or in a container of its own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from layerbench.backends.base import POSTGRESQL_IMAGE_COST, SERVER_IMAGE_COST
from layerbench.backends.variant_base import DiskCopy, FirstTimeCost, ImageVariant
from layerbench.errors import BadInput, shown
from layerbench.hosts.placement import Placement, tcp_path
from layerbench.server.servers import (
    DEFAULT_MYSQL,
    check_rooted_binary,
    image_server,
)
from layerbench.vocabulary.base import IMAGE_RE, PrintableLine, Strict
from layerbench.vocabulary.cpus import CpuList, QosPreset, cpus_of_a_container
from layerbench.vocabulary.limits import MAX_CPU
from layerbench.vocabulary.sizes import DOCKER_MEMORY_RE, refuse_zero, size_in_bytes

CONTAINER_PROGRAMS = ("sh", "mkdir", "cp")  # what the container's command runs besides the server (local.py)
NETWORK_WORDS = {  # where the packets go is said by the variant's path (network_path)
    "bridge": "bridge network, port published",
    "bridge-direct": "a bridge network of its own",
    "host": "the host's network",
}
STORAGE_WORDS = {
    "volume": "datadir on a named volume", "bind": "datadir on a bind-mounted host folder",
    "data-container": "datadir on a volume of a data-only container", "container-fs": "datadir in the overlay layer",
    "tmpfs": "datadir in memory (tmpfs)",
}


class DockerResources(Strict):
    cpus: float | None = Field(default=None, gt=0, le=MAX_CPU + 1)
    cpuset: CpuList = None
    cpu_shares: int | None = Field(default=None, ge=2, le=262_144)
    memory: str | None = None

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: str | None) -> str | None:
        """Docker's --memory, without the spaces around it (Docker takes none; issue #44: ASCII only)."""
        if value is None:
            return None
        if not (value.isascii() and DOCKER_MEMORY_RE.fullmatch(value.strip())):
            raise ValueError(f"{shown(value)} is not a memory size; write it like 512m or 2g")
        size = size_in_bytes(value.strip())
        if size is None:
            raise ValueError(f"{shown(value)} is more than Docker holds (2^63 bytes); write it like 512m or 2g")
        return refuse_zero(value.strip(), size, "Docker", "write it like 512m or 2g")

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, value: float | None) -> float | None:
        return cpus_of_a_container(value)


class DockerVariant(ImageVariant):
    own_client: ClassVar[str] = "container"
    backend: Literal["docker"]
    image: str | None = Field(default=None, description="default: the locally built layerbench image; one with "
                              "an entrypoint (mysql:8.4) is started through it (backends/docker/upstream.py)")
    network: Literal["bridge", "bridge-direct", "host"] = "bridge"
    storage: Literal["volume", "bind", "data-container", "container-fs", "tmpfs"] = "volume"
    resources: DockerResources = Field(default_factory=DockerResources)
    qos: QosPreset | None = None
    client: Literal["host", "container"] = "host"
    mysqld: PrintableLine | None = Field(default=None, max_length=4096, description="a server binary inside a root "
                               "filesystem; the container is an image of that root (docs/servers.md)")

    local_backend: ClassVar[str] = "layerbench.backends.docker.local:DockerBackend"
    remote_backend: ClassVar[str | None] = "layerbench.backends.docker.remote:RemoteDockerBackend"
    remote_client: ClassVar[bool] = True
    takes_reach: ClassVar[bool] = True  # remote.py: published on the bind address, a forward over SSH to it
    run_overhead: ClassVar[float] = 3  # container start + stop, measured: 1.6 s median over 243 runs here, + margin
    leftovers: ClassVar[str | None] = "layerbench.backends.docker.cleanup"
    container_engine: ClassVar[str | None] = "layerbench.backends.docker.engine"  # placement: docker, image build
    runs_postgresql: ClassVar[bool] = True  # the PostgreSQL image (backends/docker/postgresql.py); not on an ssh: host

    @model_validator(mode="after")
    def _binary_or_image(self) -> DockerVariant:
        if self.mysqld is not None and self.image is not None:
            raise ValueError(f"variants.{self.name}.mysqld: a server binary of your own runs in an image made from "
                             "its root filesystem, image: names another; remove mysqld: or image:")
        if self.mysqld is not None and self.server_host is not None:
            raise ValueError(f"variants.{self.name}.mysqld: a server binary of your own in Docker on another host "
                             "(server_host): not yet; use this machine's daemon, or backend: host")
        return self

    @field_validator("image", mode="before")
    @classmethod
    def _image(cls, value: Any) -> Any:
        """An image reference as Docker spells it, at most 255 characters: nothing else reaches the daemon or a
        message (a newline, markup, a shell word, a list)."""
        if value is None:
            return None
        if not isinstance(value, str) or len(value) > 255 or not re.fullmatch(IMAGE_RE, value):
            raise ValueError(f"{shown(value)} is not an image reference; write it like mysql:8.4, mariadb:11 or "
                             "registry.example:5000/team/mysql:8.4 (lower-case, at most 255 characters)")
        return value

    @model_validator(mode="after")
    def _one_cpu_list(self) -> DockerVariant:
        """The container's cpuset is resources.cpuset when given, so a different cpus would be printed in the plan
        and never applied."""
        cpuset = self.resources.cpuset
        if self.cpus is not None and cpuset is not None and self.cpus != cpuset:
            raise ValueError(f"variants.{self.name}.cpus: backend docker pins the container to resources.cpuset "
                             f"({cpuset}), so cpus ({self.cpus}) would not apply; give one of them")
        return self

    @model_validator(mode="after")
    def _data_dir_needs_bind(self) -> DockerVariant:
        if self.data_dir and self.storage != "bind":
            raise ValueError(f"data_dir: the datadir is in Docker's own storage with storage: {self.storage}; set "
                             "storage: bind to place it in data_dir")
        return self

    def client_words(self) -> str | None:
        if self.client == "container":
            return "sysbench in a container of its own on the server's Docker daemon"
        return None

    def describe_plan(self) -> str:
        limits = [f"{k}={val}" for k, val in self.resources.model_dump(exclude_none=True).items()]
        limits += [f"qos preset {self.qos}"] if self.qos else []
        if self.qos not in (None, "besteffort") and not self.resources.memory:
            limits.append(f"memory {self.derived_memory()} (the buffer pool + overhead)")
        image = self.image or ("the local MySQL image (the cached rootfs)" if self.server.flavour == "mysql" else
                               f"an image of the root filesystem of {self.mysqld}" if self.mysqld else
                               "the local PostgreSQL image (this machine's postgresql-15, run as user postgres)"
                               if self.server.flavour == "postgresql" else "the local layerbench image")
        return (f"a container of {image}; {NETWORK_WORDS[self.network]}; "
                f"{STORAGE_WORDS[self.storage]}; limits: {', '.join(limits) or 'none'}")

    def network_path(self, placement: Placement) -> str:
        """Published port (docker-proxy on loopback, else the kernel's NAT), host network, or a bridge network
        of the run's own."""
        if self.network == "host":
            return f"host network: {tcp_path(placement)}"
        if self.client == "container":
            return "container to container on a bridge network of the run's own (no NAT, no proxy)"
        if self.network == "bridge-direct":
            return ("the container's own address on a bridge network of the run's own, from this machine (no NAT, "
                    "no proxy)")
        address = placement.listen_address
        if placement.remote_client:
            return f"published port on {address} from another host: kernel NAT (iptables DNAT), no docker-proxy"
        if not address.startswith("127."):
            return (f"published port on {placement.server_host}'s own address {address} from that host: kernel NAT "
                    "(iptables DNAT for local traffic), no docker-proxy")
        return f"published port on {address}: docker-proxy (a userland copy)"

    def remote_client_problem(self) -> str | None:
        if self.network == "bridge-direct":
            return ("network bridge-direct gives the container an address only this machine routes; use network: "
                    "bridge (published port) or host")
        return None

    def memory_limit(self) -> tuple[str, str] | None:
        """resources.memory; else with a QoS preset that limits memory (burstable, guaranteed...), the limit
        derived from the buffer pool (derived_memory); else none."""
        if self.resources.memory:
            return "resources.memory", self.resources.memory
        return ("qos", self.derived_memory()) if self.qos not in (None, "besteffort") else None

    def run_copies(self, work: Path) -> list[DiskCopy]:
        """volume, data-container and bind: the datadir restored on the host in the work folder (or data_dir);
        container-fs: copied into the container's layer, under the daemon's data root; tmpfs: in memory."""
        if self.storage == "tmpfs":
            return []
        if self.storage == "container-fs":
            from layerbench.backends.docker.daemon import docker_root

            return [DiskCopy(docker_root(), "copy in the container's layer (Docker's data root)")]
        where = {"bind": "bind-mounted folder"}.get(self.storage, f"host folder of its {self.storage}")
        return [DiskCopy(Path(self.data_dir) if self.data_dir else work, f"working copy ({where})", clonable=True)]

    def data_in_memory(self) -> str | None:
        """tmpfs: the datadir's pages are the container's memory (charged to its cgroup, in this machine's RAM)."""
        return "storage: tmpfs" if self.storage == "tmpfs" else None

    def server_cpu_list(self) -> str | None:
        return self.cpus or self.resources.cpuset

    def first_time_costs(self) -> list[FirstTimeCost]:
        if self.image is not None:
            return []
        if self.mysqld is not None:
            return [self._root_image_cost()]
        if self.server.flavour == "postgresql":
            return [POSTGRESQL_IMAGE_COST]
        if self.server.flavour == "mysql":
            from layerbench.server.mysql_image import IMPORT_SECONDS, mysql_image_imported

            version = self.server.version or DEFAULT_MYSQL
            return [FirstTimeCost(f"the MySQL {version} image, imported once from its rootfs (docker import)",
                                  IMPORT_SECONDS, rank=1, cached=lambda: mysql_image_imported(version))]
        return [SERVER_IMAGE_COST]

    def _root_image_cost(self) -> FirstTimeCost:
        from layerbench.server.binary_root import find_root
        from layerbench.server.mysql_image import IMPORT_SECONDS, root_image_imported

        found = find_root(str(self.mysqld))
        where = found.root if found else self.mysqld
        return FirstTimeCost(f"an image of {where}, the root of variant {self.name}'s mysqld, imported once (docker "
                             "import)", IMPORT_SECONDS, rank=1, cached=lambda: bool(found and
                                                                                   root_image_imported(found.root)))

    def checks_options_here(self, local: bool) -> bool:
        """Here for a server on this machine; on an ssh: host its backend checks them against the server its image
        will run: that host's own mariadbd, or this machine's when the image is built here (remote.py)."""
        return local and self.builds_server_here

    def runs_mysql(self, local: bool) -> bool:
        return local  # the MySQL image is imported from this machine's rootfs; a daemon on an ssh: host: not yet

    def check_server_here(self) -> None:
        """A MySQL variant: its rootfs is built (else the command that builds it), in the local image only; a
        `mysqld:` variant: the binary is a server layerbench knows, inside a root holding its libraries; a
        PostgreSQL variant: this machine's PostgreSQL, which its image installs (backends/docker/postgresql.py)."""
        if self.server.flavour == "postgresql":
            from layerbench.backends.docker.postgresql import check_postgresql

            return check_postgresql(self)
        if self.mysqld is not None:
            self._check_binary()
            return
        if self.server.flavour != "mysql":
            return
        where = f"variants.{self.name}"
        if self.image is not None:
            raise BadInput(f"{where}.image: server.flavour mysql runs in the image layerbench imports from its MySQL "
                           "rootfs; an image's own server (mysql:8.4) says its flavour itself; remove server.flavour "
                           "or image:")
        if self.client == "container":
            raise BadInput(f"{where}.client: sysbench in a container beside MySQL: not yet (the MySQL image has no "
                           "sysbench); use client: host")
        image_server(self)

    def _check_binary(self) -> None:
        where = f"variants.{self.name}"
        if self.client == "container":
            raise BadInput(f"{where}.client: sysbench in a container beside a mysqld: binary: not yet (its root "
                           "need not hold sysbench); use client: host")
        check_rooted_binary(self, CONTAINER_PROGRAMS, "the container's command")

    def restore_problem(self) -> str | None:
        """An image of the user's decides its server's version, so a datadir made by this machine's server is not
        restored into it: every run starts from an empty datadir (its entrypoint's, or layerbench's init)."""
        if self.image is not None:
            return f"image {self.image} runs its own server version; each run starts from an empty datadir"
        return super().restore_problem()
