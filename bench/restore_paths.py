"""How long does a run's restore take on the Docker volume and VM paths, the old way beside the new?

Per dataset size, alternating old and new `--repeats` times in one invocation:
- Docker volume, old: `cp -a` of the snapshot inside a container into a fresh named volume (what the container's
  command did before its server started, inside the 180 s start timeout; timed inside the container, so the
  container's own start is not counted; plus a `sync -f` of the volume, which the old path left to the kernel,
  so that both sides count the bytes reaching the disk);
- Docker volume, new: server/restore.py into a host folder (clone or checked copy, flushed) and a `local`-driver
  volume bound to it;
- VM, old: `mkfs.ext4 -d` of the snapshot into a data disk, per run;
- VM, new: a qcow2 overlay of the snapshot's base image (the base is built once per snapshot; its build time is
  printed on its own line, it is not a per-run cost).
- with --xfs (root): the new Docker volume restore again, snapshot and folder on an XFS filesystem made in a
  sparse loop file (removed at the end), where server/restore.py clones.
    .venv/bin/python bench/restore_paths.py [--sizes 1x10000,4x100000] [--repeats 5] [--xfs] [--quick]
Ctrl-C removes the bench's folders, volumes and containers (the cached snapshots and their base images stay).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from common import median, parse_args, run_main, say, table

from layerbench.backends.docker.daemon import docker_client
from layerbench.backends.vm.datadisk import ensure_base, make_overlay
from layerbench.campaign.workload import Workload
from layerbench.hosts.procs import run
from layerbench.hosts.workdirs import folder_size
from layerbench.server.image import ensure_docker_image
from layerbench.server.prepare import ensure_snapshot
from layerbench.server.restore import restore_datadir
from layerbench.server.snapshot import Snapshot
from layerbench.server.vmimage import make_ext4

LABEL = {"layerbench": "1", "layerbench.campaign": f"bench-restore-{os.getpid()}"}


class DockerPaths:
    """The two Docker volume restores; every volume and container it makes is removed by close()."""

    def __init__(self, work: Path) -> None:
        self.client, self.work, self.made, self.methods = docker_client(), work, [], set()
        self.image = ensure_docker_image(self.client, None)

    def old(self, snapshot: Snapshot, n: int) -> float:
        volume = self._keep(self.client.volumes.create(name=f"lb-bench-old-{os.getpid()}-{n}", labels=LABEL))
        script = ("s=$(date +%s%N); cp -a /snapshot/. /var/lib/mysql/ && sync -f /var/lib/mysql; "
                  "echo $(($(date +%s%N) - s))")
        box = self._keep(self.client.containers.create(
            self.image, ["sh", "-c", script], labels=LABEL, volumes={
                str(snapshot.path.resolve()): {"bind": "/snapshot", "mode": "ro"},
                volume.name: {"bind": "/var/lib/mysql", "mode": "rw"}}))
        box.start()
        box.wait(timeout=3600)
        return int(box.logs().decode().strip().splitlines()[-1]) / 1e9

    def new(self, snapshot: Path, folder: Path, n: int) -> float:
        """server/restore.py of the snapshot datadir into `folder`, and a local volume bound to it."""
        started = time.monotonic()
        method = restore_datadir(snapshot, folder).method
        name = f"lb-bench-new-{os.getpid()}-{n}-{len(self.made)}"  # one per restore, also of the same repeat
        self._keep(self.client.volumes.create(name=name, labels=LABEL, driver="local",
                                              driver_opts={"type": "none", "o": "bind", "device": str(folder)}))
        self.methods.add(method)
        return time.monotonic() - started

    def _keep(self, obj):
        self.made.append(obj)
        return obj

    def close(self) -> None:
        for obj in reversed(self.made):
            try:
                obj.remove(force=True) if hasattr(obj, "start") else obj.remove()
            except Exception as error:
                say(f"could not remove {obj}: {error}")
        self.made.clear()


def vm_old(snapshot: Snapshot, work: Path, n: int) -> float:
    started = time.monotonic()
    make_ext4(snapshot.path, work / f"data-{n}.img", extra_mib=max(512, folder_size(snapshot.path) // 2**20),
              label="data")
    return time.monotonic() - started


def vm_new(snapshot: Snapshot, work: Path, n: int) -> float:
    base, _ = ensure_base(snapshot.path, say, work)
    return make_overlay(base, work / f"data-{n}.qcow2")


def measure(snapshot: Snapshot, repeats: int, work: Path, docker: DockerPaths,
            xfs: Path | None) -> dict[str, list[float]]:
    """Alternating old/new (the order flips each repeat); each repeat's files are removed before the next."""
    steps: dict[str, Callable[[int], float]] = {
        "docker volume old (cp -a + sync in the container)": lambda n: docker.old(snapshot, n),
        "docker volume new (host restore + local volume)": lambda n: docker.new(snapshot.path, work / f"v{n}", n),
        "vm old (mkfs.ext4 -d per run)": lambda n: vm_old(snapshot, work, n),
        "vm new (qcow2 overlay of the base)": lambda n: vm_new(snapshot, work, n)}
    if xfs is not None:
        steps["docker volume new on XFS (reflink clone + local volume)"] = \
            lambda n: docker.new(xfs / "snap" / "datadir", xfs / f"v{n}", n)
    times: dict[str, list[float]] = {name: [] for name in steps}
    for n in range(repeats):
        names = list(steps) if n % 2 == 0 else list(reversed(steps))
        for name in names:
            times[name].append(steps[name](n))
        docker.close()
        for folder in (work, *([xfs] if xfs else [])):
            for item in folder.glob("*"):
                if item.name != "snap":
                    shutil.rmtree(item) if item.is_dir() else item.unlink()
        say(f"repeat {n + 1}/{repeats}: " + ", ".join(f"{k.split(' (')[0]} {v[-1]:.3f} s" for k, v in times.items()))
    return times


def one_size(shape: str, repeats: int, work: Path, docker: DockerPaths, xfs: Path | None) -> list[list[str]]:
    tables, rows = (int(x) for x in shape.split("x"))
    snapshot = ensure_snapshot(Workload(tables=tables, table_size=rows), None, log_dir=work / "snapshot-log")
    shutil.rmtree(work / "snapshot-log", ignore_errors=True)
    size = (f"{tables}x{rows:,} ({snapshot.data_bytes / 2**20:.0f} MiB tables, "
            f"{folder_size(snapshot.path) / 2**20:.0f} MiB datadir)")
    _, built = ensure_base(snapshot.path, say, work)
    print(f"{size}: VM base image " + (f"built now in {built:.2f} s (once per snapshot)" if built is not None
                                        else "already cached (built once per snapshot)"))
    if xfs is not None:  # the snapshot on the XFS filesystem too, so that a restore there can clone
        shutil.rmtree(xfs / "snap", ignore_errors=True)
        shutil.copytree(snapshot.folder / "datadir", xfs / "snap" / "datadir", symlinks=True)
        shutil.copy2(snapshot.folder / "manifest.json", xfs / "snap" / "manifest.json")
    times = measure(snapshot, repeats, work, docker, xfs)
    old = {path: median(v) for k, v in times.items() for path in ("docker volume", "vm") if k.startswith(path + " old")}
    return [[size, name, f"{median(v):.3f}", ", ".join(f"{x:.3f}" for x in v),
             "" if " old " in name else f"{old[name.split(' new')[0]] / max(median(v), 1e-6):.1f}x"]
            for name, v in times.items()]


@contextmanager
def xfs_loop(work: Path, size: int) -> Iterator[Path]:
    """An XFS filesystem with reflink in a sparse loop file of `size` bytes; unmounted and removed after."""
    image, mount = work.parent / f"{work.name}-xfs.img", work.parent / f"{work.name}-xfs"
    mount.mkdir()
    with image.open("wb") as handle:
        handle.truncate(size)
    try:
        for cmd in (["mkfs.xfs", "-q", "-m", "reflink=1", str(image)], ["mount", "-o", "loop", str(image), str(mount)]):
            if run(cmd[0], cmd, timeout=120).returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} failed (--xfs needs root and xfsprogs)")
        yield mount
    finally:
        run("umount", ["umount", str(mount)], timeout=120)
        image.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            mount.rmdir()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1x10000,4x100000", help="tables x rows, comma-separated")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--xfs", action="store_true", help="also restore on an XFS loop filesystem (a clone); root")
    args = parse_args(parser, {"sizes": "1x1000", "repeats": 1})
    shapes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    if args.repeats < 1 or not shapes or not all(s.count("x") == 1 and s.replace("x", "").isdigit() for s in shapes):
        parser.error("--sizes: tables x rows like 1x10000,4x100000; --repeats >= 1")
    work = Path(tempfile.mkdtemp(prefix="lb-bench-restore-"))
    docker = DockerPaths(work)
    rows: list[list[str]] = []
    try:
        with xfs_loop(work, 8 << 30) if args.xfs else contextlib.nullcontext() as xfs:
            for shape in shapes:
                rows += one_size(shape, args.repeats, work, docker, xfs)
    finally:
        docker.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"docker volume restore methods used: {', '.join(sorted(docker.methods))}")
    print(table(["size", "path", "median s", "all", "old/new"], rows))


if __name__ == "__main__":
    run_main(main)
