"""What a run's record says was checked of its copy (README "The run is the unit", docs/datasets.md): a copy made
by layerbench on the host is hashed against the snapshot's manifest; a copy a backend made inside its container,
pod or VM is recorded as checked only through the snapshot's own file check."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from layerbench.server.manifest import build_manifest, write_manifest
from layerbench.server.restore import copy_tree
from layerbench.server.verify import restore_record


@pytest.mark.parametrize("kind", ["docker", "kubernetes", "vm"])
def test_a_copy_made_inside_the_backend_is_checked_only_through_the_snapshot(tmp_path: Path, kind: str) -> None:
    assert restore_record(tmp_path, kind) == {"restore": {"method": f"copy by the {kind} backend",
                                                          "verified": "snapshot files (stat)"}}


def test_a_copy_made_on_the_host_is_hashed_against_the_manifest(tmp_path: Path) -> None:
    snapshot = tmp_path / "snap"
    (snapshot / "datadir" / "sbtest").mkdir(parents=True)
    (snapshot / "datadir" / "sbtest" / "sbtest1.ibd").write_bytes(os.urandom(3 * 16384))
    write_manifest(snapshot, build_manifest(snapshot / "datadir"))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    copy_tree(snapshot / "datadir", tmp_path / "work" / "datadir", facts_dir=run_dir)
    restore = restore_record(run_dir, "host")["restore"]
    assert restore["method"] in {"copy", "clone"} and restore["files"] == 1
    assert restore["verified"] == {"copy": "xxh3-128 of every byte copied",
                                   "clone": "sizes + sampled pages of every file"}[restore["method"]]
