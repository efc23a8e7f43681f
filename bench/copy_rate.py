"""The restore's copy rate against the disk's own: how close the hashed O_DIRECT copy of a big file comes to what
the disk can write, where a snapshot cannot be cloned (issue 33: goal >= 0.8 of the disk's sequential write).

Side by side in one invocation, on one file (random bytes, default 2 GiB) in a folder of its own, in alternating
rounds (the order reversed every other round), each a rate in MiB/s and a fraction of the disk's write rate
measured in the same rounds:
  1. the restore's copy (server/restore.py copy_direct: pipelined, a writer thread beside the reading and
     hashing one, 3 blocks of 16 MiB in flight), and the same with 8 and 32 MiB blocks;
  2. the serial copy it replaced (each 8 MiB block read, hashed, then written; kept here to compare);
  3. the disk's own sequential write (bench/scale.py's: O_DIRECT, 8 MiB blocks, fsync);
  4. for context: `dd` with O_DIRECT on both sides, and `cp` (page cache, then synced);
  5. what bounds a copy on this disk: its sequential read alone (O_DIRECT), and its sequential write while the
     same file is read at once (as a copy must).
    .venv/bin/python bench/copy_rate.py [--size-mib 2048] [--rounds 3] [--folder DIR] [--quick]
Every file it makes is removed at the end, also after Ctrl-C.
"""

from __future__ import annotations

import argparse
import mmap
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import xxhash
from common import median, parse_args, run_main, say, table
from scale import disk_write_seconds

from layerbench.server.manifest import BLOCK
from layerbench.server.restore import copy_direct

NOW = "restore copy now (pipelined O_DIRECT, hashed, 3 x 16 MiB)"
BEFORE = "restore copy before (serial O_DIRECT, hashed, 8 MiB)"
DISK = "disk sequential write (bench/scale.py: O_DIRECT, 8 MiB, fsync)"


def serial_copy(source: Path, target: Path) -> str:
    """The restore's copy before the pipeline (2026-11-26): one block read, hashed, then written, in turn."""
    digest = xxhash.xxh3_128()
    buffer = mmap.mmap(-1, BLOCK)
    src = os.open(source, os.O_RDONLY | os.O_DIRECT)
    dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
    try:
        while (n := os.readv(src, [buffer])) > 0:
            with memoryview(buffer)[:n] as block:
                digest.update(block)
                os.write(dst, block)
        os.fdatasync(dst)
    finally:
        os.close(dst)
        os.close(src)
        buffer.close()
    return digest.hexdigest()


def make_source(path: Path, size: int) -> str:
    """A file of `size` random bytes written with O_DIRECT (none of it in the page cache); its xxh3-128."""
    digest, buffer = xxhash.xxh3_128(), mmap.mmap(-1, BLOCK)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
    try:
        for _ in range(size // BLOCK):
            buffer[:] = os.urandom(BLOCK)
            digest.update(buffer)
            os.write(fd, buffer)
        os.fsync(fd)
    finally:
        os.close(fd)
        buffer.close()
    return digest.hexdigest()


def dd_copy(source: Path, target: Path) -> None:
    subprocess.run(["dd", f"if={source}", f"of={target}", "bs=8M", "iflag=direct", "oflag=direct",
                    "conv=fdatasync", "status=none"], check=True)


def cp_copy(source: Path, target: Path) -> None:
    drop_cache(source)
    subprocess.run(["cp", str(source), str(target)], check=True)
    subprocess.run(["sync", "--data", str(target)], check=True)
    drop_cache(target)


def drop_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_alone(source: Path) -> None:
    subprocess.run(["dd", f"if={source}", "of=/dev/null", "bs=8M", "iflag=direct", "status=none"], check=True)


def write_while_reading(source: Path, folder: Path) -> float:
    """Seconds of the disk's sequential write of the file's size while a thread reads the file over and over (both
    O_DIRECT, 8 MiB blocks), as a copy reads while it writes."""
    done = threading.Event()
    reader = threading.Thread(target=read_until, args=(source, done), name="lb-bench-reader")
    reader.start()
    try:
        return disk_write_seconds(folder, source.stat().st_size)
    finally:
        done.set()
        reader.join()


def read_until(source: Path, done: threading.Event) -> None:
    buffer, fd = mmap.mmap(-1, BLOCK), os.open(source, os.O_RDONLY | os.O_DIRECT)
    try:
        while not done.is_set():
            if os.readv(fd, [buffer]) == 0:
                os.lseek(fd, 0, os.SEEK_SET)
    finally:
        os.close(fd)
        buffer.close()


def measures(source: Path, folder: Path, digest: str) -> dict[str, Callable[[], float]]:
    """Each thing measured: a function returning its seconds (for the file's size)."""
    target, size = folder / "target", source.stat().st_size

    def copy(how: Callable[[Path, Path], object], check: bool = True) -> Callable[[], float]:
        def timed() -> float:
            started = time.monotonic()
            result = how(source, target)
            seconds = time.monotonic() - started
            if check and result != digest:
                raise SystemExit(f"{how.__name__}: the copy's xxh3-128 {result} is not the file's {digest}")
            target.unlink()
            return seconds
        return timed
    return {
        NOW: copy(copy_direct),
        "the same, 3 x 8 MiB blocks": copy(lambda s, t: copy_direct(s, t, block=8 << 20)),
        "the same, 3 x 32 MiB blocks": copy(lambda s, t: copy_direct(s, t, block=32 << 20)),
        BEFORE: copy(serial_copy),
        DISK: lambda: disk_write_seconds(folder, size),
        "dd copy (O_DIRECT both sides, 8 MiB, fdatasync; no hash)": copy(dd_copy, check=False),
        "cp copy (page cache, then sync; no hash)": copy(cp_copy, check=False),
        "disk sequential read alone (dd, O_DIRECT)": lambda: timed_call(lambda: read_alone(source)),
        "disk sequential write while the file is read": lambda: write_while_reading(source, folder),
    }


def timed_call(call: Callable[[], None]) -> float:
    started = time.monotonic()
    call()
    return time.monotonic() - started


def rounds(steps: dict[str, Callable[[], float]], count: int, size: int) -> dict[str, list[float]]:
    """Each step's rate (bytes/s) in each round; every other round runs the steps in the reverse order."""
    rates: dict[str, list[float]] = {name: [] for name in steps}
    for n in range(count):
        for name in (list(steps) if n % 2 == 0 else list(reversed(steps))):
            rates[name].append(size / steps[name]())
        say(f"round {n + 1}/{count}: " + ", ".join(f"{r[-1] / 2**20:.0f}" for r in rates.values()) + " MiB/s")
    return rates


def report(rates: dict[str, list[float]], size: int) -> None:
    disk, now, before = (median(rates[name]) for name in (DISK, NOW, BEFORE))
    print(f"file: {size / 2**30:.2f} GiB ({size:,} bytes) of random bytes, {len(next(iter(rates.values())))} "
          f"rounds, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    print(table(["what", "median MiB/s", "all", "of disk write"], [
        [name, f"{median(r) / 2**20:.0f}", ", ".join(f"{x / 2**20:.0f}" for x in r), f"{median(r) / disk:.2f}"]
        for name, r in rates.items()]))
    print(f"restore copy / disk sequential write: now {now / disk:.2f}, before {before / disk:.2f} (goal >= 0.8); "
          f"now / before {now / before:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=2048, help="the file's size (whole 8 MiB blocks)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()),
                        help="where the bench's folder goes (on the disk to measure)")
    args = parse_args(parser, {"size_mib": 16, "rounds": 1})
    if args.size_mib < BLOCK >> 20 or args.rounds < 1:
        parser.error(f"--size-mib must be >= {BLOCK >> 20} and --rounds >= 1")
    work = Path(tempfile.mkdtemp(prefix="lb-bench-copy-rate-", dir=args.folder))
    try:
        size = args.size_mib // (BLOCK >> 20) * BLOCK
        say(f"writing a {size / 2**20:.0f} MiB file of random bytes in {work}")
        digest = make_source(work / "source", size)
        report(rounds(measures(work / "source", work, digest), args.rounds, size), size)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    run_main(main)
