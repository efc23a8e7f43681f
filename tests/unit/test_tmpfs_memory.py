"""A datadir held in memory (Docker `storage: tmpfs`): validate refuses one whose dataset (estimated size) plus the
buffer pool and the server does not fit the variant's memory limit or this machine's memory, in one line naming the
size to set, exit 2 (run/preflight.py check_data_in_memory)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.campaign.models import parse_campaign
from layerbench.cli.main import main
from layerbench.cli.terminal import STATE
from layerbench.errors import BadInput
from layerbench.hosts.machine import total_memory
from layerbench.run.diskspace import BYTES_PER_ROW, DATADIR_OVERHEAD, variant_dataset_bytes
from layerbench.run.preflight import check_data_in_memory


@pytest.fixture(autouse=True)
def no_cached_snapshots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(tmp_path / "datasets"))  # every size is the estimate


def tmpfs(variant: dict[str, Any], workload: dict[str, Any]) -> Any:
    return parse_campaign({"name": "m", "baseline": "v", "workload": workload, "variants": [
        {"name": "v", "backend": "docker", "storage": "tmpfs", **variant}]})


def refusal(variant: dict[str, Any], workload: dict[str, Any]) -> str:
    c = tmpfs(variant, workload)
    with pytest.raises(BadInput) as error:
        check_data_in_memory(c, c.variants[0])
    assert "\n" not in str(error.value)
    return str(error.value)


def test_a_dataset_above_the_memory_limit_is_refused_with_the_limit_to_set() -> None:
    # 4 x 1,000,000 rows x 260 bytes (992 MiB) + 128 MiB of datadir + the default 128 MiB buffer pool + 512 MiB for
    # the server = 1760 MiB
    message = refusal({"resources": {"memory": "1g"}}, {"tables": 4, "table_size": 1_000_000})
    assert message == ("variants.v: storage: tmpfs holds workload default's dataset (1.09 GiB, estimated) in memory "
                       "beside the buffer pool and the server: 1.72 GiB, above resources.memory 1g; set "
                       "resources.memory to at least 1760m, or use a storage on disk (volume)")
    fits = tmpfs({"resources": {"memory": "1760m"}}, {"tables": 4, "table_size": 1_000_000})
    check_data_in_memory(fits, fits.variants[0])


def test_the_buffer_pool_counted_is_the_runs_own() -> None:
    big_pool = {"resources": {"memory": "2g"}, "server": {"config": {"innodb_buffer_pool_size": "1G"}}}
    assert "above resources.memory 2g; set resources.memory to at least 2656m" in refusal(
        big_pool, {"tables": 4, "table_size": 1_000_000})
    share = refusal({"resources": {"memory": "2g"}}, {"tables": 4, "table_size": 1_000_000, "buffer_pool": "90%"})
    assert "at least 2640m" in share  # 90 % of the 1.09 GiB datadir, not the 128 MiB default


def test_a_dataset_above_this_machines_memory_is_refused_with_the_rows_that_fit() -> None:
    rows = total_memory() // BYTES_PER_ROW + 1
    message = refusal({}, {"tables": 1, "table_size": rows})
    fit = (total_memory() - (128 << 20) - (512 << 20) - DATADIR_OVERHEAD) // BYTES_PER_ROW
    assert f"above this machine's {total_memory() / 2**30:.2f} GiB of memory" in message
    assert message.endswith(f"use a storage on disk (volume), or at most {fit:,} rows in all (tables x table_size)")


def test_only_a_datadir_in_memory_is_checked_and_reset_none_holds_no_copy() -> None:
    huge = {"tables": 100, "table_size": 10**9}
    on_disk = parse_campaign({"name": "m", "baseline": "v", "workload": huge,
                              "variants": [{"name": "v", "backend": "docker", "storage": "volume"}]})
    check_data_in_memory(on_disk, on_disk.variants[0])
    untouched = tmpfs({"reset": "none"}, huge)
    check_data_in_memory(untouched, untouched.variants[0])


def test_a_mysql_datadir_is_estimated_with_its_larger_system_files() -> None:
    mysql = tmpfs({"server": {"flavour": "mysql", "version": "9.7"}}, {"tables": 2, "table_size": 10_000})
    mariadb = tmpfs({}, {"tables": 2, "table_size": 10_000})
    assert variant_dataset_bytes(mysql.variants[0], mysql.workloads[0]) - variant_dataset_bytes(
        mariadb.variants[0], mariadb.workloads[0]) == (200 << 20) - DATADIR_OVERHEAD


def test_validate_refuses_with_exit_2_and_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(STATE, "debug", False)  # an earlier in-process `--debug` (test_cli) stays set otherwise
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "m", "baseline": "v", "output": str(tmp_path / "out"), "variants": [
        {"name": "v", "backend": "docker", "storage": "tmpfs", "resources": {"memory": "1g"}}],
        "workload": {"tables": 4, "table_size": 1_000_000}}))
    with pytest.raises(SystemExit) as done:
        main(["validate", str(path)])
    err = capsys.readouterr().err.strip()
    assert done.value.code == 2 and "\n" not in err and "set resources.memory to at least 1760m" in err


@settings(max_examples=80, deadline=None)
@given(memory=st.one_of(st.none(), st.sampled_from(["1g", "[/x]", "", "2g\n", "99999999999g", "0", "1b"]),
                        st.integers(min_value=-(10**400), max_value=10**400), st.lists(st.text(max_size=3))),
       tables=st.one_of(st.integers(min_value=-3, max_value=10**6), st.sampled_from(["[/x]", "", 10**400])),
       rows=st.one_of(st.integers(min_value=-3, max_value=10**12), st.text(max_size=4)))
def test_hostile_sizes_are_one_line_or_pass(memory: Any, tables: Any, rows: Any) -> None:
    variant: dict[str, Any] = {"name": "v", "backend": "docker", "storage": "tmpfs"}
    if memory is not None:
        variant["resources"] = {"memory": memory}
    data = {"name": "m", "baseline": "v", "variants": [variant], "workload": {"tables": tables, "table_size": rows}}
    try:
        c = parse_campaign(yaml.safe_load(yaml.safe_dump(data, allow_unicode=True)))
        check_data_in_memory(c, c.variants[0])
    except BadInput as error:
        assert "\n" not in str(error) and str(error), str(error)
