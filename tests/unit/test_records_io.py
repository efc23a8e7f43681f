"""A run's I/O record (records/io.py): what it writes reads back the same, and a stored document with missing or
impossible values reads as zeros and empty sections, never a crash."""

from __future__ import annotations

import json

from layerbench.records.io import IoCounters


def test_what_is_written_reads_back_the_same() -> None:
    record = IoCounters(30.0, {"server": {"read_bytes": 4096, "write_bytes": 8192}},
                        {"/sys/fs/cgroup/lb": {"rbytes": 1, "wbytes": 2, "rios": 3, "wios": 4}},
                        {"Innodb_pages_read": 12}, ("no cgroup io.stat for the client",), ("a note",))
    stored = json.loads(json.dumps(record.to_json()))
    assert IoCounters.from_json(stored) == record
    assert IoCounters.from_json(stored).to_json() == record.to_json()


def test_missing_and_impossible_values_read_as_nothing() -> None:
    stored = json.loads('{"window_seconds": "soon", "processes": {"server": {"read_bytes": Infinity, "x": "y"}},'
                        ' "cgroups": [1, 2], "errors": ["e", 3]}')
    record = IoCounters.from_json(stored)
    assert record == IoCounters(0.0, {"server": {"read_bytes": 0, "x": 0}}, {}, {}, ("e", "3"), ())
    assert record.document == stored  # kept as stored, for the exports
    assert IoCounters.from_json({}) == IoCounters(0.0, {}, {}, {})
