"""Where the CPU went, as a run stores it (records/cpu.py): the sampler's record and the quiet wait read back what
they wrote; a store written before `pressure` existed reads as no pressure measured, and the
`per_1000_transactions` of older stores is read past and not written again."""

from __future__ import annotations

import json

from layerbench.records.cpu import QuietWait, Throttling, TopProcess, Usage


def test_the_samplers_record_reads_back_the_same() -> None:
    usage = Usage({"server": 2.5, "client": 0.5, "other": 0.25, "idle": 9.0},
                  {"/sys/fs/cgroup/lb": Throttling(100, 7, 0.35)}, 0.125, (TopProcess("python3", 1.5, 42),),
                  30.0, 30, {"server": 10}, {"server": 3}, 0.05, 0.2, "3", {"system": {"some": 0.5, "full": 0.0}})
    stored = json.loads(json.dumps(usage.to_json()))
    assert Usage.from_json(stored) == usage
    assert Usage.from_json(stored).to_json() == usage.to_json()


def test_an_older_store_reads_without_pressure_and_drops_per_1000() -> None:
    stored = {"cpu_seconds": {"server": 1.0}, "per_1000_transactions": {"server": 0.5}, "samples": 3}
    usage = Usage.from_json(stored)
    assert usage.pressure == {} and usage.cpu_seconds == {"server": 1.0} and usage.samples == 3
    assert "per_1000_transactions" not in usage.to_json()
    assert usage.document == stored  # as stored, for the exports


def test_the_quiet_wait_reads_back_and_defaults_to_quiet() -> None:
    wait = QuietWait(12.5, False, 0.4, 60.0)
    assert QuietWait.from_json(json.loads(json.dumps(wait.to_json()))) == wait
    assert QuietWait.from_json({}) == QuietWait(0.0, True)
    read = QuietWait(1.0, True, None, 5.0, at="dbssh", error="RunFailed: hosts.dbssh does not answer")
    assert QuietWait.from_json(json.loads(json.dumps(read.to_json()))) == read
    assert "at" not in wait.to_json() and QuietWait.from_json(wait.to_json()).at is None  # records before `at`
    assert TopProcess.from_json({"cpu_seconds": "x"}) == TopProcess("?", 0.0)
