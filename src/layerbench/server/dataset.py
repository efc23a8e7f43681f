"""Datasets: prepare once into a datadir snapshot keyed by its inputs, restore a fresh copy for each run.

The snapshot is made by a private host mariadbd (the same server package the local images install), shut
down cleanly, and kept under the cache folder as `datasets/<key>/datadir` with a `meta.json` beside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerbench.backends.base import Endpoint, ServerSpec
from layerbench.campaign import HostVariant, Workload
from layerbench.errors import RunFailed
from layerbench.procs import run
from layerbench.secrets import generate_password, write_private
from layerbench.server.datadir import query
from layerbench.sysbench import config_file_text, prepare_command, test_script


def cache_dir() -> Path:
    return Path(os.environ.get("LAYERBENCH_CACHE_DIR", "/var/cache/layerbench"))


def work_root() -> Path:
    return Path(os.environ.get("LAYERBENCH_WORK_DIR", "/var/tmp/layerbench"))


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


def find_snapshot(key: str) -> Snapshot | None:
    folder = cache_dir() / "datasets" / key
    meta_file = folder / "meta.json"
    if not (meta_file.exists() and (folder / "datadir").is_dir()):
        return None
    return Snapshot(key, folder / "datadir", json.loads(meta_file.read_text()))


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
    from layerbench.backends.host import HostBackend

    target = cache_dir() / "datasets" / key
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=target.parent))
    private = Path(tempfile.mkdtemp(prefix="lb-prepare-"))
    backend = HostBackend()
    config: dict[str, Any] = {"innodb_buffer_pool_size": "1G", "innodb_flush_log_at_trx_commit": 2}
    if page_size:
        config["innodb_page_size"] = page_size
    spec = ServerSpec("prepare", f"prepare-{key}", HostVariant(name="prepare", backend="host"), log_dir,
                      private, scratch, config=config, password=generate_password())
    log_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        endpoint = backend.up(spec)
        prepare_tables(workload, endpoint, private, log_dir, on_line)
        counts = row_counts(endpoint, workload)
        datadir = scratch / "datadirs" / spec.label
        backend.process.stop(timeout=300) if backend.process else None  # clean shutdown: a consistent copy
        backend.process = None
        meta = {"key": key, "inputs": inputs, "rows": counts, "data_bytes": data_size(datadir),
                "prepare_seconds": round(time.monotonic() - started, 2), "created_at": time.time()}
        (scratch / "meta.json").write_text(json.dumps(meta, indent=2))
        datadir.rename(scratch / "datadir")
        shutil.rmtree(scratch / "datadirs", ignore_errors=True)
        with contextlib.suppress(OSError):
            scratch.rename(target)
        return find_snapshot(key) or Snapshot(key, scratch / "datadir", meta)
    finally:
        backend.down()
        shutil.rmtree(private, ignore_errors=True)
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)


def prepare_tables(workload: Workload, endpoint: Endpoint, private: Path, log_dir: Path,
                   on_line: Callable[[str], None] | None) -> None:
    """sysbench prepare with one thread per table, up to the CPU count."""
    cfg = write_private(private / "sysbench.cfg", config_file_text(endpoint))
    threads = max(1, min(workload.tables, os.cpu_count() or 1))
    done = run("sysbench prepare", prepare_command(workload, cfg, threads), log_path=log_dir / "prepare.log",
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


def verify_rows(endpoint: Endpoint, snapshot: Snapshot, workload: Workload) -> dict[str, Any]:
    """Check, at the start of a run, that the restored tables hold the rows the snapshot recorded."""
    expected = snapshot.meta.get("rows", {})
    got = row_counts(endpoint, workload) if workload.tables * workload.table_size <= 2_000_000 else {}
    if got and got != expected:
        raise RunFailed(f"dataset {snapshot.key}: restored rows {got} differ from the snapshot's {expected}; "
                        "run `layerbench cache clear` and start again")
    return {"verified": bool(got), "rows": sum(got.values()) if got else None}


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def list_snapshots() -> list[tuple[str, int, dict[str, Any]]]:
    """(key, bytes on disk, meta) of every cached dataset snapshot."""
    root = cache_dir() / "datasets"
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
        shutil.rmtree(cache_dir() / "datasets" / key, ignore_errors=True)
    return len(items), sum(size for _, size, _ in items)
