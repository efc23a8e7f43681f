"""Units of the dataset modules: the manifest file (hostile input too), sampled pages, /proc/self/mounts parsing,
the resume wrapper, progress with rows/s, the report's per-variant data rows, and data_dir validation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.analysis.datasets import dataset_rows
from layerbench.analysis.runs import RunRow
from layerbench.campaign.models import parse_campaign
from layerbench.campaign.workload import Workload
from layerbench.errors import BadInput
from layerbench.hosts.procfs import mount_of, parse_mounts
from layerbench.records.run import StoredFacts
from layerbench.server.manifest import (
    PAGE,
    SAMPLES,
    FileEntry,
    Manifest,
    build_manifest,
    read_manifest,
    sample_offsets,
    write_manifest,
)
from layerbench.server.prepare import PrepareProgress, subset_script

ENTRY = {"size": 5, "xxh3_128": "0" * 32, "sample": "f" * 16, "mtime_ns": 1, "ctime_ns": 2}


def manifest_json(files: object) -> dict:
    return {"version": 2, "page": PAGE, "samples": SAMPLES, "hash": "xxh3_128", "files": files}


def test_manifest_round_trip(tmp_path: Path) -> None:
    (tmp_path / "d" / "sbtest").mkdir(parents=True)
    (tmp_path / "d" / "sbtest" / "t.ibd").write_bytes(os.urandom(PAGE * 40 + 3))
    (tmp_path / "d" / "ib_buffer_pool").write_text("warm pages")  # never part of a snapshot
    manifest = build_manifest(tmp_path / "d")
    write_manifest(tmp_path, manifest)
    assert read_manifest(tmp_path) == manifest and list(manifest.files) == ["sbtest/t.ibd"]
    assert manifest.total_bytes == PAGE * 40 + 3


@pytest.mark.parametrize("name", ["/etc/passwd", "../up", "a/../../b", "", "a//b", "x\ny", "./a"])
def test_manifest_refuses_unsafe_names(name: str) -> None:
    with pytest.raises(ValueError):
        Manifest.from_json(manifest_json({name: ENTRY}))


@pytest.mark.parametrize("change", [{"size": -1}, {"size": True}, {"size": 1.5}, {"xxh3_128": "0" * 31},
                                    {"sample": "G" * 16}, {"extra": 1}])
def test_manifest_refuses_bad_entries(change: dict) -> None:
    with pytest.raises(ValueError):
        Manifest.from_json(manifest_json({"a": {**ENTRY, **change}}))


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                           max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_hostile_manifest_json_is_refused_or_parsed_never_crashes(value: object) -> None:
    for data in (value, manifest_json(value), manifest_json({"a": value})):
        try:
            parsed = Manifest.from_json(data)
        except ValueError:
            continue
        assert all(isinstance(e, FileEntry) for e in parsed.files.values())


def test_unreadable_manifest_file_is_none(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{not json")
    assert read_manifest(tmp_path) is None
    (tmp_path / "manifest.json").write_text(json.dumps(manifest_json({"a": {**ENTRY, "size": "5"}})))
    assert read_manifest(tmp_path) is None


@given(st.integers(min_value=0, max_value=2**44))
def test_sample_offsets_cover_first_and_last_page(size: int) -> None:
    offsets = sample_offsets(size)
    pages = max(1, -(-size // PAGE))
    assert offsets[0] == 0 and offsets[-1] == (pages - 1) * PAGE
    assert len(offsets) == min(pages, SAMPLES) and offsets == sorted(set(offsets))
    assert all(o % PAGE == 0 for o in offsets)


def escape(field: str) -> str:
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in field)


field_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1,
                     max_size=40)


@given(field_text, field_text, st.sampled_from(["ext4", "xfs", "btrfs", "zfs"]), field_text)
def test_mount_lines_round_trip(device: str, point: str, fstype: str, options: str) -> None:
    line = f"{escape(device)} {escape(point)} {fstype} {escape(options)} 0 0"
    assert parse_mounts(line) == [{"device": device, "mount_point": point, "fstype": fstype, "options": options}]


@given(st.text(max_size=300))
def test_mount_parsing_never_crashes(text: str) -> None:
    for mount in parse_mounts(text):
        assert set(mount) == {"device", "mount_point", "fstype", "options"}


def test_mount_of_takes_the_longest_containing_mount_point() -> None:
    table = ("/dev/vda / ext4 rw,relatime 0 0\n/dev/loop3 /mnt/fast\\040disk xfs rw,noatime 0 0\n"
             "/dev/vdb /mnt/fast ext4 rw 0 0\n")
    assert mount_of(Path("/mnt/fast disk/work"), table)["fstype"] == "xfs"
    assert mount_of(Path("/mnt/faster"), table)["device"] == "/dev/vda"
    assert mount_of(Path("/mnt/fast/x"), table)["device"] == "/dev/vdb"


def test_subset_script_prepares_only_the_named_tables() -> None:
    text = subset_script(Workload(tables=8, table_size=10), [3, 7])
    assert "dofile([[/usr/share/sysbench/oltp_read_write.lua]])" in text and "local lb_tables = {3, 7}" in text
    assert "create_table(drv, con, lb_tables[j])" in text


def test_prepare_progress_says_rows_per_second_and_counts_kept_tables() -> None:
    said: list[str] = []
    ticks = iter([0.0, 10.0, 20.0])
    progress = PrepareProgress(3, said.append, clock=lambda: next(ticks), table_size=1000, already=1)
    progress("Creating a secondary index on 'sbtest2'...")
    progress("Creating a secondary index on 'sbtest3'...")
    assert said == ["prepare: 2/3 tables in 10 s, 100 rows/s, about 10 s left", "prepare: 3/3 tables in 20 s, "
                    "100 rows/s"]


def run_row(variant: str, reset: dict, storage: dict | None = None) -> RunRow:
    facts = StoredFacts.from_json({"reset": reset, "environment": {"storage": storage or {}}})
    return RunRow(1, 0, 1, variant, "w", 1, 1, "ok", None, {}, facts=facts)


def test_dataset_rows_per_variant() -> None:
    clone = {"method": "snapshot", "seconds": 0.5, "check_seconds": 0.1, "verify": "files",
             "restore": {"method": "clone", "verified": "sizes + sampled pages of every file"},
             "buffer_pool_at_start": "cold (no dump loaded, no scan before the warm-up)"}
    xfs = {"path": "/data", "fstype": "xfs", "device": "/dev/loop1", "options": "rw"}
    rows = dataset_rows([run_row("a", clone, xfs), run_row("a", clone, xfs),
                         run_row("b", {"method": "reprepare", "seconds": 9.0}), RunRow(
                             2, 1, 1, "imported", "w", 1, 1, "ok", None, {})])
    assert [r.variant for r in rows] == ["a", "b"]
    assert rows[0].restore == "clone x2" and rows[0].reset_seconds == pytest.approx(0.6)
    assert rows[0].start_state == "cold x2" and rows[0].storage == "xfs on /dev/loop1 (rw) at /data x2"
    assert rows[1].restore == "reprepare x1" and rows[1].verified == "-"


def test_a_run_stored_before_file_verification_still_reads() -> None:
    old = {"method": "snapshot", "snapshot": "k", "seconds": 1.2, "verified": "checksum", "tables_checked": 2}
    storage = {"fstype": "ext4", "device": "/dev/vda", "options": "rw"}
    assert dataset_rows([run_row("a", old, storage)]) == []  # a store written before: its report is unchanged
    row, _ = dataset_rows([run_row("a", old, storage), run_row("b", {"method": "none"}, {**storage, "path": "/w"})])
    assert row.restore == "snapshot x1" and row.verified == "CHECKSUM TABLE through the variant's server x1"
    assert row.storage == "ext4 on /dev/vda (rw) x1" and row.start_state == "-"


def base_campaign(**variant: object) -> dict:
    return {"name": "c", "baseline": "v", "variants": [{"name": "v", "backend": "host", **variant}],
            "workload": {"reset": "reprepare"}}


def test_data_dir_is_an_absolute_path_and_needs_a_datadir_layerbench_places() -> None:
    assert parse_campaign(base_campaign(data_dir="/mnt/xfs")).variants[0].data_dir == "/mnt/xfs"
    for bad in ({"data_dir": "relative/dir"}, {"backend": "docker", "data_dir": "/mnt/xfs"},
                {"backend": "external", "data_dir": "/mnt/xfs"}):
        with pytest.raises(BadInput, match="data_dir"):
            parse_campaign(base_campaign(**bad))
    assert parse_campaign(base_campaign(backend="docker", storage="bind", data_dir="/m")).variants[0].data_dir == "/m"


def test_the_restore_made_as_the_server_started_counts_in_the_reset_time_and_an_own_reset_is_named() -> None:
    inside = {"method": "snapshot", "seconds": 0.01, "check_seconds": 0.1, "verify": "files",
              "reset_from": "workloads.w.reset",
              "restore": {"method": "cp -a inside the container into a tmpfs in memory", "seconds": 2.0,
                          "verified": "snapshot files (stat); the copy inside the container is not checked"}}
    alone = {"method": "reprepare", "seconds": 9.0, "reset_from": "variants.b.reset"}
    storage = {"path": "/w", "fstype": "ext4", "device": "/dev/vda", "options": "rw"}
    a, b = dataset_rows([run_row("a", inside, storage), run_row("b", alone, storage)])
    assert a.restore == "cp -a inside the container into a tmpfs in memory x1"
    assert a.reset_seconds == pytest.approx(2.11)
    assert b.restore == "reprepare (variants.b.reset) x1" and b.reset_seconds == pytest.approx(9.0)


def test_a_dataset_an_ssh_host_prepared_names_that_host_binary_and_version_in_the_data_line() -> None:
    prepared = {"where": "host db (root@10.0.0.1)", "host": "db", "binary": "/usr/sbin/mariadbd",
                "version": "/usr/sbin/mariadbd  Ver 11.8.3-MariaDB-0+deb13u1 for debian-linux-gnu on x86_64\n"}
    copy = {"method": "snapshot", "seconds": 0.5, "verify": "files", "dataset_prepared": prepared,
            "restore": {"method": "copy on host db (cp --reflink=auto)", "verified": "xxh3-128"}}
    here = {**copy, "dataset_prepared": {"where": "this machine", "host": None, "binary": "/usr/sbin/mariadbd"}}
    rows = dataset_rows([run_row("far", copy, {"path": "/w"}), run_row("near", here, {"path": "/w"})])
    assert rows[0].restore == ("copy on host db (cp --reflink=auto); prepared on host db by /usr/sbin/mariadbd "
                               "(/usr/sbin/mariadbd  Ver 11.8.3-MariaDB-0+deb13u1 for debian-linux-gnu on x86_64) x1")
    assert rows[1].restore == "copy on host db (cp --reflink=auto) x1"  # this machine's: said as before


@given(st.one_of(st.none(), st.text(max_size=20), st.dictionaries(
    st.sampled_from(["host", "binary", "version", "where"]),
    st.one_of(st.none(), st.integers(), st.text(max_size=40), st.lists(st.text(max_size=5), max_size=2)))))
def test_any_stored_prepared_value_gives_a_line_or_nothing(value: object) -> None:
    from layerbench.analysis.datasets import prepared_text

    text = prepared_text(value)
    assert text == "" or text.startswith("; prepared on host ")


def test_the_host_server_s_version_line_is_part_of_the_dataset_key() -> None:
    from layerbench.server.snapshot import dataset_key

    workload = Workload(tables=1, table_size=1000)
    trixie = dataset_key(workload, "mariadbd  Ver 11.8.3-MariaDB-0+deb13u1 for debian-linux-gnu", None)
    bookworm = dataset_key(workload, "mariadbd  Ver 15.1 Distrib 10.11.14-MariaDB", None)
    assert trixie[0] != bookworm[0] and trixie[1]["server"].startswith("mariadbd  Ver 11.8.3")
    assert trixie == dataset_key(workload, "mariadbd  Ver 11.8.3-MariaDB-0+deb13u1 for debian-linux-gnu", None)
