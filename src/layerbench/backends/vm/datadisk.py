"""The VM's data disk: a raw ext4 image of a dataset snapshot, built once per snapshot and kept in the snapshot's
own folder (so `layerbench datasets rm` removes it with the snapshot and the disk preflight's folder sizes count
it), and per run a qcow2 copy-on-write overlay of it (`qemu-img create -b base`): a run's restore takes the
same time whatever the dataset's size, and the base is never written (the guest writes into the overlay,
which down() removes with the run's folder). A half-built base is a `.part` file noted in an owner record
before it exists, removed on any error or signal, and by `layerbench clean` after a SIGKILL."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from layerbench.errors import RunFailed
from layerbench.hosts import owners
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.procs import ManagedProcess, run, start
from layerbench.hosts.workdirs import folder_size
from layerbench.server.restore import FACTS_FILE
from layerbench.server.vmimage import ext4_command
from layerbench.vocabulary.sizes import byte_text

RECIPE = 1  # bump when the base's mkfs options change: the name changes, old bases are never reused
BASE_NAME = f"vm-data-{RECIPE}.img"
METHOD = "copy-on-write overlay of a prepared base image"
PROGRESS_EVERY = 5.0  # seconds between progress lines while a base is built

Say = Callable[[str], None]


def base_path(snapshot: Path) -> Path:
    """Where the base image of the snapshot datadir `snapshot` lives (in the snapshot's folder)."""
    return snapshot.parent / BASE_NAME


def ensure_base(snapshot: Path, say: Say, log_dir: Path) -> tuple[Path, float | None]:
    """The snapshot's base image, built now when missing; (path, seconds the build took or None if cached)."""
    base = base_path(snapshot)
    if base.exists():
        return base, None
    token = secrets.token_hex(4)
    part, label = base.with_name(f".{BASE_NAME}.part-{token}"), f"lbvmdata-{token}"
    with signals_deferred():  # noted before it exists: `clean` removes a half-built base after a SIGKILL
        owners.record(label, pid=None, marker="", paths=[part])
    started = time.monotonic()
    try:
        build_base(snapshot, part, label, say, log_dir)
        part.replace(base)  # atomic: a base either exists whole or not at all
    finally:
        part.unlink(missing_ok=True)
        owners.forget(label)
    seconds = time.monotonic() - started
    say(f"VM data disk of dataset {snapshot.parent.name} ready in {seconds:.1f} s (kept for later runs)")
    return base, seconds


def build_base(snapshot: Path, part: Path, label: str, say: Say, log_dir: Path) -> None:
    size = folder_size(snapshot)
    say(f"building the VM data disk of dataset {snapshot.parent.name} ({byte_text(size)}), once per snapshot")
    cmd = ext4_command(str(snapshot), size, str(part), extra_mib=max(512, size // 2**20), label="data")
    proc = start("mkfs.ext4", cmd, log_path=log_dir / "vm-data-mkfs.log")
    with signals_deferred():  # `clean` stops this mkfs too (its command line names the .part file)
        owners.record(label, pid=proc.pid, marker=str(part), paths=[part])
    try:
        wait_with_progress(proc, part, size, say)
    finally:
        proc.stop(timeout=5)
    if proc.popen.returncode != 0:
        raise RunFailed(f"mkfs.ext4 of the VM data disk failed (exit {proc.popen.returncode}): "
                        f"{proc.tail(3).strip()[-300:]}")


def wait_with_progress(proc: ManagedProcess, part: Path, size: int, say: Say) -> None:
    """Until mkfs ends; a line every few seconds with the bytes written so far (the image's allocated blocks)."""
    last = time.monotonic()
    while proc.alive():
        time.sleep(0.2)
        if time.monotonic() - last >= PROGRESS_EVERY and part.exists():
            last = time.monotonic()
            written = part.stat().st_blocks * 512
            say(f"  VM data disk: {byte_text(written, 'MiB', '.0f')} of about {byte_text(size, 'MiB', '.0f')} written")


def make_overlay(base: Path, overlay: Path) -> float:
    """A qcow2 overlay of the raw base (the base is only read); returns the seconds it took."""
    started = time.monotonic()
    done = run("qemu-img", ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(base.resolve()),
                            str(overlay)], timeout=60)
    if done.returncode != 0:
        raise RunFailed(f"qemu-img create of the data overlay failed: {done.output.strip()[-200:]}")
    return time.monotonic() - started


def write_restore_facts(run_dir: Path, snapshot: Path, overlay_seconds: float, build_seconds: float | None) -> None:
    """The run's restore.json (server/restore.py's format, read into the run's reset record)."""
    files = [f for f in snapshot.rglob("*") if f.is_file() and not f.is_symlink()]
    facts = {"method": METHOD, "files": len(files), "bytes": folder_size(snapshot),
             "seconds": round(overlay_seconds, 3),
             "verified": "base built from the snapshot's files after their manifest check; overlay: nothing copied",
             "base_image": str(base_path(snapshot)), "base_built_seconds":
                 None if build_seconds is None else round(build_seconds, 3), "problems": []}
    (run_dir / FACTS_FILE).write_text(json.dumps(facts))
