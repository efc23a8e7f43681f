"""The disk preflight counts every copy the plan holds at once per filesystem (a snapshot per page size, a VM's
base image and overlay, a Docker copy), the largest run's copy once, and its refusal says which variant needs
what. Real filesystems: a dataset larger than any disk here is refused, a small one passes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from layerbench.backends.docker.daemon import docker_root
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.hosts.inventory import Hosts
from layerbench.run.diskspace import (
    BYTES_PER_ROW,
    DATADIR_OVERHEAD,
    check_disk_space,
    check_remote_disk_space,
    dataset_bytes,
    remote_placements,
)

HUGE = {"tables": 40, "table_size": 1_000_000_000}  # 10 TB estimated: no disk here holds it


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(tmp_path / "datasets"))
    monkeypatch.setenv("LAYERBENCH_WORK_DIR", str(tmp_path / "work"))
    return tmp_path


def campaign(variants: list[dict[str, Any]], **workload: Any) -> Any:
    return parse_campaign({"name": "disk", "baseline": variants[0]["name"], "variants": variants,
                           "workload": {**HUGE, **workload}})


def refusal(variants: list[dict[str, Any]], **workload: Any) -> str:
    with pytest.raises(BadInput) as error:
        check_disk_space(campaign(variants, **workload))
    assert "\n" not in str(error.value)
    return str(error.value)


def test_a_second_page_size_and_a_vm_base_are_kept_beside_the_snapshot(dirs: Path) -> None:
    message = refusal([{"name": "base", "backend": "host"},
                       {"name": "small-pages", "extends": "base", "server": {"config": {"innodb_page_size": "8k"}}},
                       {"name": "vm", "backend": "vm", "memory": "2G"}])
    size = f"{(HUGE['tables'] * HUGE['table_size'] * BYTES_PER_ROW + DATADIR_OVERHEAD) / 2**30:.2f} GiB"
    items = message.removeprefix("workloads: ").split(" = ")[0].split(" + ")
    assert items == [f"snapshot of default (variants base, vm) {size}",
                     f"VM base image vm-data-1.img of default (variant vm) {size}",
                     f"snapshot of default, page size 8k (variant small-pages) {size}",
                     f"the largest run's working copy of variant base (default) {size}"]
    assert re.search(r"GiB needed on .*, which has \d+\.\d\d GiB free; free space", message)


def test_a_variant_that_reprepares_keeps_no_snapshot_but_its_run_copy_counts(dirs: Path) -> None:
    message = refusal([{"name": "base", "backend": "host", "reset": "reprepare"}])
    assert "snapshot" not in message and "the largest run's working copy of variant base (default)" in message


def test_docker_copies_are_counted_where_they_live(dirs: Path) -> None:
    layer = refusal([{"name": "layer", "backend": "docker", "storage": "container-fs", "reset": "reprepare"}])
    assert "the largest run's copy in the container's layer (Docker's data root) of variant layer" in layer
    volume = refusal([{"name": "vol", "backend": "docker", "storage": "volume", "reset": "reprepare"}])
    assert "working copy (host folder of its volume) of variant vol" in volume
    assert docker_root().is_absolute()


def test_tmpfs_and_untouched_data_hold_no_copy_on_disk(dirs: Path) -> None:
    check_disk_space(campaign([{"name": "mem", "backend": "docker", "storage": "tmpfs", "reset": "reprepare"}]))
    check_disk_space(campaign([{"name": "ext", "backend": "external", "password_env": "X", "reset": "none"}]))


def test_a_small_plan_fits(dirs: Path) -> None:
    small = campaign([{"name": "base", "backend": "host"}, {"name": "vm", "backend": "vm"}], tables=1,
                     table_size=1000)
    check_disk_space(small)
    assert dataset_bytes(small.workloads[0]) == 1000 * BYTES_PER_ROW + DATADIR_OVERHEAD


def test_a_mysql_snapshot_is_counted_with_its_larger_datadir(dirs: Path) -> None:
    message = refusal([{"name": "maria", "backend": "host"},
                       {"name": "mysql", "backend": "host", "server": {"flavour": "mysql", "version": "9.7"}}])
    rows = HUGE["tables"] * HUGE["table_size"] * BYTES_PER_ROW
    assert f"snapshot of default (variant mysql) {(rows + (200 << 20)) / 2**30:.2f} GiB" in message
    assert f"snapshot of default (variant maria) {(rows + DATADIR_OVERHEAD) / 2**30:.2f} GiB" in message


def test_a_host_variant_on_an_ssh_host_keeps_no_snapshot_here(dirs: Path) -> None:
    """Its host prepares and keeps its dataset (backends/host/dataset.py): this machine needs no room for it,
    while a local variant of the same dataset still counts its snapshot."""
    hosts = {"db2": {"ssh": "root@192.0.2.7"}}
    far = {"name": "far", "backend": "host", "server_host": "db2"}
    check_disk_space(parse_campaign({"name": "disk", "baseline": "far", "hosts": hosts, "variants": [far],
                                     "workload": HUGE}))
    data = {"name": "disk", "baseline": "far", "hosts": hosts, "workload": HUGE,
            "variants": [far, {"name": "near", "backend": "host"}]}
    with pytest.raises(BadInput) as error:
        check_disk_space(parse_campaign(data))
    assert "snapshot of default (variant near)" in str(error.value) and "far" not in str(error.value)


def test_a_dataset_a_cluster_makes_keeps_no_snapshot_here(dirs: Path) -> None:
    """In namespace-scoped mode (as off a node) the cluster's Jobs make the dataset and a VolumeSnapshot keeps it
    (backends/kubernetes/seed.py): this machine needs no room for its snapshot, a host variant of it still does."""
    pod = {"name": "pod", "backend": "kubernetes", "namespace": "team-db", "client": "job", "storage": "pvc",
           "storage_class": "csi", "snapshot_class": "snaps", "storage_size": "20Ti"}
    check_disk_space(campaign([pod]))
    assert "snapshot of default (variant near)" in refusal([pod, {"name": "near", "backend": "host"}])


def test_each_dataset_is_placed_where_it_is_written(dirs: Path) -> None:
    """A host variant on db2 (its host prepares the snapshot) and a docker variant there whose image is sent from
    here (its snapshot shipped): db2's datasets folder holds both snapshots, its work_dir the run copies; this
    machine holds the shipped one only, and nothing of a variant whose host prepares it (`on_host`)."""
    hosts = {"db2": {"ssh": "root@192.0.2.7", "work_dir": "/srv/lb"}}
    data = {"name": "disk", "baseline": "far", "hosts": hosts, "workload": HUGE,
            "variants": [{"name": "far", "backend": "host", "server_host": "db2"},
                         {"name": "box", "backend": "docker", "server_host": "db2", "storage": "bind",
                          "data_dir": "/data/lb"}]}
    parsed = parse_campaign(data)
    placed = remote_placements(parsed, Hosts(parsed.hosts), frozenset({"far"}))
    assert {(p.host, p.folder, p.kind, p.what) for p in placed} == {
        ("db2", "/srv/lb/datasets", "kept", "snapshot of default, prepared there (variant far)"),
        ("db2", "/srv/lb/datasets", "kept", "snapshot of default, shipped from here (variant box)"),
        ("db2", "/srv/lb", "runs", "working copy of variant far (default)"),
        ("db2", "/data/lb", "runs", "working copy of variant box (default)")}
    with pytest.raises(BadInput) as error:
        check_disk_space(parsed, frozenset({"far"}))
    assert "(variant box)" in str(error.value) and "far" not in str(error.value)
    check_disk_space(parsed, frozenset({"far", "box"}))  # a docker variant whose host builds its image: none here


def test_the_hosts_refusal_is_one_line_naming_the_host_the_path_the_need_and_the_free_space(dirs: Path) -> None:
    """Two folders of one filesystem there (df's mount point) add up; another filesystem is checked alone."""
    hosts = {"db2": {"ssh": "root@192.0.2.7"}}
    small = {"tables": 1, "table_size": 1000}
    data = {"name": "disk", "baseline": "far", "hosts": hosts, "workload": small,
            "variants": [{"name": "far", "backend": "host", "server_host": "db2"},
                         {"name": "box", "backend": "host", "server_host": "db2", "data_dir": "/data/lb"}]}
    parsed, asked = parse_campaign(data), []
    size = small["tables"] * small["table_size"] * BYTES_PER_ROW + DATADIR_OVERHEAD

    def df(host: Any, folder: str) -> tuple[int, str]:
        asked.append((host.name, folder))
        return (size * 2, "/") if folder.startswith("/var/tmp") else (size * 5, "/data")

    check_remote_disk_space(parsed, frozenset({"far", "box"}), df)  # one snapshot + one copy: 2 x size fit on /
    assert sorted(asked) == [("db2", "/data/lb"), ("db2", "/var/tmp/layerbench"),
                             ("db2", "/var/tmp/layerbench/datasets")]
    data["variants"][1].pop("data_dir")
    with pytest.raises(BadInput) as error:  # now both copies on /: the larger one counts, still 2 x size
        check_remote_disk_space(parse_campaign(data), frozenset({"far", "box"}), lambda h, f: (size * 2 - 1, "/"))
    message = str(error.value)
    assert "\n" not in message and message.startswith("hosts.db2: snapshot of default, prepared there (variants far, "
                                                      "box) ")
    assert re.search(r" = \S+ GiB needed on host db2 at /var/tmp/layerbench/datasets and /var/tmp/layerbench \(one "
                     r"filesystem\), which has \S+ GiB free; ", message), message
    check_remote_disk_space(parse_campaign(data), frozenset(), lambda h, f: None)  # df said nothing: not checked
