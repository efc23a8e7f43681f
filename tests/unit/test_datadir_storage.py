"""Where a run's datadir lived, as its record and the report say it: the filesystem of a folder, or the backend's own
storage mode (a pod's volume, a container's), never "None on None"."""

from __future__ import annotations

from pathlib import Path

from layerbench.analysis.datasets import storage_text, storage_words
from layerbench.measure.environment import datadir_storage, storage_facts
from layerbench.records import Environment


def test_a_backend_that_names_its_storage_mode_keeps_it_and_the_record_says_that_mode() -> None:
    described = {"backend": "kubernetes", "storage": "pvc"}
    assert datadir_storage(described, Path("/tmp")) == {"volume": "pvc"}
    assert described["storage"] == "pvc"  # still in the backend's facts
    env = Environment.of({}, described, {}, {"volume": "pvc"}, {})
    assert storage_text(env) == "pvc (the backend's storage; its filesystem is not read)"


def test_a_described_folder_is_taken_out_of_the_backends_facts_and_a_silent_backend_gets_the_work_folders() -> None:
    there = {"path": "/srv/lb", "fstype": "xfs", "device": "/dev/vdb", "options": "rw"}
    described = {"backend": "host", "storage": dict(there)}
    assert datadir_storage(described, Path("/tmp")) == there and "storage" not in described
    here = datadir_storage({"backend": "host"}, Path("/tmp"))
    assert here == storage_facts("/tmp") and here["path"] == "/tmp"
    assert storage_text(Environment.of({}, {}, {}, there, {})) == "xfs on /dev/vdb (rw) at /srv/lb"


def test_what_is_missing_is_said_never_printed_as_none() -> None:
    assert storage_words({}) == "not recorded"
    assert storage_words({"fstype": "ext4"}) == "ext4 on ? (?)"
    assert "None" not in storage_words({"path": "/x", "io_scheduler": None})
