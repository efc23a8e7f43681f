"""Memory that fits the buffer pool: a limit layerbench derives (VM memory, a Docker QoS preset, a Guaranteed pod)
is the buffer pool + the stated overhead (at least the old 2 GiB), and a limit the user sets below the buffer pool
the variant asks for is refused in one line naming the field, the value and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from layerbench.backends.docker.qos import resource_options
from layerbench.backends.kubernetes.qos import resources_for
from layerbench.campaign.models import campaign_as_dict, parse_campaign
from layerbench.errors import BadInput
from layerbench.hosts.machine import total_memory
from layerbench.run.preflight import check_machine_fits, check_workload_pools
from layerbench.server.settings import ServerSettings
from layerbench.vocabulary.sizes import size_in_bytes


def campaign(variant: dict[str, Any], pool: Any = "3G") -> Any:
    server = {"server": {"config": {"innodb_buffer_pool_size": pool}}} if pool is not None else {}
    return parse_campaign({"name": "m", "baseline": "v", "variants": [{"name": "v", **variant, **server}],
                           "workload": {}})


def refusal(variant: dict[str, Any], pool: Any = "3G") -> str:
    with pytest.raises(BadInput) as error:
        campaign(variant, pool)
    assert "\n" not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize(("value", "size"), [("6M", 6 << 20), ("3G", 3 << 30), (134217728, 134217728),
                                              ("1.5g", 3 << 29), ("512k", 512 << 10), ("2GB", 2 << 30),
                                              ("lots", None), ("", None), (True, None), (float("inf"), None)])
def test_server_sizes_read_as_the_server_reads_them(value: Any, size: int | None) -> None:
    assert size_in_bytes(value) == size


def test_the_buffer_pool_is_read_in_any_spelling() -> None:
    assert ServerSettings(config={"innodb-buffer-pool-size": "1G"}).buffer_pool_bytes() == 1 << 30
    assert ServerSettings(config={"INNODB_BUFFER_POOL_SIZE": 2 << 30}).buffer_pool_bytes() == 2 << 30
    assert ServerSettings().buffer_pool_bytes() is None


def test_derived_limits_hold_the_buffer_pool_and_keep_the_old_default_below_it() -> None:
    vm = campaign({"backend": "vm"}).variants[0]
    assert vm.memory == "3840M"  # 3 GiB + 512 MiB for the server + 256 MiB for the guest
    assert "3840M memory (the buffer pool + overhead)" in vm.describe_plan()
    assert campaign({"backend": "vm"}, pool=None).variants[0].memory == "2G"
    assert campaign({"backend": "vm"}, pool="1G").variants[0].memory == "2G"
    assert campaign({"backend": "vm", "memory": "8G"}).variants[0].memory == "8G"  # the user's own wins
    docker = campaign({"backend": "docker", "qos": "guaranteed"}).variants[0]
    assert resource_options(docker)["mem_limit"] == "3584m"  # 3 GiB + 512 MiB
    assert "memory 3584m (the buffer pool + overhead)" in docker.describe_plan()
    assert resource_options(campaign({"backend": "docker", "qos": "burstable"}, pool=None).variants[0])[
        "mem_limit"] == "2g"
    assert "mem_limit" not in resource_options(campaign({"backend": "docker"}).variants[0])  # no preset: no limit
    pod = campaign({"backend": "kubernetes"}).variants[0]
    assert resources_for(pod)["limits"]["memory"] == resources_for(pod)["requests"]["memory"] == "3584Mi"
    assert "memory 3584Mi (the buffer pool + overhead)" in pod.describe_plan()
    assert resources_for(campaign({"backend": "kubernetes"}, pool=None).variants[0])["limits"]["memory"] == "2Gi"


def test_a_derived_vm_memory_is_stored_with_the_campaign() -> None:
    stored = campaign_as_dict(campaign({"backend": "vm"}))
    assert stored["variants"][0]["memory"] == "3840M"
    assert parse_campaign(stored).variants[0].memory == "3840M"


@pytest.mark.parametrize(("variant", "message"), [
    ({"backend": "vm", "memory": "2G"}, "variants.v.memory: 2G is below the buffer pool this variant asks for "
                                        "(server.config.innodb_buffer_pool_size: 3G); set memory to at least 3840M"),
    ({"backend": "docker", "resources": {"memory": "1g"}}, "variants.v.resources.memory: 1g is below the buffer "
                                                           "pool this variant asks for (server.config."
                                                           "innodb_buffer_pool_size: 3G); set resources.memory to "
                                                           "at least 3584m"),
    ({"backend": "kubernetes", "limits": {"memory": "3G"}}, "variants.v.limits.memory: 3G is below the buffer pool"),
    ({"backend": "kubernetes", "qos": "burstable", "limits": {"memory": "2Gi"}}, "variants.v.limits.memory: 2Gi"),
    ({"backend": "kubernetes", "requests": {"memory": "1Gi"}}, "variants.v.requests.memory: 1Gi is below"),
])
def test_a_limit_below_the_buffer_pool_is_refused(variant: dict, message: str) -> None:
    assert refusal(variant).startswith(message)


def test_a_limit_that_holds_the_buffer_pool_passes() -> None:
    assert campaign({"backend": "docker", "resources": {"memory": "3g"}}).variants[0].memory_limit_bytes() == 3 << 30
    assert campaign({"backend": "kubernetes", "limits": {"memory": "3Gi"}}).variants[0].memory_limit_bytes() == 3 << 30


def test_a_derived_limit_larger_than_the_machine_is_refused_with_its_fix() -> None:
    pool = f"{total_memory() // 2**30 + 1}G"
    with pytest.raises(BadInput) as error:
        check_machine_fits(campaign({"backend": "docker", "qos": "guaranteed"}, pool=pool).variants[0])
    assert str(error.value).startswith("variants.v.qos: ") and "smaller buffer pool" in str(error.value)


@settings(max_examples=150, deadline=None)
@given(pool=st.one_of(st.sampled_from(["[/x]", "3G\n", "", "-1G", "10**400", "1e3G", "3 G", "[bold]1G[/]"]),
                      st.integers(min_value=-(10**400), max_value=10**400), st.floats(allow_nan=True),
                      st.booleans(), st.text(max_size=12)),
       memory=st.one_of(st.none(), st.sampled_from(["1G", "64G", "[/x]", "", "2G\n", "99999999999G"]),
                        st.integers(min_value=-(10**400), max_value=10**400),
                        st.lists(st.text(max_size=3), max_size=2)),
       backend=st.sampled_from(["vm", "docker", "kubernetes"]))
@example(pool="3 G", memory="2G\n", backend="docker")  # a newline Docker's own check strips stays out of the message
def test_hostile_buffer_pools_and_limits_are_one_line(pool: Any, memory: Any, backend: str) -> None:
    variant: dict[str, Any] = {"name": "v", "backend": backend, "server": {"config": {"innodb_buffer_pool_size": pool}}}
    if memory is not None:
        variant |= {"vm": {"memory": memory}, "docker": {"resources": {"memory": memory}},
                    "kubernetes": {"limits": {"memory": memory}}}[backend]
    data = yaml.safe_load(yaml.safe_dump({"name": "m", "baseline": "v", "variants": [variant], "workload": {}},
                                         allow_unicode=True))
    try:
        c = parse_campaign(data)
    except BadInput as error:
        assert "\n" not in str(error) and str(error).startswith("variants"), str(error)
        return
    v = c.variants[0]
    pool_bytes, limit = v.server.buffer_pool_bytes(), v.memory_limit_bytes()
    assert pool_bytes is None or limit is None or limit >= pool_bytes


def test_a_workload_buffer_pool_above_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(tmp_path / "datasets"))
    data = {"name": "m", "baseline": "v", "variants": [{"name": "v", "backend": "docker", "resources":
                                                         {"memory": "1g"}}],
            "workload": {"tables": 8, "table_size": 1_000_000, "buffer_pool": "150%"}}  # ~2 GiB of data
    with pytest.raises(BadInput) as error:
        check_workload_pools(parse_campaign(data), parse_campaign(data).variants[0])
    assert str(error.value).startswith("workloads.default.buffer_pool: 150% of the dataset (2.06 GiB) is a 3.09 GiB "
                                       "buffer pool, above variants.v.resources.memory 1g; set v's memory to at least")
    small = parse_campaign({**data, "workload": {**data["workload"], "buffer_pool": "10%"}})
    check_workload_pools(small, small.variants[0])
    reprepare = {**data, "variants": [{**data["variants"][0], "reset": "reprepare"}]}  # no snapshot: no override
    check_workload_pools(parse_campaign(reprepare), parse_campaign(reprepare).variants[0])


@pytest.mark.parametrize("pool", [10**46, 2**63, -1, "lots", "1e3G", "[/x]"])
def test_a_buffer_pool_that_is_no_size_is_refused_in_one_line(pool: Any) -> None:
    said = refusal({"backend": "host"}, pool)
    assert "innodb_buffer_pool_size: " in said and "is not a size the server takes" in said


def test_a_host_servers_buffer_pool_larger_than_the_machine_is_refused() -> None:
    """No limit holds a host server's pool: this machine's memory does (the server would swap or refuse)."""
    with pytest.raises(BadInput) as error:
        check_machine_fits(campaign({"backend": "host"}, pool=f"{total_memory() // 2**30 + 1}G").variants[0])
    assert str(error.value).startswith("variants.v.server.config.innodb_buffer_pool_size: ")
    assert "more than this machine's" in str(error.value) and "\n" not in str(error.value)
    check_machine_fits(campaign({"backend": "host"}, pool="64M").variants[0])
