"""The harness during a real run (host backend, real mariadbd and sysbench): moved off the measured CPUs when
one is left over, left in place when none is, its affinity restored after the run, and its CPU recorded."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from layerbench.campaign.models import parse_campaign
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = pytest.mark.integration


class AffinityProgress(orchestrator.SilentProgress):
    """Notes this process's CPUs (the thread reading sysbench's output) at every interval, per variant."""

    def __init__(self) -> None:
        self.seen: dict[str, set[frozenset[int]]] = {}

    def interval(self, spec, tps: float, elapsed: float) -> None:
        self.seen.setdefault(spec.variant, set()).add(frozenset(os.sched_getaffinity(0)))


def stored_resources(db: Path) -> dict[str, dict]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT variant, details FROM runs WHERE status='ok'").fetchall()
    return {variant: json.loads(details)["resources"] for variant, details in rows}


@pytest.mark.skipif(os.sched_getaffinity(0) != {0, 1}, reason="written for the 2-core CI machine (CPUs 0 and 1)")
def test_harness_leaves_the_measured_cpus_when_one_is_free(tmp_path: Path) -> None:
    campaign = parse_campaign({
        "name": "it-harness-pin", "baseline": "shared", "repetitions": 1, "estimates_only": True,
        "output": str(tmp_path / "out"),
        "busy": "keep",  # counts its runs
        "variants": [{"name": "shared", "backend": "host", "cpus": "0", "client_cpus": "0"},
                     {"name": "split", "backend": "host", "cpus": "0", "client_cpus": "1"}],
        "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 3, "warmup": 0},
    })
    progress = AffinityProgress()
    before = os.sched_getaffinity(0)
    with Store(tmp_path / "lb.db") as store:
        outcome = orchestrator.run_campaign(campaign, store, progress=progress)
    assert outcome.ok == 2, outcome.failures
    assert progress.seen["shared"] == {frozenset({1})}  # server and sysbench on CPU 0: the harness on CPU 1
    assert progress.seen["split"] == {frozenset(before)}  # nothing free: left where it was
    assert os.sched_getaffinity(0) == before
    resources = stored_resources(tmp_path / "lb.db")
    assert resources["shared"]["harness_cpus"] == "1" and resources["split"]["harness_cpus"] is None
    for usage in resources.values():
        assert 0 < usage["sampler_cpu_seconds"] <= usage["harness_cpu_seconds"]
