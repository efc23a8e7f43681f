"""How much faster is restoring a dataset snapshot than `cleanup` + `prepare` for the same dataset?

Alternating pairs on one machine in one invocation; prints the median of each and their ratio.
    .venv/bin/python bench/reset.py [--tables 4] [--rows 250000] [--pairs 5] [--quick]
Ctrl-C stops the server of the moment and removes the bench's folders (the cached snapshot stays).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from common import host_server, median, parse_args, run_main, say, table

from layerbench.campaign.workload import Workload
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


def pairs(workload: Workload, count: int, work: Path) -> tuple[list[float], list[float]]:
    say(f"snapshot of {workload.tables} x {workload.table_size} rows (prepared once, cached)")
    snapshot = ensure_snapshot(workload, None, log_dir=work / "snapshot")
    restore, prepare = [], []
    for pair in range(1, count + 1):
        order = ("restore", "prepare") if pair % 2 else ("prepare", "restore")
        for what in order:
            if what == "restore":
                restore.append(reset_by_snapshot(workload, snapshot))
            else:
                prepare.append(reset_by_prepare(workload, work, work / f"prepare-{pair}"))
        say(f"pair {pair}/{count}: restore {restore[-1]:.2f} s, cleanup+prepare {prepare[-1]:.2f} s")
    print(f"dataset: {workload.tables} x {workload.table_size} rows, {snapshot.data_bytes / 2**20:.0f} MiB of "
          f"tables; {count} alternating pairs")
    return restore, prepare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--pairs", type=int, default=5)
    args = parse_args(parser, {"tables": 1, "rows": 1000, "pairs": 1})
    if min(args.tables, args.rows, args.pairs) < 1:
        parser.error("--tables, --rows and --pairs must be >= 1")
    work = Path(tempfile.mkdtemp(prefix="lb-bench-reset-"))
    try:
        restore, prepare = pairs(Workload(tables=args.tables, table_size=args.rows), args.pairs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(table(["what", "median s", "all"], [
        ["restore (check + copy + start)", f"{median(restore):.2f}", ", ".join(f"{x:.2f}" for x in restore)],
        ["cleanup + prepare (start + prepare + checksum)", f"{median(prepare):.2f}",
         ", ".join(f"{x:.2f}" for x in prepare)]]))
    print(f"ratio prepare/restore: {median(prepare) / median(restore):.1f}x faster by snapshot")

if __name__ == "__main__":
    run_main(main)
