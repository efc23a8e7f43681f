"""Datasets on real servers: prepared once, every run starts on the same bytes, stale snapshots rebuilt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_faults import server_pids, sigkill_during_a_run
from test_host_campaign import campaign_file, our_servers, run_cli

from helpers import stored_rows
from layerbench.campaign.models import parse_campaign
from layerbench.hosts.workdirs import datasets_dir
from layerbench.run import orchestrator
from layerbench.server.snapshot import list_snapshots
from layerbench.store import Store

pytestmark = pytest.mark.integration

SMALL = {"tables": 2, "table_size": 1500, "threads": 1, "duration": 2, "warmup": 0}


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(tmp_path / "datasets"))
    return tmp_path / "datasets"


def run(tmp_path: Path, **changes) -> list[dict]:
    path = campaign_file(tmp_path, **changes)
    campaign = parse_campaign(yaml.safe_load(path.read_text()))
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store)
        return [json.loads(r["details"]) | {"status": r["status"], "error": r["error"]}
                for r in stored_rows(store, outcome.campaign_id)]


def test_every_run_starts_from_identical_data(tmp_path: Path, own_cache: Path) -> None:
    runs = run(tmp_path, workload=SMALL)
    assert len(runs) == 4 and {r["status"] for r in runs} == {"ok"}
    resets = [r["reset"] for r in runs]
    assert {r["method"] for r in resets} == {"snapshot"} and len({r["snapshot"] for r in resets}) == 1
    assert {r["verify"] for r in resets} == {"files"} and {r["restore"]["method"] for r in resets} == {"copy"}
    assert {r["restore"]["verified"] for r in resets} == {"xxh3-128 of every byte copied"}
    assert {r["buffer_pool_at_start"].split()[0] for r in resets} == {"cold"}
    assert {r["restore"]["files"] for r in resets} == {resets[0]["restore"]["files"]} and resets[0]["restore"]["bytes"]
    assert len(list_snapshots()) == 1
    assert our_servers(tmp_path) == []


def test_changed_inputs_make_a_new_snapshot(tmp_path: Path, own_cache: Path) -> None:
    run(tmp_path, repetitions=1, workload=SMALL)
    run(tmp_path, repetitions=1, workload={**SMALL, "table_size": 1600})
    keys = [key for key, _, _ in list_snapshots()]
    assert len(keys) == 2 and any(k.startswith("2x1500-") for k in keys) and any(k.startswith("2x1600-") for k in keys)


def test_stale_snapshot_is_rebuilt_never_used(tmp_path: Path, own_cache: Path) -> None:
    run(tmp_path, repetitions=1, workload=SMALL)
    (key, _, meta), = list_snapshots()
    meta_file = datasets_dir() / key / "meta.json"
    meta["checksums"] = {name: value + 1 for name, value in meta["checksums"].items()}  # what it held is gone
    meta_file.write_text(json.dumps(meta))
    runs = run(tmp_path, repetitions=1, workload={**SMALL, "verify": "checksum"})
    assert {r["status"] for r in runs} == {"ok"}
    (_, _, rebuilt), = list_snapshots()
    assert rebuilt["checksums"] != meta["checksums"] and rebuilt["created_at"] > meta["created_at"]


def test_tampered_files_are_rebuilt(tmp_path: Path, own_cache: Path) -> None:
    run(tmp_path, repetitions=1, workload=SMALL)
    (key, _, meta), = list_snapshots()
    ibd = datasets_dir() / key / "datadir" / "sbtest" / "sbtest1.ibd"
    with ibd.open("ab") as handle:
        handle.write(b"\0" * 4096)
    runs = run(tmp_path, repetitions=1, workload=SMALL)
    assert {r["status"] for r in runs} == {"ok"}
    (_, _, rebuilt), = list_snapshots()
    assert rebuilt["created_at"] > meta["created_at"]


def test_reprepare_still_works(tmp_path: Path, own_cache: Path) -> None:
    runs = run(tmp_path, repetitions=1, workload={**SMALL, "reset": "reprepare"})
    assert {r["status"] for r in runs} == {"ok"} and {r["reset"]["method"] for r in runs} == {"reprepare"}
    assert {r["reset"]["prepared_by"] for r in runs} == {"this host"}
    assert list_snapshots() == []


def test_buffer_pool_sized_from_the_data(tmp_path: Path, own_cache: Path) -> None:
    runs = run(tmp_path, repetitions=1, workload={**SMALL, "buffer_pool": "150%"})
    assert {r["status"] for r in runs} == {"ok"}, [r["error"] for r in runs]
    for r in runs:
        variables = r["environment"]["server_variables"]
        bp, chunk = int(variables["innodb_buffer_pool_size"]), int(variables["innodb_buffer_pool_chunk_size"])
        wanted = orchestrator.buffer_pool_bytes("150%", r["data_bytes"])
        assert r["buffer_pool_ratio"] == "150%" and r["data_bytes"] > 0
        # exact, unless the server rounds up to whole chunks (chunk size 0 means auto-sized: no rounding)
        assert bp == wanted if chunk == 0 else wanted <= bp < wanted + chunk


def test_cache_survives_a_crash_and_clear_removes_it(tmp_path: Path, own_cache: Path) -> None:
    path = campaign_file(tmp_path, repetitions=2, workload={**SMALL, "duration": 30})
    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    sigkill_during_a_run(proc, tmp_path, lambda: any("rows" in m for _, _, m in list_snapshots()))
    assert run_cli(["clean"]).returncode == 0 and server_pids(tmp_path) == []
    assert len(list_snapshots()) == 1 and "rows" in list_snapshots()[0][2]
    env = {"LAYERBENCH_DATASET_DIR": str(own_cache)}
    listed = run_cli(["cache", "list"], env=env)
    assert listed.returncode == 0 and "2x1500-" in listed.stdout
    cleared = run_cli(["cache", "clear"], env=env)
    assert cleared.returncode == 0 and "removed 1 snapshot" in cleared.stdout
    assert list_snapshots() == [] and os.environ["LAYERBENCH_DATASET_DIR"] == str(own_cache)
