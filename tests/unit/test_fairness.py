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
