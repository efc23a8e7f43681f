from __future__ import annotations

from layerbench.analysis.fairness import fairness_differences
from layerbench.records import CampaignRecord, Environment


def differences(baseline: str, envs: dict[str, dict], asked: dict[str, set[str]]) -> list:
    """fairness_differences of environments as runs store them (JSON)."""
    return fairness_differences(baseline, {k: Environment.from_json(v) for k, v in envs.items()}, asked)

BASE = {"server_variables": {"version": "10.11.19", "innodb_buffer_pool_size": "134217728", "port": "3306",
                             "innodb_buffer_pool_chunk_size": "2097152", "innodb_flush_method": "O_DIRECT"},
        "host": {"kernel": "6.1", "cpu_count": 2}}


def env(**variables: str) -> dict:
    return {"server_variables": {**BASE["server_variables"], **variables}, "host": dict(BASE["host"])}


def test_asked_differences_are_not_reported() -> None:
    envs = {"base": BASE, "small": env(innodb_buffer_pool_size="8388608", innodb_buffer_pool_chunk_size="1048576",
                                       port="4000")}
    assert differences("base", envs, {"small": {"innodb-buffer-pool-size"}}) == []


def test_unasked_differences_are_reported() -> None:
    other = env(version="8.0.36", innodb_flush_method="fsync")
    other["host"]["cpu_count"] = 4
    diffs = differences("base", {"base": BASE, "box": other}, {})
    whats = [d.what for d in diffs]
    assert whats == ["server variable innodb_flush_method", "server variable version", "machine fact cpu_count"]
    assert "8.0.36 vs 10.11.19 (not asked" in diffs[1].text("base")


def test_variables_that_could_not_be_read_are_one_difference_not_hundreds() -> None:
    unread = {"server_variables": {"_error": "OperationalError: (2003, timed out)"}, "host": dict(BASE["host"])}
    diffs = differences("base", {"base": BASE, "pod": unread}, {})
    assert [(d.what, d.variant_value) for d in diffs] == [
        ("server variables (not compared: not read)", "OperationalError: (2003, timed out)")]


def test_no_baseline_environment_gives_nothing() -> None:
    assert differences("base", {"x": BASE}, {}) == []


def test_a_vm_larger_or_smaller_than_the_pinned_baseline_is_flagged() -> None:
    from layerbench.analysis.fairness import cpu_list_size, vm_size_differences

    assert cpu_list_size("0-3,6") == 5 and cpu_list_size("1") == 1
    definition = {"variants": [{"name": "host", "backend": "host", "cpus": "0"},
                               {"name": "vm1", "backend": "vm", "vcpus": 1, "memory": "2G"},
                               {"name": "vm2", "backend": "vm", "vcpus": 2, "memory": "2G"}]}
    found = vm_size_differences("host", CampaignRecord.from_json(definition),
                                {"host": Environment.from_json({"host": {"cpu_count": 2}})})
    assert [(d.variant, d.baseline_value, d.variant_value) for d in found] == [("vm2", "1", "2")]
    unpinned = {"variants": [{"name": "box", "backend": "docker", "resources": {"memory": "1G"}},
                             {"name": "vm", "backend": "vm", "vcpus": 1, "memory": "2G"}]}
    found = vm_size_differences("box", CampaignRecord.from_json(unpinned),
                                {"box": Environment.from_json({"host": {"cpu_count": 2}})})
    assert {d.what.split(" ")[0]: (d.baseline_value, d.variant_value) for d in found} == {
        "CPUs": ("2", "1"), "memory": ("1G", "2G")}


# As PostgreSQL 15.18 reported them here (pg_settings, run records of tests/integration/test_postgresql_host.py):
# shared_buffers in 8 kB pages, max_wal_size in MB.
POSTGRESQL = {"server_variables": {"version": "15.18 (Debian 15.18-0+deb12u1)", "server_version_num": "150018",
                                   "synchronous_commit": "on", "fsync": "on", "full_page_writes": "on",
                                   "shared_buffers": "16384", "block_size": "8192", "wal_level": "replica",
                                   "max_wal_size": "1024", "port": "41857", "data_directory": "/x"},
              "host": {"kernel": "6.1", "cpu_count": 2}}
MYSQL = {"server_variables": {"version": "9.7.4-2", "version_comment": "(Debian)", "log_bin": "ON",
                              "sync_binlog": "1", "innodb_flush_log_at_trx_commit": "1", "innodb_doublewrite": "ON",
                              "innodb_buffer_pool_size": "134217728", "innodb_redo_log_capacity": "104857600"},
         "host": {"kernel": "6.1", "cpu_count": 2}}


def test_mysql_against_postgresql_names_durability_and_memory_on_each_side() -> None:
    diffs = differences("mysql", {"mysql": MYSQL, "pg": POSTGRESQL}, {})
    found = {d.what.split(" (")[0]: (d.baseline_value, d.variant_value) for d in diffs}
    assert found["server flavour and version"] == ("mysql 9.7.4-2", "postgresql 15.18 (Debian 15.18-0+deb12u1)")
    assert found["commit durability"] == ("innodb_flush_log_at_trx_commit=1, sync_binlog=1",
                                          "synchronous_commit=on, fsync=on")
    assert found["torn-page protection"] == ("innodb_doublewrite=ON", "full_page_writes=on")
    assert found["page cache of the server"] == ("innodb_buffer_pool_size=134217728", "shared_buffers=134217728")
    assert found["change log"] == ("log_bin=ON", "wal_level=replica")
    assert found["its size before a flush"] == ("redo_log_bytes=104857600", "max_wal_size=1073741824")
    assert len(diffs) == 6  # hundreds of variables differ by name: not listed one by one


def test_a_family_setting_the_campaign_sets_is_not_listed() -> None:
    diffs = differences("mysql", {"mysql": MYSQL, "pg": POSTGRESQL}, {"pg": {"synchronous_commit", "shared_buffers"}})
    whats = [d.what.split(" (")[0] for d in diffs]
    assert "commit durability" not in whats and "page cache of the server" not in whats
    assert "torn-page protection" in whats


def test_two_postgresql_servers_compare_every_setting_but_their_own_paths() -> None:
    variables = {**POSTGRESQL["server_variables"], "fsync": "off", "port": "5", "data_directory": "/y"}
    other = {"server_variables": variables, "host": dict(POSTGRESQL["host"])}
    diffs = differences("pg", {"pg": POSTGRESQL, "nofsync": other}, {})
    assert [(d.what, d.baseline_value, d.variant_value) for d in diffs] == [("server variable fsync", "on", "off")]


def test_variables_of_another_version_are_one_line_not_one_each() -> None:
    """PostgreSQL 18 against 15 (or two MariaDB releases): a setting only one of them has is no default that
    differs; they are named together, at most 8 of a side, while every shared setting that differs has its line."""
    newer = {**POSTGRESQL["server_variables"], "data_checksums": "on",
             **{f"new_setting_{i}": "1" for i in range(10)}}
    older = {**POSTGRESQL["server_variables"], "data_checksums": "off", "old_snapshot_threshold": "-1"}
    diffs = differences("pg15", {"pg15": {"server_variables": older, "host": dict(POSTGRESQL["host"])},
                                 "pg18": {"server_variables": newer, "host": dict(POSTGRESQL["host"])}}, {})
    assert [(d.what, d.baseline_value, d.variant_value) for d in diffs] == [
        ("server variable data_checksums", "off", "on"),
        ("server variables that only one of the two servers has (11; another version's)", "old_snapshot_threshold",
         "new_setting_0, new_setting_1, new_setting_2, new_setting_3, new_setting_4, new_setting_5, new_setting_6, "
         "new_setting_7, ... (10 in all)")]
