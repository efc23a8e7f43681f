"""How much faster is restoring a dataset snapshot than `cleanup` + `prepare` for the same dataset?

Alternating pairs on one machine in one invocation; prints the median of each and their ratio.
    .venv/bin/python bench/reset.py [--tables 4] [--rows 250000] [--pairs 5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from common import host_server, median, say

from layerbench.campaign import Workload
from layerbench.server.prepare import ensure_snapshot, prepare_tables
from layerbench.server.tables import table_checksums, table_names
from layerbench.server.verify import check_snapshot_files


def reset_by_snapshot(workload: Workload, snapshot) -> float:
    """Check the snapshot's files, restore it (checked file by file), start the server: what every
    `reset: snapshot` run with verify: files does."""
    started = time.monotonic()
    check_snapshot_files(snapshot)
    with host_server("restore", snapshot=snapshot.path):
        return time.monotonic() - started


def reset_by_prepare(workload: Workload, private: Path, logs: Path) -> float:
    """An empty server and `sysbench prepare`: what `reset: reprepare` (and published studies) do per run."""
    started = time.monotonic()
    with host_server("prepare") as endpoint:
        prepare_tables(workload, endpoint, private, logs, None)
        table_checksums(endpoint, table_names(workload))
        return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    workload = Workload(tables=args.tables, table_size=args.rows)
    work = Path(tempfile.mkdtemp(prefix="lb-bench-reset-"))
    say(f"snapshot of {args.tables} x {args.rows} rows (prepared once, cached)")
    snapshot = ensure_snapshot(workload, None, log_dir=work / "snapshot")
    restore, prepare = [], []
    for pair in range(1, args.pairs + 1):
        order = ("restore", "prepare") if pair % 2 else ("prepare", "restore")
        for what in order:
            if what == "restore":
                restore.append(reset_by_snapshot(workload, snapshot))
            else:
                prepare.append(reset_by_prepare(workload, work, work / f"prepare-{pair}"))
        say(f"pair {pair}/{args.pairs}: restore {restore[-1]:.2f} s, cleanup+prepare {prepare[-1]:.2f} s")
    print(f"dataset: {args.tables} x {args.rows} rows, {snapshot.data_bytes / 2**20:.0f} MiB of tables; {args.pairs} "
          "alternating pairs")
    print(f"restore (check + copy + start): median {median(restore):.2f} s  (all: "
          f"{', '.join(f'{x:.2f}' for x in restore)})")
    print(f"cleanup + prepare (start + prepare + checksum): median {median(prepare):.2f} s  (all: "
          f"{', '.join(f'{x:.2f}' for x in prepare)})")
    print(f"ratio prepare/restore: {median(prepare) / median(restore):.1f}x faster by snapshot")


if __name__ == "__main__":
    main()
