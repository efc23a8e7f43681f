"""The seeds' scale: restoring a dataset of several GB against preparing it again, per restore path (host, Docker
volume, VM, Kubernetes hostPath), a copy-on-write clone on XFS, and the harness's own time per run outside
sysbench's measured window.

Side by side in one invocation, on one machine:
  1. restore + verify (snapshot file check, restore checked file by file, server start) vs cleanup + prepare
     (server start, sysbench cleanup + prepare) of the same dataset, in alternating pairs; their ratio;
  2. per path, the datadir's restore + verify alone (no server start), in each pair: the host's working copy
     (server/restore.py), a Docker `volume` (the same restore into a host folder and the `local`-driver volume
     bound to it, as backends/docker/local.py makes it), a VM's data disk (a qcow2 overlay of the snapshot's base
     image; the base is built once per snapshot and shown on its own line), a Kubernetes `hostpath` datadir (the
     backend's own restore into the folder its pod mounts in place; no pod is started, as no container is for the
     volume); each against cleanup + prepare;
  3. the disk's own sequential write rate in the work folder (O_DIRECT, 8 MiB blocks, fsync), measured in each
     pair, and a copy's rate as a fraction of it (where the filesystem copies rather than clones);
  4. each host-side path again (host, Docker volume, Kubernetes hostPath) with the snapshot and work folder on an
     XFS filesystem with reflink made in a loop file (created and removed here): restore + verify by clone;
  5. a real small campaign of a few runs: each run's wall time minus its warm-up + measured seconds.
The dataset (default 8 x 2,500,000 rows, about 4.8 GB) is prepared once and cached (LAYERBENCH_DATA_DIR or
the cache dir); the loop file goes beside the cache.
    .venv/bin/python bench/scale.py [--tables 8] [--rows 2500000] [--pairs 1] [--clones 3] [--runs 4] [--quick]
Ctrl-C stops the server or campaign of the moment, removes the bench's Docker volumes, unmounts and removes the
loop file and the bench's folders (the cached snapshot and its VM base image stay).
"""

from __future__ import annotations

import argparse
import contextlib
import mmap
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from common import host_server, median, parse_args, run_main, say, table

from layerbench.backends.docker.daemon import docker_client
from layerbench.backends.kubernetes.pod import restore_hostpath_datadir
from layerbench.backends.vm.datadisk import ensure_base, make_overlay
from layerbench.campaign.models import parse_campaign
from layerbench.campaign.workload import Workload
from layerbench.hosts.workdirs import datasets_dir, folder_size
from layerbench.run.orchestrator import run_campaign
from layerbench.server.prepare import PrepareProgress, ensure_snapshot, prepare_tables
from layerbench.server.restore import restore_datadir
from layerbench.server.snapshot import Snapshot
from layerbench.server.verify import check_snapshot_files
from layerbench.store import Store


def restore_and_verify(snapshot: Snapshot) -> tuple[float, str]:
    started = time.monotonic()
    check_snapshot_files(snapshot)
    with host_server("scale-restore", snapshot=snapshot.path):
        return time.monotonic() - started, "restore"


def cleanup_and_prepare(workload: Workload, work: Path) -> float:
    started = time.monotonic()
    with host_server("scale-prepare") as endpoint:
        prepare_tables(workload, endpoint, work, work, None, cleanup_first=True)
        return time.monotonic() - started


PATHS = ("host", "docker volume", "vm", "kubernetes hostpath")
PATH_WORDS = {"host": "host: restore + verify (file check, restore by {method}), datadir only",
              "docker volume": "docker volume: restore + verify (file check, host restore by {method}, local-driver "
                               "volume bound to it)",
              "vm": "vm: restore + verify (file check, qcow2 overlay of the base image)",
              "kubernetes hostpath": "kubernetes hostpath: restore + verify (file check, host restore by {method} "
                                     "into the folder the pod mounts)"}
BLOCK = 8 << 20


class Paths:
    """Each path's restore + verify of the snapshot into the work folder; close() removes its volumes."""

    def __init__(self, snapshot: Snapshot, work: Path, *, vm: bool = True) -> None:
        self.snapshot, self.work, self.docker, self.volumes = snapshot, work, docker_client(), []
        self.label = {"layerbench": "1", "layerbench.campaign": f"bench-scale-{os.getpid()}"}
        self.copies: list[tuple[int, float]] = []  # (bytes, seconds) of each host restore that copied
        self.methods: dict[str, str] = {}
        self.base, self.base_seconds = ensure_base(snapshot.path, say, work) if vm else (None, None)

    def restore(self, path: str, n: int) -> float:
        started = time.monotonic()
        check_snapshot_files(self.snapshot)
        target = self.work / f"{path.replace(' ', '-')}-{n}"
        if path == "vm" and self.base is not None:
            make_overlay(self.base, target.with_suffix(".qcow2"))
            return time.monotonic() - started
        if path == "kubernetes hostpath":
            _, facts = restore_hostpath_datadir(self.snapshot.path, target)
        else:
            facts = restore_datadir(self.snapshot.path, target / "datadir")
        self.methods[path] = facts.method
        if path == "host" and facts.method == "copy":
            self.copies.append((facts.bytes, facts.seconds))
        if path == "docker volume":
            self.volumes.append(self.docker.volumes.create(
                name=f"lb-bench-scale-{os.getpid()}-{n}", labels=self.label, driver="local",
                driver_opts={"type": "none", "o": "bind", "device": str((target / "datadir").resolve())}))
        return time.monotonic() - started

    def clear(self) -> None:
        self.close()
        for item in self.work.glob("*-[0-9]*"):
            shutil.rmtree(item) if item.is_dir() else item.unlink()

    def close(self) -> None:
        for volume in self.volumes:
            try:
                volume.remove()
            except Exception as error:
                say(f"could not remove volume {volume.name}: {error}")
        self.volumes.clear()


def disk_write_seconds(folder: Path, size: int) -> float:
    """Seconds to write `size` bytes (whole 8 MiB blocks of random data) sequentially with O_DIRECT into a new file
    in `folder`, fsynced: the disk's own sequential write rate, beside which a copy's rate is judged."""
    buffer = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
    buffer.write(os.urandom(BLOCK))
    target = folder / "lb-bench-disk-write"
    started = time.monotonic()
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
    except OSError:  # a filesystem without O_DIRECT (tmpfs): buffered, the fsync below still counts the disk
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(max(1, size // BLOCK)):
            os.write(fd, buffer)
        os.fsync(fd)
    finally:
        os.close(fd)
        target.unlink(missing_ok=True)
    return time.monotonic() - started


@contextlib.contextmanager
def xfs_loop(size: int, near: Path) -> Iterator[Path]:
    """An XFS filesystem with reflink in a sparse loop file beside `near`; unmounted and removed at the end."""
    root = Path(tempfile.mkdtemp(prefix="lb-scale-xfs-", dir=near))
    image, mount = root / "xfs.img", root / "mnt"
    mount.mkdir()
    mounted = False
    try:
        with image.open("wb") as handle:
            handle.truncate(size)
        subprocess.run(["mkfs.xfs", "-q", "-m", "reflink=1", str(image)], check=True)
        subprocess.run(["mount", "-o", "loop", str(image), str(mount)], check=True)
        mounted = True
        yield mount
    finally:
        if mounted:
            subprocess.run(["umount", str(mount)], check=False)
        shutil.rmtree(root, ignore_errors=True)


CLONE_PATHS = ("host", "docker volume", "kubernetes hostpath")  # the VM's overlay is copy-on-write anywhere


def clone_times(snapshot: Snapshot, clones: int) -> dict[str, list[tuple[float, str]]]:
    """Each host-side restore path again with the snapshot and the work folder on an XFS filesystem with reflink:
    restore + verify as in the pairs, by clone; in turns, one datadir on the loop file at a time."""
    with xfs_loop(snapshot.data_bytes * 13 // 10 + (2 << 30), datasets_dir()) as mount:
        copy, work = mount / snapshot.key, mount / "work"
        say(f"copying the snapshot onto the XFS loop file ({snapshot.data_bytes / 2**30:.1f} GiB, once)")
        copy.mkdir()  # the datadir and its manifest only: not a VM base image kept beside them
        work.mkdir()
        subprocess.run(["cp", "-a", str(snapshot.path), str(snapshot.folder / "manifest.json"), str(copy)], check=True)
        subprocess.run(["sync", "-f", str(copy)], check=True)  # else the first clone waits for the copy's writeback
        paths = Paths(Snapshot(snapshot.key, copy / "datadir", snapshot.meta), work, vm=False)
        out: dict[str, list[tuple[float, str]]] = {path: [] for path in CLONE_PATHS}
        try:
            for i in range(1, clones + 1):
                for path in (CLONE_PATHS if i % 2 else reversed(CLONE_PATHS)):
                    seconds = paths.restore(path, i)
                    out[path].append((seconds, paths.methods[path]))
                    paths.clear()
        finally:
            paths.close()
        return out


def harness_overhead(runs: int, work: Path) -> list[float]:
    """Wall time of each run of a real small campaign minus its warm-up + duration."""
    campaign = parse_campaign({"name": "lb-bench-scale-overhead", "baseline": "host", "repetitions": runs,
                               "busy": "keep",  # the harness's time, not a busy rerun's wait for quiet
                               "output": str(work / "out"), "variants": [{"name": "host", "backend": "host"}],
                               "workloads": [{"tables": 1, "table_size": 1000, "threads": 1, "warmup": 1,
                                              "duration": 3}]})
    measured = campaign.workloads[0].warmup + campaign.workloads[0].duration
    with Store(work / "out" / "layerbench.db") as store:
        outcome = run_campaign(campaign, store)
        done = store.runs(outcome.campaign_id)
    ok = [r for r in done if r.status == "ok" and r.started_at is not None and r.finished_at is not None]
    if not ok:
        raise SystemExit(f"the small campaign had no successful run: {[r.error for r in done]}")
    return [r.finished_at - r.started_at - measured for r in ok]


def reset_pairs(workload: Workload, snapshot: Snapshot, pairs: int, work: Path,
                paths: Paths) -> tuple[list[float], list[float], dict[str, list[float]], list[float]]:
    """In each pair, alternating: restore + verify with a server start, cleanup + prepare, each path's restore, and
    the disk's sequential write of the datadir's size."""
    restore, prepare, by_path, disk = [], [], {path: [] for path in PATHS}, []
    size = max(64 << 20, min(folder_size(snapshot.path), 4 << 30)) // BLOCK * BLOCK
    for pair in range(1, pairs + 1):
        for what in (("restore", "prepare") if pair % 2 else ("prepare", "restore")):
            if what == "restore":
                restore.append(restore_and_verify(snapshot)[0])
            else:
                prepare.append(cleanup_and_prepare(workload, work))
        for path in (PATHS if pair % 2 else reversed(PATHS)):
            by_path[path].append(paths.restore(path, pair))
            paths.clear()  # one datadir on the disk at a time: at 8 GiB and more, three copies may not fit
        disk.append(size / disk_write_seconds(work, size))
        say(f"pair {pair}/{pairs}: restore+verify {restore[-1]:.1f} s, cleanup+prepare {prepare[-1]:.1f} s, "
            + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in by_path.items()) + f", disk {disk[-1] / 2**20:.0f} MiB/s")
    return restore, prepare, by_path, disk


def measure(args: argparse.Namespace, work: Path) -> None:
    workload = Workload(tables=args.tables, table_size=args.rows)
    say(f"snapshot of {args.tables} x {args.rows:,} rows (prepared once, cached under {datasets_dir()})")
    snapshot = ensure_snapshot(workload, None, log_dir=work / "snapshot",
                               on_line=PrepareProgress(args.tables, say, table_size=args.rows), say=say)
    paths = Paths(snapshot, work)
    try:
        restore, prepare, by_path, disk = reset_pairs(workload, snapshot, args.pairs, work, paths)
    finally:
        paths.close()
    clones = clone_times(snapshot, args.clones)
    overhead = harness_overhead(args.runs, work)
    print(f"dataset: {args.tables} x {args.rows:,} rows, {snapshot.data_bytes / 2**30:.2f} GiB of tables "
          f"({snapshot.data_bytes:,} bytes), datadir {folder_size(snapshot.path) / 2**30:.2f} GiB")
    base = (f"built now in {paths.base_seconds:.1f} s" if paths.base_seconds is not None else "cached")
    print(table(["what", "median s", "all"], [
        ["restore + verify (file check, O_DIRECT copy hashed, server start), ext4", *cells(restore, 2)],
        ["cleanup + prepare (server start, sysbench cleanup + prepare)", *cells(prepare, 2)],
        *[[PATH_WORDS[k].format(method=paths.methods.get(k, "")), *cells(v, 3)] for k, v in by_path.items()],
        *[[f"{k} on XFS (reflink, loop file): restore + verify by {v[0][1]}", *cells([c for c, _ in v], 3)]
          for k, v in clones.items()],
        ["harness time per run outside warm-up + measured window (1 x 1,000 rows, host)", *cells(overhead, 2)]]))
    print(f"vm base image: {base} (once per snapshot, not per run)")
    print(f"ratio restore+verify / cleanup+prepare: {median(restore) / median(prepare):.3f} (goal <= 0.05); per "
          "path, the datadir's restore + verify alone: " + ", ".join(
              f"{k} {median(v) / median(prepare):.4f}" for k, v in by_path.items()))
    print("on XFS (reflink), per path, restore + verify / cleanup + prepare (goal <= 0.05 and <= 1 s per run): "
          + ", ".join(f"{k} {median([c for c, _ in v]) / median(prepare):.4f} ({median([c for c, _ in v]):.2f} s)"
                      for k, v in clones.items()))
    print(copy_rate_line(paths.copies, disk))


def copy_rate_line(copies: list[tuple[int, float]], disk: list[float]) -> str:
    """The host copy's rate beside the disk's own sequential write rate, measured in the same pairs."""
    if not copies:
        return f"disk sequential write {median(disk) / 2**20:.0f} MiB/s; the host restore cloned: no copy to compare"
    rate = median([size / seconds for size, seconds in copies])
    return (f"copy rate {rate / 2**20:.0f} MiB/s (host restore, hashed, O_DIRECT) / disk sequential write "
            f"{median(disk) / 2**20:.0f} MiB/s (O_DIRECT, 8 MiB blocks, fsync) = {rate / median(disk):.2f} "
            "(goal >= 0.8)")


def cells(values: list[float], digits: int) -> list[str]:
    return [f"{median(values):.{digits}f}", ", ".join(f"{x:.{digits}f}" for x in values)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=8)
    parser.add_argument("--rows", type=int, default=2_500_000)
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--clones", type=int, default=3)
    parser.add_argument("--runs", type=int, default=4, help="runs of the small campaign for the harness overhead")
    args = parse_args(parser, {"tables": 1, "rows": 1000, "pairs": 1, "clones": 1, "runs": 1})
    if min(args.tables, args.rows, args.pairs, args.clones, args.runs) < 1:
        parser.error("--tables, --rows, --pairs, --clones and --runs must be >= 1")
    work = Path(tempfile.mkdtemp(prefix="lb-bench-scale-"))
    try:
        measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    run_main(main)
