"""A run's dataset check: the restored datadir holds the prepared bytes, proven without reading them through
the variant's own server (so its buffer pool starts as cold for every variant: docs/datasets.md).

- files (default): the snapshot's files by stat against its manifest (a changed file is hashed again), and the
  restore's own check of each copied (full hash) or cloned (size + sampled pages) file (server/restore.py);
- checksum: also CHECKSUM TABLE of every table, in a private server on this host started on a fresh restore of the
  snapshot, compared with the values taken once when the snapshot was built.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layerbench.secrets import generate_password
from layerbench.server.manifest import SnapshotCorrupt
from layerbench.server.prepare import helper_settings
from layerbench.server.private import PrivateServer
from layerbench.server.restore import read_facts
from layerbench.server.servers import resolve_server, server_from_fields
from layerbench.server.snapshot import Snapshot, remove_snapshot, snapshot_problems
from layerbench.server.spec import ServerSpec
from layerbench.server.tables import table_checksums, workload_tables

if TYPE_CHECKING:  # type hints only: campaign/ and backends/ import server/
    from layerbench.campaign.workload import Workload


def corrupt(snapshot: Snapshot, problem: str, forget: Callable[[], None] | None = None) -> SnapshotCorrupt:
    """The snapshot removed (here, or by `forget` where it is kept) and the error that says so."""
    (forget or (lambda: remove_snapshot(snapshot.key)))()
    return SnapshotCorrupt(f"dataset {snapshot.key}: {problem}; the snapshot was removed and is rebuilt for the "
                           "next run")


def check_snapshot_files(snapshot: Snapshot) -> None:
    """Before a run restores it: the snapshot's files are those of its manifest (stat; hash where changed)."""
    problems = snapshot_problems(snapshot.folder)
    if problems:
        raise corrupt(snapshot, problems[0])


def checksum_in_private_server(snapshot: Snapshot, workload: Workload, log_dir: Path) -> dict[str, int]:
    """CHECKSUM TABLE of every table, in a private server on this host on its own restore of the snapshot."""
    root = Path(tempfile.mkdtemp(prefix="lb-verify-", dir=snapshot.folder.parent))
    root.chmod(0o711)  # entered (not listed) by a server that runs as its own user: PostgreSQL's
    private = Path(tempfile.mkdtemp(prefix="lb-verify-private-"))
    choice = server_from_fields("verify", snapshot.meta.get("server"))  # the server that made it
    server = PrivateServer(choice)
    spec = ServerSpec("verify", f"verify-{snapshot.key}", log_dir, private, root,
                      config=helper_settings(resolve_server(choice).flavour, "128M"), password=generate_password(),
                      snapshot=snapshot.path)
    try:
        endpoint = server.up(spec)
        return table_checksums(endpoint, workload_tables(endpoint, workload))
    finally:
        server.down()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)


OnHost = tuple[Callable[[], dict[str, int]], Callable[[], None]]  # checksums of a restore there, removal there


def verify_by_checksum(snapshot: Snapshot, workload: Workload, log_dir: Path,
                       on_host: OnHost | None = None) -> dict[str, Any]:
    """CHECKSUM TABLE of a fresh restore against the values taken at build: in a private server here, or for a
    snapshot kept on an ssh: host, `on_host`'s (checksums there, removal there)."""
    started = time.monotonic()
    verify_dir = log_dir / "verify"
    verify_dir.mkdir(parents=True, exist_ok=True)
    got = on_host[0]() if on_host else checksum_in_private_server(snapshot, workload, verify_dir)
    expected = {k: v for k, v in snapshot.meta.get("checksums", {}).items() if k in got}
    if got != expected or not got:
        raise corrupt(snapshot, "CHECKSUM TABLE of a restored copy differs from the values taken at build",
                      on_host[1] if on_host else None)
    return {"checksum_tables": len(got), "checksum_seconds": round(time.monotonic() - started, 3),
            "checksum": sum(got.values()) % 2**32}


def restore_record(run_dir: Path, backend_kind: str) -> dict[str, Any]:
    """What the restore of this run did (restore.json, written by server/restore.py), or what we know when the
    backend copied inside its own container or VM disk (`cp -a`, not checked file by file)."""
    facts = read_facts(run_dir)
    if facts is not None:
        return {"restore": facts}
    return {"restore": {"method": f"copy by the {backend_kind} backend", "verified": "snapshot files (stat)"}}
