"""A pgbench workload's dataset: `pgbench -i -s SCALE` into the benchmark database (once per dataset, into the
private server that builds its snapshot: server/prepare.py; or before each run with `reset: reprepare`), and the
rows it makes, which the snapshot's check compares (server/prepare.py table_facts)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from layerbench.endpoint import Endpoint
from layerbench.errors import RunFailed
from layerbench.pgbench.command import init_argv, passfile_text
from layerbench.secrets import write_private
from layerbench.sysbench.client import ClientRunner, HostClient

if TYPE_CHECKING:  # the campaign's Workload model, for type hints only: campaign/ imports pgbench/
    from layerbench.campaign.workload import Workload

ACCOUNTS_PER_SCALE = 100_000  # pgbench's naccounts; 10 tellers and 1 branch per scale
BYTES_PER_SCALE = 16 << 20  # the datadir's base/ per scale as measured here (15.18: 15.4 MiB at scale 1)
TABLES = ("pgbench_accounts", "pgbench_branches", "pgbench_history", "pgbench_tellers")


def expected_rows(workload: Workload) -> dict[str, int]:
    """The rows `pgbench -i -s N` leaves in each of its tables (its history starts empty)."""
    scale = workload.pgbench_scale
    return {"pgbench_accounts": ACCOUNTS_PER_SCALE * scale, "pgbench_branches": scale, "pgbench_history": 0,
            "pgbench_tellers": 10 * scale}


def initialize(workload: Workload, endpoint: Endpoint, private: Path, log_dir: Path,
               client: ClientRunner | None = None) -> None:
    """`pgbench -i -s SCALE` (it drops its tables first), the password through a 0600 passfile."""
    passfile = write_private(private / "pgpass", passfile_text(endpoint))
    done = (client or HostClient()).run_client(
        init_argv(workload, endpoint, passfile), {passfile.name: passfile.read_text(encoding="utf-8")},
        log_path=log_dir / "prepare.log", secrets=[endpoint.password], timeout=24 * 3600)
    if done.returncode != 0:
        cause = next((ln for ln in reversed(done.output.splitlines()) if "error" in ln), "see prepare.log")
        raise RunFailed(f"pgbench -i failed (exit {done.returncode}): {cause.strip()[:300]}")
