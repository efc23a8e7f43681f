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
    .venv/bin/python bench/restore_paths.py [--sizes 1x10000,4x100000] [--repeats 5] [--quick]
Ctrl-C removes the bench's folders, volumes and containers (the cached snapshots and their base images stay).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import median, parse_args, run_main, say, table

from layerbench.backends.docker.daemon import docker_client
from layerbench.backends.vm.datadisk import ensure_base, make_overlay
from layerbench.campaign.models import Workload
from layerbench.server.image import ensure_docker_image
from layerbench.server.prepare import ensure_snapshot
from layerbench.server.restore import restore_datadir
from layerbench.server.snapshot import Snapshot
from layerbench.server.vmimage import make_ext4, tree_bytes

LABEL = {"layerbench": "1", "layerbench.campaign": f"bench-restore-{os.getpid()}"}


class DockerPaths:
    """The two Docker volume restores; every volume and container it makes is removed by close()."""

    def __init__(self, work: Path) -> None:
        self.client, self.work, self.made = docker_client(), work, []
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

    def new(self, snapshot: Snapshot, n: int) -> float:
        started = time.monotonic()
        folder = self.work / f"volume-{n}"
        restore_datadir(snapshot.path, folder)
        self._keep(self.client.volumes.create(name=f"lb-bench-new-{os.getpid()}-{n}", labels=LABEL, driver="local",
                                              driver_opts={"type": "none", "o": "bind", "device": str(folder)}))
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
    make_ext4(snapshot.path, work / f"data-{n}.img", extra_mib=max(512, tree_bytes(snapshot.path) // 2**20),
              label="data")
    return time.monotonic() - started


def vm_new(snapshot: Snapshot, work: Path, n: int) -> float:
    base, _ = ensure_base(snapshot.path, say, work)
    return make_overlay(base, work / f"data-{n}.qcow2")


def measure(snapshot: Snapshot, repeats: int, work: Path, docker: DockerPaths) -> dict[str, list[float]]:
    """Alternating old/new (the order flips each repeat); each repeat's files are removed before the next."""
    steps: dict[str, Callable[[int], float]] = {
        "docker volume old (cp -a + sync in the container)": lambda n: docker.old(snapshot, n),
        "docker volume new (host restore + local volume)": lambda n: docker.new(snapshot, n),
        "vm old (mkfs.ext4 -d per run)": lambda n: vm_old(snapshot, work, n),
        "vm new (qcow2 overlay of the base)": lambda n: vm_new(snapshot, work, n)}
    times: dict[str, list[float]] = {name: [] for name in steps}
    for n in range(repeats):
        names = list(steps) if n % 2 == 0 else [*list(steps)[1::2], *list(steps)[0::2]]
        for name in names:
            times[name].append(steps[name](n))
        docker.close()
        for item in work.iterdir():
            shutil.rmtree(item) if item.is_dir() else item.unlink()
        say(f"repeat {n + 1}/{repeats}: " + ", ".join(f"{k.split(' (')[0]} {v[-1]:.3f} s" for k, v in times.items()))
    return times


def one_size(shape: str, repeats: int, work: Path, docker: DockerPaths) -> list[list[str]]:
    tables, rows = (int(x) for x in shape.split("x"))
    snapshot = ensure_snapshot(Workload(tables=tables, table_size=rows), None, log_dir=work / "snapshot-log")
    shutil.rmtree(work / "snapshot-log", ignore_errors=True)
    size = (f"{tables}x{rows:,} ({snapshot.data_bytes / 2**20:.0f} MiB tables, "
            f"{tree_bytes(snapshot.path) / 2**20:.0f} MiB datadir)")
    _, built = ensure_base(snapshot.path, say, work)
    print(f"{size}: VM base image " + (f"built now in {built:.2f} s (once per snapshot)" if built is not None
                                        else "already cached (built once per snapshot)"))
    times = measure(snapshot, repeats, work, docker)
    out = []
    for path in ("docker volume", "vm"):
        old, new = [median(v) for k, v in times.items() if k.startswith(path + " ")]
        for name, values in times.items():
            if name.startswith(path + " "):
                out.append([size, name, f"{median(values):.3f}", ", ".join(f"{x:.3f}" for x in values), ""])
        out[-1][-1] = f"{old / new:.1f}x" if new > 0 else "-"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1x10000,4x100000", help="tables x rows, comma-separated")
    parser.add_argument("--repeats", type=int, default=5)
    args = parse_args(parser, {"sizes": "1x1000", "repeats": 1})
    shapes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    if args.repeats < 1 or not shapes or not all(s.count("x") == 1 and s.replace("x", "").isdigit() for s in shapes):
        parser.error("--sizes: tables x rows like 1x10000,4x100000; --repeats >= 1")
    work = Path(tempfile.mkdtemp(prefix="lb-bench-restore-"))
    docker = DockerPaths(work)
    rows: list[list[str]] = []
    try:
        for shape in shapes:
            rows += one_size(shape, args.repeats, work, docker)
    finally:
        docker.close()
        shutil.rmtree(work, ignore_errors=True)
    print(table(["size", "path", "median s", "all", "old/new"], rows))


if __name__ == "__main__":
    run_main(main)
