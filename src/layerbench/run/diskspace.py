"""The disk preflight of this machine: every copy of a dataset the plan holds at once, per filesystem, said per
variant. Kept: each snapshot still to be prepared (one per dataset, page size and server that makes it, so a
page-size variant's second snapshot counts), and what a variant keeps beside a snapshot (a VM's base image).
Per run: each variant's copy (a working copy, a Docker volume's host folder, a container layer under Docker's
data root, a VM's overlay); a campaign runs one at a time, so the largest on each filesystem counts. A copy counts in
full, except a working copy that will be a reflink clone (its folder and the snapshots share a filesystem where a
probe file clones): its blocks are the snapshot's until a page is written, so it counts what a run can rewrite,
its seconds at CLONE_GROWTH_RATE (at most the dataset). What is cached already costs nothing.

Each dataset's bytes are placed where they will be written: a snapshot that a server's ssh: host prepares with its
own server (`on_host`: the variants whose backend keeps its datasets there, backends' datasets_on_host) needs no
room here; check_remote_disk_space counts, per ssh: host and filesystem (its `df` there), the snapshots written in
its `<work_dir>/datasets` (prepared there, or shipped from here) and its largest run's copy."""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from layerbench.backends.variant_base import VariantBase
from layerbench.campaign.models import Campaign
from layerbench.campaign.workload import Workload
from layerbench.errors import BadInput, LayerbenchError
from layerbench.hosts.inventory import Host, Hosts
from layerbench.hosts.placement import server_of
from layerbench.vocabulary.sizes import byte_text

if TYPE_CHECKING:
    from layerbench.backends.variant_base import DiskCopy

BYTES_PER_ROW = 260  # a sysbench row with its secondary index in InnoDB, measured on 10.11 (~230) + margin
DATADIR_OVERHEAD = 128 << 20  # system tablespace, redo and undo logs, the mysql schema
# MySQL 8.4/9.x initialises a larger datadir (undo tablespaces, a 100 MiB redo log in #innodb_redo, doublewrite
# files, the data dictionary): measured here, 2 x 10,000 rows make a 213 MiB datadir under MySQL 9.7, where
# MariaDB 10.11 makes 123 MiB of 1 x 10,000 rows and 113 MiB of 1 x 1,000
DATADIR_OVERHEAD_BY_FLAVOUR = {"mysql": 200 << 20}
# A clone's own blocks are the pages a run writes (InnoDB's flushes and doublewrite, redo, undo): they grow with
# the run's seconds, not with the dataset. Measured here at 20 x 10,000,000 rows (44.9 GiB datadir), 305 s of
# oltp_read_write under a 2 GiB pool: at most 10.6 GiB per run, 36 MiB/s (InnoDB's adaptive flushing is bounded by
# innodb_io_capacity_max, 2000 pages/s = 31 MiB/s by default); the rate below leaves a margin of 1.8 (docs/datasets.md)
CLONE_GROWTH_RATE = 64 << 20


@dataclass
class Room:
    """What one filesystem must hold: kept files (all at once) and each run's copy (the largest at a time)."""

    folder: Path
    kept: list[tuple[str, int]] = field(default_factory=list)
    runs: list[tuple[str, int]] = field(default_factory=list)

    def items(self) -> list[tuple[str, int]]:
        largest = max(self.runs, key=lambda item: item[1], default=None)
        return self.kept + ([(f"the largest run's {largest[0]}", largest[1])] if largest else [])


def prepared_on_host(campaign: Campaign, hosts: Hosts) -> frozenset[str]:
    """The variants whose ssh: host prepares and keeps their snapshots, as far as the variant says without asking
    the host (a host variant's: dataset_on_server_host); preflight knows it from the backends (datasets_on_host:
    a docker variant's too, when that host's system has its MariaDB)."""
    return frozenset(v.name for v in campaign.variants
                     if v.dataset_on_server_host and not hosts[server_of(v)].is_local)


def check_disk_space(campaign: Campaign, on_host: frozenset[str] | None = None) -> None:
    """Room, said before: on every filesystem, what the plan keeps plus its largest run's copy fit in the free
    space. Refuses in one line with each item (which variant needs what) and the numbers otherwise. `on_host`:
    the variants whose snapshots their ssh: host prepares (prepared_on_host when not given)."""
    rooms: dict[int, Room] = {}
    hosts = Hosts(campaign.hosts)
    local = [v for v in campaign.variants if v.owns_server and hosts[server_of(v)].is_local]
    add_snapshots(campaign, local, rooms, prepared_on_host(campaign, hosts) if on_host is None else on_host)
    add_run_copies(campaign, local, rooms)
    for room in rooms.values():
        items = room.items()
        total, free = sum(size for _, size in items), shutil.disk_usage(room.folder).free
        if total > free:
            parts = " + ".join(f"{what} {byte_text(size)}" for what, size in items)
            raise BadInput(f"workloads: {parts} = {byte_text(total)} needed on {room.folder}, which has "
                           f"{byte_text(free)} free; free space, use fewer tables or a smaller table_size, or put the "
                           "data elsewhere (LAYERBENCH_DATA_DIR, a variant's data_dir)")


def add_snapshots(campaign: Campaign, local: list[VariantBase], rooms: dict[int, Room], on_host: frozenset[str]
                  ) -> None:
    """Each snapshot the plan restores that is not cached, and what a variant keeps beside it (a VM's base); not
    the snapshots an ssh: host prepares and keeps itself (the variants in `on_host`), nor those a cluster makes
    (VariantBase.snapshot_made_here)."""
    from layerbench.hosts.workdirs import datasets_dir

    where = existing_parent(datasets_dir())
    for workload in campaign.workloads:
        for key, users in snapshot_users(campaign, workload).items():
            variants = [v for v in users if v.name not in on_host and v.snapshot_made_here()]
            if not variants:
                continue
            size, page = variant_dataset_bytes(variants[0], workload), page_words(variants[0])
            if not (datasets_dir() / key / "meta.json").is_file():
                add(rooms, where, "kept", f"snapshot of {workload.name}{page} ({named(variants)})", size)
            for companion in sorted({c for v in variants if v in local for c in v.snapshot_companions()}):
                if not (datasets_dir() / key / companion.split()[-1]).exists():
                    users = named([v for v in variants if companion in v.snapshot_companions()])
                    add(rooms, where, "kept", f"{companion} of {workload.name}{page} ({users})", size)


def add_run_copies(campaign: Campaign, local: list[VariantBase], rooms: dict[int, Room]) -> None:
    """Each local variant's copy of a run's dataset, for every workload it does not leave untouched."""
    from layerbench.hosts.workdirs import datasets_dir, work_root

    snapshots = existing_parent(datasets_dir())
    for variant in local:
        for workload in campaign.workloads:
            if campaign.reset_for(variant, workload).method == "none":
                continue
            for copy in variant.run_copies(work_root()):
                folder, size = existing_parent(copy.folder), variant_dataset_bytes(variant, workload)
                what = f"{copy.what} of variant {variant.name} ({workload.name})"
                if will_be_clone(copy, snapshots):
                    seconds = workload.warmup + workload.duration
                    size = min(size, math.ceil(seconds * CLONE_GROWTH_RATE))
                    what += (f", a reflink clone (counted: the pages {seconds:g} s of a run can rewrite at "
                             f"{byte_text(CLONE_GROWTH_RATE, 'MiB', '.0f')}/s)")
                add(rooms, folder, "runs", what, size)


def will_clone(variant: VariantBase) -> bool:
    """Whether every copy one run of this variant holds on this machine will be a reflink clone of the snapshot."""
    from layerbench.hosts.workdirs import datasets_dir, work_root

    copies = variant.run_copies(work_root())
    snapshots = existing_parent(datasets_dir())
    return bool(copies) and all(will_be_clone(c, snapshots) for c in copies)


def will_be_clone(copy: DiskCopy, snapshots: Path) -> bool:
    return copy.clonable and clones_between(snapshots, existing_parent(copy.folder))


def clones_between(snapshots: Path, folder: Path) -> bool:
    """Whether a file in the snapshots' folder clones into `folder` (restore.can_clone's probe, on a file made
    for it): one filesystem with reflink. Any error (no reflink, another filesystem, a folder that cannot be
    written) says no: the copy counts in full."""
    from layerbench.server.restore import can_clone

    try:
        if snapshots.stat().st_dev != folder.stat().st_dev:
            return False
        with tempfile.TemporaryDirectory(dir=snapshots, prefix=".lb-clone-probe-") as probe:
            (Path(probe) / "probe").write_bytes(b"\0" * 4096)
            return can_clone(Path(probe), folder)
    except OSError:
        return False


def snapshot_users(campaign: Campaign, workload: Workload) -> dict[str, list[VariantBase]]:
    """The snapshots of this workload the plan restores, by cache key, with the variants that restore each."""
    users: dict[str, list[VariantBase]] = {}
    for variant in campaign.variants:
        if campaign.reset_for(variant, workload).method == "snapshot":
            users.setdefault(snapshot_key(variant, workload), []).append(variant)
    return users


def snapshot_key(variant: VariantBase, workload: Workload) -> str:
    """The cache key of the snapshot this variant restores: its dataset, page size and the server that makes it."""
    from layerbench.server.servers import resolve_server
    from layerbench.server.snapshot import dataset_key, server_version

    chosen = variant.snapshot_server()
    try:
        identity = resolve_server(chosen).identity()
    except (LayerbenchError, OSError):  # a server that is not there (its own check says so): keyed by its name,
        # so a MySQL variant whose rootfs is not built yet still counts a snapshot of its own
        settings = chosen.server
        identity = (server_version() if settings.flavour in (None, "mariadb") and chosen.mysqld is None
                    else f"not built: {settings.flavour} {settings.version} {chosen.mysqld}")
    return dataset_key(workload, identity, variant.server.page_size())[0]


def named(variants: list[VariantBase]) -> str:
    return f"variant{'s' * (len(variants) > 1)} {', '.join(v.name for v in variants)}"


def page_words(variant: VariantBase) -> str:
    size = variant.server.page_size()
    return f", page size {size}" if size else ""


def add(rooms: dict[int, Room], folder: Path, kind: str, what: str, size: int) -> None:
    """Group what is needed by filesystem (device), so two folders on one disk add up."""
    room = rooms.setdefault(folder.stat().st_dev, Room(folder))
    (room.kept if kind == "kept" else room.runs).append((what, size))


def methods(campaign: Campaign, workload: Workload) -> set[str]:
    """The resets the campaign's variants use for this workload (each variant's own, or the workload's)."""
    return {choice.method for choice in campaign.resets_of(workload).values()}


def dataset_bytes(workload: Workload) -> int:
    """The datadir a dataset makes: measured when its snapshot is cached, else estimated from the row count."""
    from layerbench.hosts.workdirs import folder_size

    folder = cached_folder(workload)
    if folder is not None:
        return folder_size(folder / "datadir")
    return workload.dataset_rows * BYTES_PER_ROW + DATADIR_OVERHEAD  # a script's: a guess


def variant_dataset_bytes(variant: VariantBase, workload: Workload) -> int:
    """The datadir this variant restores for this workload: its own snapshot's (its page size, its server) when
    cached, else estimated from the row count with the datadir its server's flavour initialises."""
    from layerbench.hosts.workdirs import datasets_dir, folder_size

    folder = datasets_dir() / snapshot_key(variant, workload)
    if (folder / "meta.json").is_file():
        return folder_size(folder / "datadir")
    flavour = variant.snapshot_server().flavour or ""
    return workload.dataset_rows * BYTES_PER_ROW + DATADIR_OVERHEAD_BY_FLAVOUR.get(
        flavour, DATADIR_OVERHEAD)


def cached_folder(workload: Workload) -> Path | None:
    from layerbench.hosts.workdirs import datasets_dir
    from layerbench.server.snapshot import dataset_key, server_version

    try:
        key, _ = dataset_key(workload, server_version(), None)
    except OSError:
        return None
    folder = datasets_dir() / key
    return folder if (folder / "meta.json").is_file() else None


def existing_parent(path: Path) -> Path:
    path = path.resolve()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


# --- on the ssh: hosts ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    """Bytes a run or a snapshot writes on an ssh: host, in `folder` there."""

    host: str
    folder: str
    kind: str  # "kept" (all at once) or "runs" (the largest at a time)
    what: str
    size: int


def remote_placements(campaign: Campaign, hosts: Hosts, on_host: frozenset[str]) -> list[Placed]:
    """What each ssh: host that runs a server writes: each snapshot in `<work_dir>/datasets` (one per workload and
    page size, prepared there for a variant in `on_host`, else shipped from here), and each variant's run copy in
    its data_dir there, else the work_dir."""
    kept: dict[tuple[str, str, str], list[str]] = {}
    out: list[Placed] = []
    for variant in campaign.variants:
        host = hosts[server_of(variant)]
        if host.is_local or not variant.owns_server:
            continue
        for workload in campaign.workloads:
            method, size = campaign.reset_for(variant, workload).method, variant_dataset_bytes(variant, workload)
            if method == "snapshot":
                how = "prepared there" if variant.name in on_host else "shipped from here"
                kept.setdefault((host.name, f"snapshot of {workload.name}{page_words(variant)}, {how}",
                                 str(size)), []).append(variant.name)
            if method != "none":
                out.append(Placed(host.name, variant.data_dir or host.work_dir, "runs",
                                  f"working copy of variant {variant.name} ({workload.name})", size))
    snapshots = [Placed(name, f"{hosts[name].work_dir.rstrip('/')}/datasets", "kept",
                        f"{what} ({'variant' + 's' * (len(users) > 1)} {', '.join(users)})", int(size))
                 for (name, what, size), users in kept.items()]
    return snapshots + out


def check_remote_disk_space(campaign: Campaign, on_host: frozenset[str],
                            free_on: Callable[[Host, str], tuple[int, str] | None] | None = None) -> None:
    """On every ssh: host that runs a server, per filesystem there (`df` of each folder, through free_on): the
    snapshots it keeps plus its largest run's copy fit in the free space. Refuses in one line naming the host,
    the folder, each item, the space needed and the free space otherwise; a folder whose df says nothing is not
    checked."""
    hosts = Hosts(campaign.hosts)
    free_on = free_on or free_bytes_on
    rooms: dict[tuple[str, str], tuple[Room, int, list[str]]] = {}
    seen: dict[tuple[str, str], tuple[int, str] | None] = {}
    for placed in remote_placements(campaign, hosts, on_host):
        if (placed.host, placed.folder) not in seen:
            seen[(placed.host, placed.folder)] = free_on(hosts[placed.host], placed.folder)
        if (found := seen[(placed.host, placed.folder)]) is None:
            continue
        room, _, folders = rooms.setdefault((placed.host, found[1]), (Room(Path(placed.folder)), found[0], []))
        (room.kept if placed.kind == "kept" else room.runs).append((placed.what, placed.size))
        folders += [placed.folder] if placed.folder not in folders else []
    for (name, _), (room, free, folders) in rooms.items():
        items = room.items()
        total = sum(size for _, size in items)
        if total > free:
            parts = " + ".join(f"{what} {byte_text(size)}" for what, size in items)
            where = " and ".join(folders) + " (one filesystem)" * (len(folders) > 1)
            raise BadInput(f"hosts.{name}: {parts} = {byte_text(total)} needed on host {name} at {where}, "
                           f"which has {byte_text(free)} free; free space there, use fewer tables or a smaller "
                           f"table_size, or set hosts.{name}.work_dir (a variant's data_dir for its run copies)")


def free_bytes_on(host: Host, folder: str) -> tuple[int, str] | None:
    """Free bytes of the filesystem that holds folder (or its nearest existing parent) on an ssh: host, and that
    filesystem's mount point there (`df -Pk`); None when df says nothing readable."""
    import shlex

    script = (f"d={shlex.quote(folder)}; while [ ! -d \"$d\" ]; do d=$(dirname \"$d\"); done; "
              "df -Pk \"$d\" | awk 'NR==2 {print \"FREE\", $4, $6}'")
    done = host.shell(script, name=f"df on {host.name}", timeout=30)
    line = next((x for x in done.output.splitlines() if x.startswith("FREE ")), "").split(maxsplit=2)
    return (int(line[1]) * 1024, line[2]) if len(line) == 3 and line[1].isdigit() else None
