"""The VM's data disk (backends/vm/datadisk.py) with the real mkfs.ext4 and qemu-img on tiny trees: a base image
built once per snapshot and then reused, a qcow2 overlay whose backing file is that base, a failed build that
leaves no half-built file and no owner record, and `clean` removing a half-built base a killed harness left."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from layerbench.backends.vm.datadisk import BASE_NAME, METHOD, ensure_base, make_overlay, write_restore_facts
from layerbench.errors import RunFailed
from layerbench.hosts import owners
from layerbench.hosts.reclaim import clean_owned
from layerbench.server.restore import read_facts


def tiny_snapshot(root: Path) -> Path:
    datadir = root / "snap" / "datadir"
    (datadir / "sbtest").mkdir(parents=True)
    (datadir / "sbtest" / "sbtest1.ibd").write_bytes(os.urandom(200_000))
    (datadir / "ibdata1").write_bytes(b"x" * 4096)
    return datadir


def our_records(prefix: str = "lbvmdata-") -> list[str]:
    return [o.label for o in owners.recorded() if o.label.startswith(prefix) and o.harness_pid == os.getpid()]


def test_a_base_is_built_once_and_an_overlay_is_backed_by_it(tmp_path: Path) -> None:
    datadir, lines = tiny_snapshot(tmp_path), []
    base, built = ensure_base(datadir, lines.append, tmp_path)
    assert base == datadir.parent / BASE_NAME and base.is_file() and built is not None
    assert any("building the VM data disk" in line for line in lines)
    again, built_again = ensure_base(datadir, lines.append, tmp_path)
    assert again == base and built_again is None
    overlay = tmp_path / "data.qcow2"
    make_overlay(base, overlay)
    info = json.loads(subprocess.run(["qemu-img", "info", "--output=json", "-U", str(overlay)], check=True,
                                     capture_output=True, text=True).stdout)
    assert info["format"] == "qcow2" and info["backing-filename"] == str(base.resolve())
    assert list(datadir.parent.glob(f".{BASE_NAME}.part-*")) == [] and our_records() == []


def test_a_failed_build_leaves_no_part_and_no_record(tmp_path: Path) -> None:
    (tmp_path / "snap").mkdir()
    with pytest.raises(RunFailed, match=r"mkfs\.ext4 of the VM data disk failed"):
        ensure_base(tmp_path / "snap" / "datadir", lambda _t: None, tmp_path)  # no such tree: mkfs -d fails
    assert list((tmp_path / "snap").iterdir()) == [] and our_records() == []


def test_clean_removes_a_half_built_base_file(tmp_path: Path) -> None:
    part = tmp_path / f".{BASE_NAME}.part-dead"
    part.write_bytes(b"half")
    owned = owners.record("lbvmdata-test-clean", pid=None, marker="", paths=[part])
    assert f"removed {part}" in clean_owned(owned)
    assert not part.exists() and our_records("lbvmdata-test-clean") == []


def test_the_run_records_the_overlay_method(tmp_path: Path) -> None:
    datadir = tiny_snapshot(tmp_path)
    write_restore_facts(tmp_path, datadir, 0.01, None)
    facts = read_facts(tmp_path)
    assert facts is not None and facts["method"] == METHOD == "copy-on-write overlay of a prepared base image"
    assert facts["files"] == 2 and facts["bytes"] == 204_096
