"""The dataset snapshot cache: the key of a dataset, finding, listing and removing cached snapshots.

A snapshot is the folder `<datasets dir>/<key>/` with `datadir/` (a cleanly shut down datadir), `meta.json`
(inputs, row counts, CHECKSUM TABLE values, size, prepare time) and `manifest.json` (server/manifest.py).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layerbench.hosts.workdirs import datasets_dir, folder_size
from layerbench.server.manifest import build_manifest, check_snapshot, read_manifest, write_manifest
from layerbench.sysbench.command import test_script
from layerbench.sysbench.custom_script import dataset_flags, script_digest
from layerbench.versions import version_output

if TYPE_CHECKING:  # type hints only: campaign/ and backends/ import server/
    from layerbench.campaign.workload import Workload

VERSION_TIMEOUT = 30.0  # the server's --version, asked once per plan and build


def server_version(binary: str = "mariadbd") -> str:
    """The server's `--version` line (a dataset's identity): TimedOut rather than a guess when it does not answer."""
    path = shutil.which(binary) or shutil.which(binary, path="/usr/sbin:/sbin")
    if not path:
        return "unknown"
    return version_output([path], timeout=VERSION_TIMEOUT).stdout.strip()


@dataclass(frozen=True)
class Snapshot:
    key: str
    path: Path  # the datadir (on `host` when that is set)
    meta: dict[str, Any]
    host: str | None = None  # the ssh: host that prepared and keeps it (its own server's); None: this machine

    @property
    def data_bytes(self) -> int:
        return int(self.meta.get("data_bytes", 0))

    @property
    def folder(self) -> Path:
        return self.path.parent


def dataset_key(workload: Workload, version: str, page_size: str | None) -> tuple[str, dict[str, Any]]:
    """A content key from everything that changes the prepared bytes. A script of the user's: its code (and its
    folder's modules), the dataset flags it gets and its options; not the workload's tables/table_size when
    it does not get them."""
    if workload.is_lua_path:
        return script_dataset_key(workload, version, page_size)
    if workload.is_pgbench:
        return pgbench_dataset_key(workload, version)
    inputs = {
        "server": version, "page_size": page_size or "default", "tables": workload.tables,
        "table_size": workload.table_size, "options": {k: str(v) for k, v in sorted(workload.options.items())},
        "script": Path(test_script(workload)).name, "format": 1,
    }
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    return f"{workload.tables}x{workload.table_size}-{digest}", inputs


def pgbench_dataset_key(workload: Workload, version: str) -> tuple[str, dict[str, Any]]:
    """pgbench's dataset: what `pgbench -i -s SCALE` makes in this server version (pgbench/dataset.py)."""
    inputs = {"server": version, "tool": "pgbench", "scale": workload.pgbench_scale, "format": 3}
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    return f"pgbench-s{workload.pgbench_scale}-{digest}", inputs


def script_dataset_key(workload: Workload, version: str, page_size: str | None) -> tuple[str, dict[str, Any]]:
    inputs = {
        "server": version, "page_size": page_size or "default", "script": script_digest(workload),
        "dataset_flags": {flag: getattr(workload, flag) for flag in dataset_flags(workload)},
        "options": {k: str(v) for k, v in sorted(workload.options.items())}, "format": 2,
    }
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    return f"lua-{digest}", inputs


def remove_snapshot(key: str) -> None:
    shutil.rmtree(datasets_dir() / key, ignore_errors=True)


def snapshot_problems(folder: Path) -> list[str]:
    """The cheap check of a cached snapshot against its manifest (stat of every file; a file whose stat changed
    is hashed again). A snapshot written before manifests existed gets its manifest now (read once)."""
    datadir = folder / "datadir"
    manifest = read_manifest(folder)
    if manifest is None:
        (datadir / "ib_buffer_pool").unlink(missing_ok=True)  # never restore a warm buffer-pool dump
        write_manifest(folder, build_manifest(datadir))
        return []
    fresh, problems = check_snapshot(datadir, manifest)
    if not problems and fresh != manifest:
        write_manifest(folder, fresh)
    return problems


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
    if not isinstance(meta, dict) or snapshot_problems(folder):
        remove_snapshot(key)
        return None
    return Snapshot(key, folder / "datadir", meta)


def list_snapshots() -> list[tuple[str, int, dict[str, Any]]]:
    """(key, bytes on disk, meta) of every cached dataset snapshot (and of unfinished builds)."""
    root = datasets_dir()
    out = []
    for folder in sorted(root.iterdir()) if root.exists() else []:
        if not folder.is_dir() or folder.name == ".locks":
            continue
        try:  # a build may finish (or be removed) while this lists it
            meta = json.loads((folder / "meta.json").read_text())
        except FileNotFoundError:
            meta = {"incomplete": True}
        out.append((folder.name, folder_size(folder), meta))
    return out


def clear_snapshots() -> tuple[int, int]:
    """Remove every cached snapshot (and unfinished builds); returns (count, bytes freed)."""
    items = list_snapshots()
    for key, _, _ in items:
        shutil.rmtree(datasets_dir() / key, ignore_errors=True)
    return len(items), sum(size for _, size, _ in items)


def prepare_rates() -> list[float]:
    """Rows per second of the snapshots this machine has prepared (large enough to say something)."""
    rates = []
    for _, _, meta in list_snapshots():
        rows, seconds = sum((meta.get("rows") or {}).values()), meta.get("prepare_seconds") or 0
        if rows >= 100_000 and seconds > 0:
            rates.append(rows / seconds)
    return rates
