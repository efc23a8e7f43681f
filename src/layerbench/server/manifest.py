"""The file-level manifest of a dataset snapshot: each file's size, a full hash, a digest of sampled pages and
the file's stat times, written once when the snapshot is built, and what each check against it proves.

- full hash (xxh3-128 of every byte): checked while a restore copies the file, so a copied run starts on
  exactly the prepared bytes, whatever changed where;
- sampled digest (xxh3-64 of SAMPLES pages at fixed offsets): checked on a copy-on-write clone, whose bytes are
  the snapshot's by the filesystem's own guarantee; it proves the right files with the right size and these
  pages, not every byte;
- size + mtime + ctime of the snapshot's files: a cheap check that nobody wrote to the snapshot since its last
  full hash (a write changes ctime, which no user can set back); a mismatch makes the file hashed again.
A leaf module (the manifest file's parsing accepts nothing it did not write: hostile input is an error).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import xxhash

from layerbench.errors import RunFailed

VERSION = 2
PAGE = 16384
SAMPLES = 32
BLOCK = 8 << 20
# Not part of a snapshot: the buffer-pool dump would make every restored server load the pages the prepare
# touched last (so no run would start cold), and pid/log files belong to the server that made the snapshot.
# Not part of a snapshot: a server's run-time files, and PostgreSQL's configuration, which layerbench writes anew
# for each run (server/postgresql.py).
EXCLUDED = frozenset({"ib_buffer_pool", "mysqld.pid", "aria_log_control.lock", "postmaster.pid", "postmaster.opts",
                      "postgresql.conf", "pg_hba.conf"})
MANIFEST_FILE = "manifest.json"


class SnapshotCorrupt(RunFailed):
    """A cached snapshot no longer holds what was prepared; it has been removed and will be rebuilt."""


@dataclass(frozen=True)
class FileEntry:
    size: int
    xxh3_128: str
    sample: str
    mtime_ns: int
    ctime_ns: int

    def same_stat(self, st: os.stat_result) -> bool:
        return (st.st_size, st.st_mtime_ns, st.st_ctime_ns) == (self.size, self.mtime_ns, self.ctime_ns)


@dataclass(frozen=True)
class Manifest:
    files: dict[str, FileEntry]

    @property
    def total_bytes(self) -> int:
        return sum(e.size for e in self.files.values())

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "page": PAGE, "samples": SAMPLES, "hash": "xxh3_128",
                "files": {name: asdict(entry) for name, entry in sorted(self.files.items())}}

    @classmethod
    def from_json(cls, data: Any) -> Manifest:
        """Parse what to_json wrote; anything else (another version, a wrong type, an unsafe path) is ValueError."""
        if not isinstance(data, dict) or data.get("version") != VERSION or data.get("page") != PAGE or data.get(
                "samples") != SAMPLES or not isinstance(data.get("files"), dict):
            raise ValueError("not a layerbench snapshot manifest of version 2")
        return cls({safe_name(name): entry_of(value) for name, value in data["files"].items()})


def safe_name(name: Any) -> str:
    """A relative path inside the datadir: no absolute path, no `..`, no empty or control characters."""
    if not isinstance(name, str) or not name or name.startswith("/") or any(ord(c) < 32 for c in name) or any(
            part in ("", ".", "..") for part in name.split("/")):
        raise ValueError(f"unsafe file name in manifest: {name!r}")
    return name


def entry_of(value: Any) -> FileEntry:
    fields = ("size", "xxh3_128", "sample", "mtime_ns", "ctime_ns")
    if not isinstance(value, dict) or set(value) != set(fields):
        raise ValueError("a manifest entry needs exactly size, xxh3_128, sample, mtime_ns, ctime_ns")
    ints = [value[k] for k in ("size", "mtime_ns", "ctime_ns")]
    if any(type(v) is not int or v < 0 for v in ints):
        raise ValueError("size, mtime_ns and ctime_ns are non-negative integers")
    if not is_hex(value["xxh3_128"], 32) or not is_hex(value["sample"], 16):
        raise ValueError("xxh3_128 is 32 and sample 16 lower-case hex digits")
    return FileEntry(**value)


def is_hex(text: Any, length: int) -> bool:
    return isinstance(text, str) and len(text) == length and all(c in "0123456789abcdef" for c in text)


def data_files(datadir: Path) -> list[Path]:
    """The regular files of a datadir that a snapshot carries, sorted."""
    return sorted(f for f in datadir.rglob("*") if f.is_file() and not f.is_symlink() and f.name not in EXCLUDED)


def sample_offsets(size: int) -> list[int]:
    """SAMPLES page offsets spread evenly over the file, first and last page included (all pages when fewer)."""
    pages = max(1, -(-size // PAGE))
    if pages <= SAMPLES:
        return [i * PAGE for i in range(pages)]
    return sorted({round(i * (pages - 1) / (SAMPLES - 1)) * PAGE for i in range(SAMPLES)})


def sample_digest(fd: int, size: int) -> str:
    digest = xxhash.xxh3_64()
    for offset in sample_offsets(size):
        digest.update(os.pread(fd, PAGE, offset))
    return digest.hexdigest()


def hash_file(path: Path) -> tuple[str, str]:
    """(full xxh3-128, sampled digest) of one file; its pages are dropped from the page cache afterwards."""
    fd = os.open(path, os.O_RDONLY)
    try:
        full = xxhash.xxh3_128()
        while block := os.read(fd, BLOCK):
            full.update(block)
        size = os.fstat(fd).st_size
        sample = sample_digest(fd, size)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return full.hexdigest(), sample
    finally:
        os.close(fd)


def entry_for(path: Path) -> FileEntry:
    full, sample = hash_file(path)
    st = path.stat()
    return FileEntry(st.st_size, full, sample, st.st_mtime_ns, st.st_ctime_ns)


def build_manifest(datadir: Path) -> Manifest:
    return Manifest({str(f.relative_to(datadir)): entry_for(f) for f in data_files(datadir)})


def write_manifest(folder: Path, manifest: Manifest) -> None:
    tmp = folder / f".{MANIFEST_FILE}.tmp"
    tmp.write_text(json.dumps(manifest.to_json(), indent=1))
    tmp.replace(folder / MANIFEST_FILE)


def read_manifest(folder: Path) -> Manifest | None:
    """The manifest beside a snapshot's datadir, or None when missing or not one this version wrote."""
    try:
        return Manifest.from_json(json.loads((folder / MANIFEST_FILE).read_text()))
    except (OSError, ValueError):
        return None


def stale_files(datadir: Path, manifest: Manifest) -> tuple[list[str], list[str]]:
    """(names whose stat no longer matches, names missing or extra): the cheap check of a snapshot."""
    present = {str(f.relative_to(datadir)): f for f in data_files(datadir)}
    odd = sorted(set(present) ^ set(manifest.files))
    changed = [n for n, e in manifest.files.items() if n in present and not e.same_stat(present[n].stat())]
    return changed, odd


def check_snapshot(datadir: Path, manifest: Manifest) -> tuple[Manifest, list[str]]:
    """Stat every snapshot file; hash again those whose stat changed. Returns the manifest (stat refreshed where
    the bytes are unchanged) and the problems found (empty: the snapshot holds the manifest's bytes)."""
    changed, odd = stale_files(datadir, manifest)
    problems = [f"{name}: missing or not in the manifest" for name in odd]
    files = dict(manifest.files)
    for name in changed:
        fresh = entry_for(datadir / name)
        old = files[name]
        if (fresh.size, fresh.xxh3_128, fresh.sample) != (old.size, old.xxh3_128, old.sample):
            problems.append(f"{name}: its bytes changed since the snapshot was built")
        files[name] = fresh
    return Manifest(files), problems
