"""A workload's own sysbench options reach sysbench on a real run (host backend, real mariadbd and sysbench),
now that the options layerbench owns are refused: `skip_trx: on` leaves out BEGIN/COMMIT, so the stored run
counts no "other" queries, which oltp_read_only otherwise sends twice per transaction."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from layerbench.campaign.models import parse_campaign
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = pytest.mark.integration


def campaign(tmp_path: Path, options: dict[str, object]) -> dict[str, object]:
    return {
        "name": "it-options", "baseline": "base", "repetitions": 1, "output": str(tmp_path / "out"),
        "variants": [{"name": "base", "backend": "host"}],
        "workload": {"test": "oltp_read_only", "tables": 1, "table_size": 1000, "threads": 1, "duration": 2,
                     "warmup": 0, "options": options},
    }


@pytest.mark.parametrize("options", [{"skip_trx": True, "range_size": 50}, {}], ids=["skip_trx", "default"])
def test_a_workloads_own_options_reach_sysbench(tmp_path: Path, options: dict[str, object]) -> None:
    parsed = parse_campaign(campaign(tmp_path, options))
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(parsed, store, progress=orchestrator.SilentProgress())
    assert (outcome.ok, outcome.failed) == (1, 0)
    status, transactions, other, run_dir = sqlite3.connect(tmp_path / "out" / "layerbench.db").execute(
        "SELECT status, transactions, other, run_dir FROM runs").fetchone()
    assert status == "ok" and transactions > 0
    assert (other == 0) == bool(options), other  # BEGIN and COMMIT are the only "other" queries here
    commands = (Path(run_dir) / "commands.log").read_text()
    assert ("--skip-trx=on" in commands and "--range-size=50" in commands) == bool(options)
