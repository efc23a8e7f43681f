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
from layerbench.run.diskspace import BYTES_PER_ROW, DATADIR_OVERHEAD, check_disk_space, dataset_bytes

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
