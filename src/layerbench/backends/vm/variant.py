"""A vm variant: the server in a QEMU guest (vCPUs, memory, accelerator, disk cache, network) made from the
same Debian rootfs as the Docker image: MariaDB's, with `server: {flavour: mysql}` the cached MySQL rootfs
(the same mysqld the host and Docker backends run, and the same dataset snapshot), or with `server: {flavour:
postgresql}` MariaDB's rootfs with Debian's PostgreSQL 15 at this machine's version (the snapshot this machine's
PostgreSQL makes)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError, model_validator

from layerbench.backends.base import SERVER_IMAGE_COST
from layerbench.backends.variant_base import BuiltServerVariant, DiskCopy, FirstTimeCost
from layerbench.hosts.placement import Placement, tcp_path
from layerbench.server.servers import (
    DEFAULT_MYSQL,
    DEFAULT_POSTGRESQL,
    ServerChoice,
    check_rooted_binary,
    image_server,
    resolve_server,
)
from layerbench.server.settings import MEMORY_FLOOR, SERVER_MEMORY_OVERHEAD, ServerSettings
from layerbench.vocabulary.base import PrintableLine
from layerbench.vocabulary.limits import MAX_SECONDS
from layerbench.vocabulary.sizes import QEMU_MEMORY_RE, in_mib

NETWORK_WORDS = {"user": "QEMU user networking", "tap": "a tap device on a bridge"}
ACCEL_WORDS = {"auto": "KVM if it works, else TCG (emulated, marked)", "kvm": "KVM", "tcg": "TCG (emulated)"}
QEMU_FORWARD = "forwarded to the guest by QEMU's user networking (slirp, in the QEMU process)"
BOOT_FILES_SECONDS = 60
POSTGRESQL_BOOT_SECONDS = 90  # the rootfs unpacked, apt installs postgresql-15 in it, mkfs: 62 s measured here
GUEST_MEMORY = 256 << 20  # the guest's kernel, init and page tables, beside the server (memory: derived)
PG_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(B|kB|MB|GB|TB)?\s*")  # postgresql.conf's memory units
PG_UNITS = {"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40, None: 8192}  # bare: 8 kB pages


def shared_buffers_setting(server: ServerSettings) -> object:
    """A PostgreSQL variant's server.config.shared_buffers as written (any case), or None."""
    if server.flavour != "postgresql":
        return None
    return next((v for k, v in server.config.items() if k.lower() == "shared_buffers"), None)


def shared_buffers_bytes(server: ServerSettings) -> int | None:
    """A PostgreSQL variant's shared_buffers in bytes, as PostgreSQL reads server.config's value (a bare number:
    8 kB pages); None when unset or not a size (validate's `postgres -C` then says why)."""
    value = shared_buffers_setting(server)
    if value is None or isinstance(value, bool):
        return None
    found = PG_SIZE.fullmatch(str(value))
    return int(float(found.group(1)) * PG_UNITS[found.group(2)]) if found else None


def boot_files_cached() -> bool:
    from layerbench.server.vmimage import vm_cache

    folder = vm_cache()
    return folder.is_dir() and any(folder.iterdir())


def mysql_boot_files_cached(version: str) -> bool:
    from layerbench.server.mysql_rootfs import find_rootfs, pinned
    from layerbench.server.vmimage import boot_files_built

    package_version = pinned(version)
    rootfs = find_rootfs(package_version) if package_version else None
    return rootfs is not None and boot_files_built(rootfs)


def postgresql_boot_files_cached() -> bool:
    from layerbench.errors import PrerequisiteMissing
    from layerbench.server.vmimage import boot_files_built

    try:
        return boot_files_built(postgresql=True)
    except PrerequisiteMissing:  # PostgreSQL not installed here: validate says so in its own line
        return False


BOOT_FILES_COST = FirstTimeCost("the VM's kernel and initramfs, built once from Debian packages", BOOT_FILES_SECONDS,
                                rank=1, cached=boot_files_cached)


class VMVariant(BuiltServerVariant):
    backend: Literal["vm"]
    vcpus: int = Field(default=1, ge=1, le=256)
    memory: str = Field(default="2G", pattern=QEMU_MEMORY_RE, description="the guest's memory; unset: "
                        "the buffer pool + 512 MiB + 256 MiB for the guest, at least 2G (docs/backends/vm.md)")
    accel: Literal["auto", "kvm", "tcg"] = "auto"
    disk_cache: Literal["none", "writeback"] = "none"
    network: Literal["tap", "user"] = "user"
    boot_timeout: int = Field(default=300, ge=5, le=MAX_SECONDS)
    mysqld: PrintableLine | None = Field(default=None, max_length=4096, description="a server binary inside a root "
                               "filesystem; the guest's root disk is a copy of that root (docs/servers.md)")

    local_backend: ClassVar[str] = "layerbench.backends.vm.local:VMBackend"
    remote_backend: ClassVar[str | None] = "layerbench.backends.vm.remote:RemoteVMBackend"
    run_overhead: ClassVar[float] = 14  # the guest boots in ~12 s (docs/backends/vm.md), + its stop
    leftovers: ClassVar[str | None] = "layerbench.backends.vm.net"
    memory_unit: ClassVar[str] = "M"
    guest_memory: ClassVar[int] = GUEST_MEMORY
    runs_postgresql: ClassVar[bool] = True  # Debian's postgresql-15 in the guest (backends/vm/guestpg.py)

    @model_validator(mode="before")
    @classmethod
    def _memory_holds_the_buffer_pool_by_default(cls, data: Any) -> Any:
        """Unset memory is derived from the buffer pool the variant's server asks for (stored as derived)."""
        if not isinstance(data, dict) or data.get("memory") is not None:
            return data
        try:
            server = ServerSettings.model_validate(data.get("server") or {})
        except ValidationError:
            return data  # the field's own validation says what is wrong
        return {**data, "memory": cls.model_construct(server=server).derived_memory()}

    def derived_memory(self) -> str:
        """A PostgreSQL guest's memory when the variant sets none: its shared_buffers in place of a buffer pool."""
        shared = shared_buffers_bytes(self.server)
        if shared is None:
            return super().derived_memory()
        return self.memory_text(in_mib(max(MEMORY_FLOOR, shared + SERVER_MEMORY_OVERHEAD + self.guest_memory)) << 20)

    @model_validator(mode="after")
    def _binary_here_only(self) -> VMVariant:
        if self.mysqld is not None and self.server.flavour == "postgresql":
            raise ValueError(f"variants.{self.name}.mysqld: a postgresql variant runs Debian's PostgreSQL 15 in the "
                             "guest; remove mysqld:")
        if self.mysqld is not None and self.server_host is not None:
            raise ValueError(f"variants.{self.name}.mysqld: a server binary of your own in a VM on another host "
                             "(server_host): not yet; run the VM on this machine, or use backend: host")
        return self

    @property
    def builds_server_here(self) -> bool:
        return True

    def describe_plan(self) -> str:
        mysql = f"MySQL {self.server.version or DEFAULT_MYSQL} (the cached rootfs) in " if self.is_mysql else \
            f"{self.mysqld} (a root disk copied from its root filesystem) in " if self.mysqld else \
            f"PostgreSQL {self.server.version or DEFAULT_POSTGRESQL} (Debian's postgresql-15 at this machine's " \
            "version, run as user postgres in the guest) in " if self.is_postgresql else ""
        pool = "shared_buffers" if self.is_postgresql else "the buffer pool"
        sized = self.server.buffer_pool_bytes() or shared_buffers_bytes(self.server)
        derived = sized is not None and self.memory == self.derived_memory()
        memory = f"{self.memory} memory{f' ({pool} + overhead)' if derived else ''}"
        return (f"{mysql}a QEMU VM, {self.vcpus} vCPU(s), {memory}, {ACCEL_WORDS[self.accel]}; disk cache "
                f"{self.disk_cache}; {NETWORK_WORDS[self.network]}")

    def network_path(self, placement: Placement) -> str:
        if self.network == "tap":
            return "to the guest's own address on a tap device (virtio-net) on a bridge"
        return f"{tcp_path(placement)}, {QEMU_FORWARD}"

    def memory_limit(self) -> tuple[str, str] | None:
        return "memory", self.memory

    def run_copies(self, work: Path) -> list[DiskCopy]:
        """A qcow2 overlay of the base image in the run's folder: nearly nothing at the start, then what the guest
        writes; counted at the dataset's size (a run that rewrites every page)."""
        return [DiskCopy(Path(self.data_dir) if self.data_dir else work, "copy-on-write overlay")]

    def snapshot_companions(self) -> list[str]:
        from layerbench.backends.vm.datadisk import BASE_NAME

        return [f"VM base image {BASE_NAME}"]

    def first_time_costs(self) -> list[FirstTimeCost]:
        if self.mysqld is not None:
            return [FirstTimeCost(f"the VM's kernel, initramfs and a root disk copied from the root filesystem of "
                                  f"variant {self.name}'s mysqld, built once", BOOT_FILES_SECONDS, rank=1,
                                  cached=lambda: binary_boot_files_cached(str(self.mysqld)))]
        if self.is_mysql:
            version = self.server.version or DEFAULT_MYSQL
            return [FirstTimeCost(f"the VM's kernel, initramfs and MySQL {version} root disk (copied from the MySQL "
                                  "rootfs), built once", BOOT_FILES_SECONDS, rank=1,
                                  cached=lambda: mysql_boot_files_cached(version))]
        if self.is_postgresql:
            return [SERVER_IMAGE_COST, FirstTimeCost("the VM's kernel, initramfs and PostgreSQL root disk (the server "
                                                     "image's rootfs with postgresql-15 installed by apt), built "
                                                     "once", POSTGRESQL_BOOT_SECONDS, rank=1,
                                                     cached=postgresql_boot_files_cached)]
        return [SERVER_IMAGE_COST, BOOT_FILES_COST]

    def runs_mysql(self, local: bool) -> bool:
        return local  # the root disk is copied from this machine's MySQL rootfs; on an ssh: host: not yet

    def check_server_here(self) -> None:
        """A MySQL variant: its rootfs is built (else the command that builds it) and its mysqld is one layerbench
        knows (read from its `--version`, here through the rootfs's loader)."""
        if self.mysqld is not None:
            check_guest_root(self)
        elif self.is_mysql:
            image_server(self)
        elif self.is_postgresql:
            resolve_server(self)  # this machine's PostgreSQL: the version the guest is given, and the snapshot's

    @property
    def is_postgresql(self) -> bool:
        return self.server.flavour == "postgresql"

    def server_command_here(self) -> tuple[str, ...] | None:
        """PostgreSQL's settings are checked against this machine's postgres: the guest's package, same version."""
        return resolve_server(self).command if self.is_postgresql else super().server_command_here()

    def snapshot_server(self) -> ServerChoice:
        """A PostgreSQL guest restores the snapshot this machine's PostgreSQL made (the host variant's)."""
        if self.is_postgresql:
            return ServerChoice("prepare", "postgresql", self.server.version)
        return super().snapshot_server()


GUEST_PROGRAMS = ("sh", "mount", "mkdir", "cat", "ls", "grep", "head", "test")  # what data/vm/init.sh runs


def check_guest_root(variant: VMVariant) -> None:
    """A `mysqld:` variant: a server layerbench knows inside a root that holds its libraries and what the guest
    init runs (else one line naming what is missing)."""
    check_rooted_binary(variant, GUEST_PROGRAMS, "the guest's init")


def binary_boot_files_cached(binary: str) -> bool:
    from layerbench.server.binary_root import find_root
    from layerbench.server.mysql_rootfs import built_rootfses
    from layerbench.server.vmimage import boot_files_built

    found = find_root(binary)
    if found is None:
        return False
    built = next((rootfs for _, rootfs in built_rootfses() if rootfs.root.resolve() == found.root), None)
    return boot_files_built(built) if built is not None else boot_files_built(None, found.root)
