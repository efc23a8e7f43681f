"""Restoring a dataset snapshot into a run's datadir: the fastest honest path the filesystem allows.

1. clone: a copy-on-write clone of each file (FICLONE, what `cp --reflink=always` does) when the snapshot and
   the datadir share an XFS (mkfs.xfs -m reflink=1) or btrfs filesystem: constant time per file, whatever its
   size; the clone's sizes and sampled pages are checked against the manifest.
2. copy: parallel copy, each file hashed while it is copied (xxh3-128, checked against the manifest: any
   changed byte fails the restore). Large files go through O_DIRECT in 16 MiB blocks (no page cache on either
   side), pipelined: a writer thread writes one block while the next is read and hashed; small ones are copied
   buffered in 8 MiB blocks, then written to disk (fdatasync) and dropped from the page cache (posix_fadvise
   DONTNEED) on both sides. So no variant finds its data in the page cache, and no run's measured window pays
   for the copy's writeback.
The path taken is written to `restore.json` in the run's folder, for the run's record.
"""

from __future__ import annotations

import errno
import fcntl
import json
import mmap
import os
import queue
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import xxhash

from layerbench.errors import RunFailed
from layerbench.server.manifest import BLOCK, EXCLUDED, Manifest, SnapshotCorrupt, read_manifest, sample_digest
from layerbench.vocabulary.sizes import byte_text

FICLONE = 0x40049409  # _IOW(0x94, 9, int) from linux/fs.h
FACTS_FILE = "restore.json"
COPY_THREADS = 2  # enough to keep a disk busy; measured on this 2-core machine: 2 beat 4
DIRECT_ALIGN = 4096
COPY_BUFFERS = 3  # blocks in flight per O_DIRECT copy: one read and hashed, one written, one spare
COPY_BLOCK = 16 << 20  # vs 8 MiB: median 1.07x in 10 paired rounds here (7 faster); 32 MiB no faster (copy_rate.py)
PROGRESS_EVERY = 5.0  # seconds between progress lines of a long restore
Say = Callable[[str], None]
NO_CLONE = {errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOTTY, errno.EBADF}


@dataclass
class RestoreFacts:
    method: str  # "clone" | "copy"
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    verified: str = "none"  # what the restore checked against the manifest
    problems: list[str] = field(default_factory=list)


def clone_file(source: Path, target: Path) -> None:
    with open(source, "rb") as src, open(target, "wb") as dst:
        fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())


def can_clone(source: Path, target_dir: Path) -> bool:
    """Try one clone of a small probe file between the two places (the only reliable test)."""
    probe = target_dir / ".lb-clone-probe"
    origin = next((f for f in sorted(source.rglob("*")) if f.is_file() and not f.is_symlink()), None)
    if origin is None:
        return False
    try:
        clone_file(origin, probe)
        return True
    except OSError as error:
        if error.errno in NO_CLONE:
            return False
        raise
    finally:
        probe.unlink(missing_ok=True)


def copy_file(source: Path, target: Path) -> str:
    """Copy one file, hashing every byte (xxh3-128): with O_DIRECT where the size allows (no page cache at all,
    little CPU), else buffered then flushed and dropped from the page cache. Returns the hash."""
    size = source.stat().st_size
    if size % DIRECT_ALIGN == 0 and size >= BLOCK:
        try:
            return copy_direct(source, target)
        except OSError as error:
            if error.errno != errno.EINVAL:  # a filesystem without O_DIRECT (tmpfs): the buffered copy below
                raise
    return copy_buffered(source, target)


def copy_direct(source: Path, target: Path, *, block: int = COPY_BLOCK, buffers: int = COPY_BUFFERS) -> str:
    """Copy with O_DIRECT, pipelined: this thread reads each block and hashes it, in order, while a writer thread
    writes the blocks read before it, so reads and writes overlap (`buffers` page-aligned blocks in flight)."""
    src = os.open(source, os.O_RDONLY | os.O_DIRECT)
    try:
        dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
        try:
            digest = pipe_blocks(src, dst, block, buffers)
            os.fdatasync(dst)
        finally:
            os.close(dst)
    finally:
        os.close(src)
    return digest


def pipe_blocks(src: int, dst: int, block: int, buffers: int) -> str:
    """Read `src` to its end into free blocks, hash each, hand it to the writer; the xxh3-128 of every byte.
    The writer's first error is raised here; the writer thread has ended whenever this returns or raises."""
    digest = xxhash.xxh3_128()
    blocks = [mmap.mmap(-1, block) for _ in range(buffers)]  # page-aligned, as O_DIRECT needs
    writer = BlockWriter(dst, blocks)
    try:
        while (n := os.readv(src, [buffer := writer.take()])) > 0:
            with memoryview(buffer)[:n] as data:
                digest.update(data)
            writer.put(buffer, n)
    finally:
        writer.stop()
        for buffer in blocks:
            buffer.close()
    writer.check()
    return digest.hexdigest()


class BlockWriter:
    """A thread writing, in order, the blocks put to it, and giving each buffer back once written. After its first
    error it writes nothing more (it still gives buffers back, so the reader never waits forever)."""

    def __init__(self, fd: int, blocks: list[mmap.mmap]) -> None:
        self.fd = fd
        self.error: Exception | None = None
        self.free: queue.SimpleQueue[mmap.mmap] = queue.SimpleQueue()
        self.full: queue.SimpleQueue[tuple[mmap.mmap, int] | None] = queue.SimpleQueue()
        for buffer in blocks:
            self.free.put(buffer)
        self.thread = threading.Thread(target=self.run, name="layerbench-copy-writer", daemon=True)
        self.thread.start()

    def run(self) -> None:
        while (item := self.full.get()) is not None:
            buffer, n = item
            if self.error is None:
                try:
                    self.write(buffer, n)
                except Exception as error:  # any error, so the reader never waits for a buffer forever
                    self.error = error
            self.free.put(buffer)

    def write(self, buffer: mmap.mmap, n: int) -> None:
        """All n bytes: a short write (a full disk, a size limit) is followed by one that raises the reason."""
        with memoryview(buffer)[:n] as data:
            done = 0
            while done < n:
                if (written := os.write(self.fd, data[done:])) == 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                done += written

    def take(self) -> mmap.mmap:
        """A free buffer to read into (waits for the writer to finish one); raises the writer's error."""
        buffer = self.free.get()
        self.check()
        return buffer

    def put(self, buffer: mmap.mmap, n: int) -> None:
        self.full.put((buffer, n))

    def stop(self) -> None:
        """Let the writer finish what it was given, then end its thread."""
        self.full.put(None)
        self.thread.join()

    def check(self) -> None:
        if self.error is not None:
            raise self.error


def copy_buffered(source: Path, target: Path) -> str:
    digest = xxhash.xxh3_128()
    src = os.open(source, os.O_RDONLY)
    try:
        os.posix_fadvise(src, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            while block := os.read(src, BLOCK):
                digest.update(block)
                os.write(dst, block)
            os.fdatasync(dst)
            os.posix_fadvise(dst, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(dst)
        os.posix_fadvise(src, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(src)
    return digest.hexdigest()


def make_tree(source: Path, target: Path) -> list[tuple[Path, Path]]:
    """The target's folders (modes and owners as the source's) and the (source, target) file pairs to fill."""
    pairs = []
    for folder, _dirs, files in os.walk(source):
        here = Path(folder)
        there = target / here.relative_to(source)
        there.mkdir(exist_ok=there == target)
        shutil.copystat(here, there)
        os.chown(there, here.stat().st_uid, here.stat().st_gid)
        pairs += [(here / f, there / f) for f in files if f not in EXCLUDED and not (here / f).is_symlink()]
    return sorted(pairs, key=lambda p: -p[0].stat().st_size)


def finish_file(source: Path, target: Path) -> None:
    st = source.stat()
    os.chown(target, st.st_uid, st.st_gid)
    os.chmod(target, st.st_mode & 0o7777)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


def check_against(manifest: Manifest | None, name: str, size: int, full: str | None, sample: str | None) -> str | None:
    """The problem with one restored file, or None when it matches the manifest (or there is none)."""
    entry = manifest.files.get(name) if manifest else None
    if manifest is None:
        return None
    if entry is None:
        return f"{name}: not in the snapshot's manifest"
    if size != entry.size:
        return f"{name}: {size} bytes, the manifest says {entry.size}"
    if full is not None and full != entry.xxh3_128:
        return f"{name}: its bytes differ from the snapshot's (xxh3-128)"
    if sample is not None and sample != entry.sample:
        return f"{name}: its sampled pages differ from the snapshot's"
    return None


def restore_one(source_root: Path, pair: tuple[Path, Path], clone: bool, manifest: Manifest | None) -> str | None:
    source, target = pair
    name = str(source.relative_to(source_root))
    if clone:
        clone_file(source, target)
        fd = os.open(target, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            sample = sample_digest(fd, size) if manifest else None
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        problem = check_against(manifest, name, size, None, sample)
    else:
        full = copy_file(source, target)
        problem = check_against(manifest, name, target.stat().st_size, full, None)
    finish_file(source, target)
    return problem


def with_progress(results: Iterator[str | None], sizes: list[int], say: Say | None) -> Iterator[str | None]:
    """The restore's results in order, saying every few seconds how many bytes are restored so far."""
    last, total, done = time.monotonic(), sum(sizes), 0
    for result, size in zip(results, sizes, strict=True):
        done += size
        if say is not None and time.monotonic() - last >= PROGRESS_EVERY:
            last = time.monotonic()
            say(f"  restore: {byte_text(done, 'MiB', '.0f')} of {byte_text(total, 'MiB', '.0f')}")
        yield result


def restore_datadir(source: Path, target: Path, *, facts_dir: Path | None = None,
                    say: Say | None = None) -> RestoreFacts:
    """Fill `target` (which must not exist) from the snapshot datadir `source`; checks each file against the
    manifest beside it (snapshot folder/manifest.json) when there is one. A mismatch raises SnapshotCorrupt."""
    started = time.monotonic()
    target.parent.mkdir(parents=True, exist_ok=True)
    pairs = make_tree(source, target)
    clone = can_clone(source, target)
    manifest = read_manifest(source.parent)
    with ThreadPoolExecutor(max_workers=1 if clone else COPY_THREADS) as pool:
        done = pool.map(lambda pair: restore_one(source, pair, clone, manifest), pairs)
        problems = [p for p in with_progress(done, [s.stat().st_size for s, _ in pairs], say) if p]
    extra = sorted(set(manifest.files) - {str(s.relative_to(source)) for s, _ in pairs}) if manifest else []
    problems += [f"{name}: in the manifest, missing from the snapshot" for name in extra]
    facts = RestoreFacts("clone" if clone else "copy", len(pairs), sum(s.stat().st_size for s, _ in pairs),
                         round(time.monotonic() - started, 3), verified_text(manifest, clone), problems)
    if facts_dir is not None:
        (facts_dir / FACTS_FILE).write_text(json.dumps(asdict(facts)))
    if problems:
        raise SnapshotCorrupt(f"dataset snapshot {source.parent.name}: {problems[0]}"
                              f"{f' (and {len(problems) - 1} more)' if len(problems) > 1 else ''}")
    return facts


def verified_text(manifest: Manifest | None, clone: bool) -> str:
    if manifest is None:
        return "none (a snapshot without a manifest)"
    return "sizes + sampled pages of every file" if clone else "xxh3-128 of every byte copied"


def read_facts(run_dir: Path) -> dict[str, object] | None:
    try:
        data = json.loads((run_dir / FACTS_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def copy_tree(source: Path, target: Path, *, facts_dir: Path | None = None, say: Say | None = None) -> RestoreFacts:
    """A backend's restore of spec.snapshot into its datadir (the name the backends know)."""
    try:
        return restore_datadir(source, target, facts_dir=facts_dir, say=say)
    except SnapshotCorrupt:
        raise
    except OSError as error:
        raise RunFailed(f"restoring {source} into {target} failed: {error}") from None
