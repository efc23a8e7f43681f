"""The environment fingerprint of a run (measure/environment.py), read on this machine: where a datadir lives
(its mount, as /proc/self/mounts lists it), the host's tuning and facts, and /proc or /sys text read stripped,
None when it cannot be read."""

from __future__ import annotations

import os
from pathlib import Path

from layerbench.hosts.procfs import mount_of
from layerbench.measure.environment import host_facts, read_text, storage_facts, tuning_facts


def test_a_file_is_read_stripped_and_a_missing_one_is_none(tmp_path: Path) -> None:
    (tmp_path / "scheduler").write_text("  [mq-deadline] none\n", encoding="utf-8")
    assert read_text(str(tmp_path / "scheduler")) == "[mq-deadline] none"
    assert read_text(str(tmp_path / "absent")) is None


def test_the_datadirs_storage_is_its_mount(tmp_path: Path) -> None:
    facts = storage_facts(str(tmp_path))
    mount = mount_of(tmp_path) or {}
    assert facts["path"] == str(tmp_path)
    assert {key: facts.get(key) for key in mount} == mount and facts["fstype"]
    assert "io_scheduler" in facts


def test_the_hosts_tuning_and_facts() -> None:
    tuning = tuning_facts()
    assert tuning["cgroup_version"] in ("v1", "v2")
    assert set(tuning) == {"transparent_hugepage", "swappiness", "dirty_ratio", "cpu_governor", "cgroup_version"}
    facts = host_facts()
    assert facts["cpu_count"] == os.cpu_count() and facts["python"].startswith("3.")
    assert facts["memory_bytes"] is None or facts["memory_bytes"] > 0
