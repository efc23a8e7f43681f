"""Datasets: prepare once into a datadir snapshot keyed by its inputs, restore a fresh copy for each run.

The snapshot is made by a private host mariadbd (the same server package the local images install), shut
down cleanly, and kept under the cache folder as `datasets/<key>/datadir` with a `meta.json` beside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerbench.backends.base import ClientRunner, Endpoint, HostClient, ServerSpec
from layerbench.campaign import HostVariant, Workload
from layerbench.errors import RunFailed
from layerbench.secrets import generate_password, write_private
from layerbench.server.datadir import query
from layerbench.sysbench import cleanup_command, config_file_text, prepare_command, test_script
from layerbench.workdirs import cache_dir, work_root  # noqa: F401 - work_root: still importable from here


def datasets_dir() -> Path:
    """Where dataset snapshots live: LAYERBENCH_DATASET_DIR, else <cache>/datasets."""
    override = os.environ.get("LAYERBENCH_DATASET_DIR")
    return Path(override) if override else cache_dir() / "datasets"


def server_version(binary: str = "mariadbd") -> str:
    path = shutil.which(binary) or shutil.which(binary, path="/usr/sbin:/sbin")
    if not path:
        return "unknown"
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=False).stdout
    return out.strip()


@dataclass(frozen=True)
class Snapshot:
    key: str
    path: Path  # the datadir
    meta: dict[str, Any]

    @property
    def data_bytes(self) -> int:
        return int(self.meta.get("data_bytes", 0))


def dataset_key(workload: Workload, version: str, page_size: str | None) -> tuple[str, dict[str, Any]]:
    """A content key from everything that changes the prepared bytes."""
    script = Path(test_script(workload))
    inputs = {
        "server": version, "page_size": page_size or "default", "tables": workload.tables,
        "table_size": workload.table_size, "options": {k: str(v) for k, v in sorted(workload.options.items())},
        "script": script.name if not workload.is_lua_path else hashlib.sha256(script.read_bytes()).hexdigest(),
        "format": 1,
    }
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    return f"{workload.tables}x{workload.table_size}-{digest}", inputs


class SnapshotCorrupt(RunFailed):
    """A cached snapshot no longer holds what was prepared; it has been removed and will be rebuilt."""


def manifest(datadir: Path) -> dict[str, int]:
    """Every file of a datadir with its size: a cheap check that nobody changed the snapshot."""
    return {str(f.relative_to(datadir)): f.stat().st_size for f in sorted(datadir.rglob("*")) if f.is_file()}


def remove_snapshot(key: str) -> None:
    shutil.rmtree(datasets_dir() / key, ignore_errors=True)


def find_snapshot(key: str) -> Snapshot | None:
    """The cached snapshot, or None when it is missing, unfinished, or its files changed (then it is removed)."""
    folder = datasets_dir() / key
    meta_file = folder / "meta.json"
    if not (meta_file.exists() and (folder / "datadir").is_dir()):
        return None
    try:
        meta = json.loads(meta_file.read_text())
    except ValueError:
        meta = {}
    if meta.get("files") != manifest(folder / "datadir"):
        remove_snapshot(key)
        return None
    return Snapshot(key, folder / "datadir", meta)


def data_size(datadir: Path, database: str = "sbtest") -> int:
    return sum(f.stat().st_size for f in (datadir / database).glob("*.ibd"))


def ensure_snapshot(
    workload: Workload, page_size: str | None, *, log_dir: Path, on_line: Callable[[str], None] | None = None,
) -> Snapshot:
    """The cached snapshot for this dataset, prepared now if it is missing."""
    version = server_version()
    key, inputs = dataset_key(workload, version, page_size)
    found = find_snapshot(key)
    if found is not None:
        return found
    return build_snapshot(workload, key, inputs, page_size, log_dir=log_dir, on_line=on_line)


def build_snapshot(
    workload: Workload, key: str, inputs: dict[str, Any], page_size: str | None, *, log_dir: Path,
    on_line: Callable[[str], None] | None,
) -> Snapshot:
    from layerbench import owners
    from layerbench.critical import signals_deferred

    target = datasets_dir() / key
    target.parent.mkdir(parents=True, exist_ok=True)
    folders: list[Path] = []
    owner = f"prepare-{key}-{os.getpid()}"
    try:
        with signals_deferred():  # the build's folders exist only with the note that lets `clean` remove them
            folders.append(Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=target.parent)))
            folders.append(Path(tempfile.mkdtemp(prefix="lb-prepare-")))
            owners.record(owner, pid=None, marker="", paths=folders)
        return _build_in(workload, key, inputs, page_size, *folders, log_dir=log_dir, on_line=on_line)
    finally:
        with signals_deferred():
            for folder in folders:
                shutil.rmtree(folder, ignore_errors=True)
            owners.forget(owner)


def _build_in(
    workload: Workload, key: str, inputs: dict[str, Any], page_size: str | None, scratch: Path, private: Path, *,
    log_dir: Path, on_line: Callable[[str], None] | None,
) -> Snapshot:
    from layerbench.backends.host import HostBackend

    target = datasets_dir() / key
    variant = HostVariant(name="prepare", backend="host")
    backend = HostBackend(variant)
    config: dict[str, Any] = {"innodb_buffer_pool_size": "1G", "innodb_flush_log_at_trx_commit": 2}
    if page_size:
        config["innodb_page_size"] = page_size
    spec = ServerSpec("prepare", f"prepare-{key}", log_dir, private, scratch, config=config,
                      password=generate_password())
    log_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        endpoint = backend.up(spec)
        prepare_tables(workload, endpoint, private, log_dir, on_line)
        counts = row_counts(endpoint, workload)
        checksums = table_checksums(endpoint, workload)
        datadir = scratch / "datadirs" / spec.label
        backend.process.stop(timeout=300) if backend.process else None  # clean shutdown: a consistent copy
        backend.process = None
        meta = {"key": key, "inputs": inputs, "rows": counts, "checksums": checksums,
                "data_bytes": data_size(datadir), "prepare_seconds": round(time.monotonic() - started, 2),
                "created_at": time.time(), "files": manifest(datadir)}
        (scratch / "meta.json").write_text(json.dumps(meta, indent=2))
        datadir.rename(scratch / "datadir")
        shutil.rmtree(scratch / "datadirs", ignore_errors=True)
        with contextlib.suppress(OSError):
            scratch.rename(target)
        return find_snapshot(key) or Snapshot(key, scratch / "datadir", meta)
    finally:
        backend.down()


class PrepareProgress:
    """Turns sysbench prepare's output into "k of n tables" messages: a table is done when its secondary index
    is built (the last step per table). At most about ten messages, whatever the table count."""

    DONE = re.compile(r"^Creating a secondary index on '(\w+)'")

    def __init__(self, tables: int, say: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        self.tables, self.say, self.clock = tables, say, clock
        self.done = 0
        self.step = max(1, math.ceil(tables / 10))
        self.started = clock()

    def __call__(self, line: str) -> None:
        if not self.DONE.match(line.strip()):
            return
        self.done += 1
        if self.done % self.step and self.done != self.tables:
            return
        elapsed = self.clock() - self.started
        left = elapsed / self.done * (self.tables - self.done)
        tail = f", about {left:.0f} s left" if self.done < self.tables else ""
        self.say(f"prepare: {self.done}/{self.tables} tables in {elapsed:.0f} s{tail}")


def prepare_tables(workload: Workload, endpoint: Endpoint, private: Path, log_dir: Path,
                   on_line: Callable[[str], None] | None, *, cleanup_first: bool = False,
                   client: ClientRunner | None = None) -> None:
    """sysbench prepare with one thread per table, up to the CPU count (after `cleanup` when asked: a server
    that keeps its tables between runs, as published studies reset their data). `client` is where sysbench
    runs (a Job in the cluster for a Kubernetes variant with client: job); this host by default."""
    client = client or HostClient()
    cfg = write_private(private / "sysbench.cfg", config_file_text(endpoint))
    files = {cfg.name: cfg.read_text(encoding="utf-8")}
    if cleanup_first:
        gone = client.run_client(cleanup_command(workload, cfg), files, log_path=log_dir / "cleanup.log",
                                 secrets=[endpoint.password], timeout=3600)
        if gone.returncode != 0:
            raise RunFailed(f"sysbench cleanup failed (exit {gone.returncode}); see cleanup.log")
    threads = max(1, min(workload.tables, os.cpu_count() or 1))
    done = client.run_client(prepare_command(workload, cfg, threads), files, log_path=log_dir / "prepare.log",
                             secrets=[endpoint.password], on_line=on_line, timeout=24 * 3600)
    if done.returncode != 0:
        cause = next((ln for ln in reversed(done.output.splitlines()) if "FATAL" in ln), "see prepare.log")
        raise RunFailed(f"sysbench prepare failed (exit {done.returncode}): {cause.strip()}")


def row_counts(endpoint: Endpoint, workload: Workload) -> dict[str, int]:
    """Rows per sbtest table (cheap: the highest id, the tables being filled 1..table_size)."""
    counts = {}
    for i in range(1, workload.tables + 1):
        rows = query(endpoint, f"SELECT COUNT(*) FROM sbtest{i}", database=endpoint.database)
        counts[f"sbtest{i}"] = int(rows[0][0])
    return counts


def existing_tables(endpoint: Endpoint, workload: Workload) -> dict[str, int]:
    """With `reset: none`: which of the workload's tables the server holds, with InnoDB's row estimate (cheap,
    approximate; recorded so a report can tell what data a run worked on)."""
    rows = query(endpoint, "SELECT TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                 "DATABASE() AND TABLE_NAME REGEXP '^sbtest[0-9]+$'", database=endpoint.database)
    wanted = {f"sbtest{i}" for i in range(1, workload.tables + 1)}
    return {str(name): int(count or 0) for name, count in rows if name in wanted}


CHECKSUM_ALL_ROWS = 2_000_000


def checked_tables(workload: Workload) -> list[str]:
    """All tables when the dataset is small; the first one (a sample) when CHECKSUM TABLE would be slow."""
    count = workload.tables if workload.tables * workload.table_size <= CHECKSUM_ALL_ROWS else 1
    return [f"sbtest{i}" for i in range(1, count + 1)]


def table_checksums(endpoint: Endpoint, workload: Workload) -> dict[str, int]:
    tables = ", ".join(checked_tables(workload))
    rows = query(endpoint, f"CHECKSUM TABLE {tables}", database=endpoint.database)
    return {str(name).split(".")[-1]: int(value) for name, value in rows}


def verify_data(endpoint: Endpoint, snapshot: Snapshot, workload: Workload) -> dict[str, Any]:
    """At the start of a run: the restored tables hold exactly the prepared bytes (CHECKSUM TABLE)."""
    got = table_checksums(endpoint, workload)
    expected = {k: v for k, v in snapshot.meta.get("checksums", {}).items() if k in got}
    if got != expected:
        remove_snapshot(snapshot.key)
        raise SnapshotCorrupt(f"dataset {snapshot.key}: restored tables do not match the snapshot's checksums; "
                              "the snapshot was removed and is rebuilt for the next run")
    return {"verified": "checksum", "tables_checked": len(got), "checksum": sum(got.values()) % 2**32}


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def list_snapshots() -> list[tuple[str, int, dict[str, Any]]]:
    """(key, bytes on disk, meta) of every cached dataset snapshot."""
    root = datasets_dir()
    out = []
    for folder in sorted(root.iterdir()) if root.exists() else []:
        meta_file = folder / "meta.json"
        meta = json.loads(meta_file.read_text()) if meta_file.exists() else {"incomplete": True}
        out.append((folder.name, folder_size(folder), meta))
    return out


def clear_snapshots() -> tuple[int, int]:
    """Remove every cached snapshot (and unfinished builds); returns (count, bytes freed)."""
    items = list_snapshots()
    for key, _, _ in items:
        shutil.rmtree(datasets_dir() / key, ignore_errors=True)
    return len(items), sum(size for _, size, _ in items)
