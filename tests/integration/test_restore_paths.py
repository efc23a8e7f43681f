"""Dataset restore paths on real filesystems: a reflink clone on an XFS filesystem made here in a loop file, a
copy on ext4 that catches a changed byte, room refused with numbers, an interrupted prepare resumed."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from test_host_campaign import campaign_file, our_servers, run_cli

from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.campaign.models import parse_campaign
from layerbench.campaign.workload import Workload
from layerbench.errors import BadInput
from layerbench.report.markdown import render
from layerbench.run import orchestrator
from layerbench.run.preflight import check_disk_space
from layerbench.server.manifest import SnapshotCorrupt, build_manifest, check_snapshot, read_manifest, write_manifest
from layerbench.server.prepare import build_folder, ensure_snapshot
from layerbench.server.restore import restore_datadir
from layerbench.server.snapshot import dataset_key, server_version
from layerbench.store import Store

pytestmark = pytest.mark.integration

SMALL = {"tables": 2, "table_size": 1500, "threads": 1, "duration": 2, "warmup": 0}


@pytest.fixture
def xfs(tmp_path: Path) -> Iterator[Path]:
    """An XFS filesystem with reflink, in a 512 MiB sparse loop file of this test; unmounted and removed after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a loop filesystem needs root")
    image, mount = tmp_path / "xfs.img", tmp_path / "xfs"
    mount.mkdir()
    with image.open("wb") as handle:
        handle.truncate(512 << 20)
    subprocess.run(["mkfs.xfs", "-q", "-m", "reflink=1", str(image)], check=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)
        image.unlink(missing_ok=True)


def fake_snapshot(root: Path, big: int = 96 << 20) -> Path:
    """A snapshot folder of random bytes (a big file and a small one) with its manifest; returns the datadir."""
    datadir = root / "snap" / "datadir"
    (datadir / "sbtest").mkdir(parents=True)
    with (datadir / "sbtest" / "sbtest1.ibd").open("wb") as handle:
        for _ in range(big >> 20):
            handle.write(os.urandom(1 << 20))
    (datadir / "ibdata1").write_bytes(os.urandom(12345))
    write_manifest(datadir.parent, build_manifest(datadir))
    return datadir


def flip_byte(path: Path, offset: int) -> None:
    with path.open("r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0xFF]))


def hide_change_from_stat(datadir: Path) -> None:
    """Write the files' new stat into the manifest: a change the cheap stat check cannot see."""
    manifest = read_manifest(datadir.parent)
    assert manifest is not None
    fresh = {name: entry.__class__(entry.size, entry.xxh3_128, entry.sample, (datadir / name).stat().st_mtime_ns,
                                   (datadir / name).stat().st_ctime_ns) for name, entry in manifest.files.items()}
    write_manifest(datadir.parent, manifest.__class__(fresh))


def test_clone_on_xfs_shares_the_blocks_and_checks_them(xfs: Path) -> None:
    source = fake_snapshot(xfs)
    free = shutil.disk_usage(xfs).free
    facts = restore_datadir(source, xfs / "run" / "datadir")
    assert facts.method == "clone" and facts.problems == [] and facts.bytes > 96 << 20
    assert free - shutil.disk_usage(xfs).free < 16 << 20  # 96 MiB restored, (almost) nothing written
    assert (xfs / "run" / "datadir" / "sbtest" / "sbtest1.ibd").read_bytes() == (
        source / "sbtest" / "sbtest1.ibd").read_bytes()


def test_clone_catches_a_changed_first_page(xfs: Path) -> None:
    source = fake_snapshot(xfs, big=8 << 20)
    flip_byte(source / "sbtest" / "sbtest1.ibd", 100)  # the first page is always among the sampled ones
    hide_change_from_stat(source)
    with pytest.raises(SnapshotCorrupt, match=r"sbtest1\.ibd: its sampled pages differ"):
        restore_datadir(source, xfs / "run" / "datadir")


def test_copy_catches_one_changed_byte_anywhere(tmp_path: Path) -> None:
    source = fake_snapshot(tmp_path, big=24 << 20)
    facts = restore_datadir(source, tmp_path / "ok" / "datadir", facts_dir=tmp_path)
    assert facts.method == "copy" and facts.verified == "xxh3-128 of every byte copied"
    assert json.loads((tmp_path / "restore.json").read_text())["method"] == "copy"
    flip_byte(source / "sbtest" / "sbtest1.ibd", (13 << 20) + 7)  # on no sampled page
    _, problems = check_snapshot(source, read_manifest(source.parent))
    assert problems == ["sbtest/sbtest1.ibd: its bytes changed since the snapshot was built"]
    hide_change_from_stat(source)
    with pytest.raises(SnapshotCorrupt, match=r"sbtest1\.ibd: its bytes differ from the snapshot"):
        restore_datadir(source, tmp_path / "bad" / "datadir")


def test_campaign_on_xfs_restores_by_clone_and_reports_it(tmp_path: Path, xfs: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(xfs / "datasets"))
    path = campaign_file(tmp_path, repetitions=1, workload=SMALL)
    data = yaml.safe_load(path.read_text())
    data["variants"][1]["data_dir"] = str(xfs / "work")  # tiny-bp's datadir on XFS; base's on the work folder
    campaign = parse_campaign(data)
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store)
        runs = {r.variant: r.facts for r in store.runs(outcome.campaign_id)}
        report = render(report_model(analyze(store, outcome.campaign_id)))
    assert outcome.failed == 0
    clone, copy = runs["tiny-bp"].reset, runs["base"].reset
    assert clone and clone.restore and clone.restore.method == "clone" and clone.verify == "files"
    assert runs["tiny-bp"].environment and runs["tiny-bp"].environment.storage["fstype"] == "xfs"
    assert copy and copy.restore and copy.restore.method == "copy"  # the work folder is not on the snapshot's XFS
    assert "| `tiny-bp` | clone x1 |" in report and " xfs on /dev/loop" in report
    assert our_servers(tmp_path) == []


def test_disk_space_refused_with_numbers(tmp_path: Path, xfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(xfs / "datasets"))
    monkeypatch.setenv("LAYERBENCH_WORK_DIR", str(xfs / "work"))
    path = campaign_file(tmp_path, workload={**SMALL, "tables": 4, "table_size": 1_000_000})
    with pytest.raises(BadInput, match=r"snapshot of default \(variants base, tiny-bp\) 1\.\d\d GiB \+ the largest "
                                       r"run's working copy of variant base \(default\), a reflink clone \(counted: "
                                       r"the pages 2 s of a run can rewrite at 64 MiB/s\) 0\.1\d GiB = 1\.\d\d GiB "
                                       r"needed on "
                                       r".*xfs, which has 0\.\d\d GiB free"):
        check_disk_space(parse_campaign(yaml.safe_load(path.read_text())))
    refused = run_cli(["validate", str(path)], env={"LAYERBENCH_DATASET_DIR": str(xfs / "datasets"),
                                                    "LAYERBENCH_WORK_DIR": str(xfs / "work")})
    assert refused.returncode == 2 and "GiB needed on" in refused.stderr + refused.stdout


def test_a_clone_counts_a_share_and_a_copy_elsewhere_counts_in_full(tmp_path: Path, xfs: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots and work folder on one XFS filesystem: a run's working copy will be a clone and counts the pages a
    run can rewrite (1 s at 64 MiB/s), so a 0.29 GiB snapshot and its clone fit the 0.41 GiB free where a
    snapshot and a full copy (0.59 GiB) would not; a Docker volume's host folder follows the same rule. Snapshots on
    another filesystem: the working copy on the XFS is a full copy, counted in full."""
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(xfs / "datasets"))
    monkeypatch.setenv("LAYERBENCH_WORK_DIR", str(xfs / "work"))
    rows = {**SMALL, "tables": 1, "table_size": 700_000, "duration": 1}
    data = yaml.safe_load(campaign_file(tmp_path, workload=rows).read_text())
    check_disk_space(parse_campaign(data))
    volume = {**data, "variants": [{"name": "vol", "backend": "docker", "storage": "volume"}], "baseline": "vol"}
    check_disk_space(parse_campaign(volume))
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(tmp_path / "datasets"))
    with pytest.raises(BadInput) as refused:
        check_disk_space(parse_campaign({**data, "workload": {**rows, "table_size": 1_400_000}}))
    assert re.search(r"^workloads: the largest run's working copy of variant base \(default\) 0\.4\d GiB = 0\.4\d GiB "
                     r"needed on .*xfs", str(refused.value)), refused.value


def prepare_child(dataset_dir: Path, log_dir: Path) -> subprocess.Popen:
    code = ("import signal; from pathlib import Path; from layerbench.campaign.workload import Workload; "
            "from layerbench.server import prepare; prepare.RESUME_MIN_BYTES = 1; "
            "from layerbench.server.prepare import ensure_snapshot; signal.signal(signal.SIGTERM, "
            "lambda *_: (_ for _ in ()).throw(KeyboardInterrupt())); "
            f"ensure_snapshot(Workload(tables=4, table_size=60000), None, log_dir=Path({str(log_dir)!r}))")
    env = {**os.environ, "LAYERBENCH_DATASET_DIR": str(dataset_dir)}
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def file_under(root: Path, name: str) -> bool:
    """Whether a file `name` exists anywhere under root (os.walk: folders may vanish while it looks)."""
    return any(name in files for _folder, _dirs, files in os.walk(root))


def test_interrupted_prepare_is_resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(tmp_path / "datasets"))
    log = tmp_path / "first" / "prepare.log"
    child = prepare_child(tmp_path / "datasets", log.parent)
    deadline = time.monotonic() + 600
    # stop it once sbtest1 and sbtest2 are complete: sbtest3's file exists (one sysbench thread creates the tables in
    # order). Not the prepare log's line for sbtest3, as before: sysbench's output to a file is block-buffered, so
    # that line came only when sysbench ended, and a quick build (the copy got faster) could finish before the poll
    while child.poll() is None and time.monotonic() < deadline:
        if file_under(tmp_path / "datasets", "sbtest3.ibd"):
            child.send_signal(signal.SIGTERM)
            break
        time.sleep(0.02)
    assert child.wait(timeout=300) != 0, "the prepare ended before it could be interrupted"
    workload = Workload(tables=4, table_size=60000)
    key, _ = dataset_key(workload, server_version(), None)
    assert (build_folder(key) / "partial").is_dir()
    said: list[str] = []
    snapshot = ensure_snapshot(workload, None, log_dir=tmp_path / "second", say=said.append)
    kept = [s for s in said if s.startswith("prepare: resuming an interrupted build")]
    assert kept and int(kept[0].split(", ")[1].split()[0]) >= 1, said
    assert snapshot.meta["rows"] == {f"sbtest{i}": 60000 for i in range(1, 5)} and snapshot.meta["checksums_complete"]
    assert len(snapshot.meta["checksums"]) == 4 and not build_folder(key).exists()
    assert our_servers(tmp_path) == []


def test_a_second_build_of_the_same_dataset_waits_and_uses_the_first(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(tmp_path / "datasets"))
    log = tmp_path / "first" / "prepare.log"
    first = prepare_child(tmp_path / "datasets", log.parent)
    deadline = time.monotonic() + 600
    while not log.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    said: list[str] = []
    snapshot = ensure_snapshot(Workload(tables=4, table_size=60000), None, log_dir=tmp_path / "second",
                               say=said.append)
    assert first.wait(timeout=600) == 0, first.stderr.read() if first.stderr else ""
    assert any("another process is building dataset" in s for s in said), said
    assert not (tmp_path / "second" / "prepare.log").exists()  # it prepared nothing itself
    assert snapshot.meta["rows"] == {f"sbtest{i}": 60000 for i in range(1, 5)}
