from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layerbench.backends.docker.variant import DockerVariant
from layerbench.backends.host.variant import HostVariant
from layerbench.campaign.models import load_campaign, parse_campaign
from layerbench.errors import BadInput

VALID: dict[str, Any] = {
    "name": "study",
    "baseline": "host",
    "variants": [
        {"name": "host", "backend": "host", "server": {"config": {"innodb_buffer_pool_size": "128M"}}},
        {"name": "tuned", "extends": "host", "server": {"config": {"innodb_flush_log_at_trx_commit": 2}}},
        {"name": "tuned2", "extends": "tuned", "server": {"config": {"innodb_buffer_pool_size": "1G"}}},
        {"name": "box", "backend": "docker", "network": "host"},
    ],
    "workload": {"test": "oltp_read_only", "threads": [1, 2, 4]},
}


def test_valid_campaign_defaults_and_extends() -> None:
    c = parse_campaign(VALID)
    assert c.repetitions == 10 and c.order == "rounds" and c.workloads[0].threads == [1, 2, 4]
    tuned2 = c.variant("tuned2")
    assert isinstance(tuned2, HostVariant)
    assert tuned2.server.config == {"innodb_buffer_pool_size": "1G", "innodb_flush_log_at_trx_commit": 2}
    assert tuned2.extends == "tuned"
    assert isinstance(c.variant("box"), DockerVariant)


def test_single_thread_value_becomes_list() -> None:
    data = {**VALID, "workload": {"threads": 8}}
    assert parse_campaign(data).workloads[0].threads == [8]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"baseline": "nope"}, "baseline 'nope' names no variant"),
        ({"colour": "red"}, "colour: unknown key"),
        ({"workload": {"threads": 0}}, "workloads[0].threads: threads must be whole numbers from 1 to 4096, got 0"),
        ({"workload": {"threads": [2, -1]}}, "got -1"),
        ({"workload": {"duration": "long"}}, "workloads[0].duration"),
        ({"repetitions": 0}, "repetitions"),
        ({"variants": [{"name": "host", "backend": "dockr"}]}, "variants[0].backend: 'dockr' is not a backend"),
        ({"variants": [{"name": "host"}]}, "variants[0].backend: missing"),
        ({"variants": [{"name": "host", "backend": "host", "cpus": "zero"}]}, "variants[0].cpus"),
        ({"variants": [{"name": "host", "backend": "host", "netwrk": "x"}]}, "variants[0].netwrk: unknown key"),
        ({"variants": [{"name": "host", "backend": "host", "extends": "ghost"}]}, "extends: 'ghost' names no"),
        ({"variants": [{"name": "host", "backend": "host"}, {"name": "host", "backend": "host"}]}, "repeated: host"),
        ({"workload": {"options": {"mysql-password": "x"}}}, "--mysql-password belongs to layerbench"),
        ({"workload": {"buffer_pool": "lots"}}, "is not a percentage"),
    ],
)
def test_bad_input_names_the_field(change: dict[str, Any], expected: str) -> None:
    with pytest.raises(BadInput) as info:
        parse_campaign({**VALID, **change})
    message = str(info.value)
    assert expected in message
    assert "\n" not in message


def test_extends_cycle_is_reported() -> None:
    data = {**VALID, "baseline": "a", "variants": [
        {"name": "a", "backend": "host", "extends": "b"}, {"name": "b", "backend": "host", "extends": "a"}]}
    with pytest.raises(BadInput, match="cycle"):
        parse_campaign(data)


def test_malformed_yaml_names_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: x\nvariants: [\n  - a\n")
    with pytest.raises(BadInput, match=r"malformed YAML at line \d+"):
        load_campaign(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such campaign file"):
        load_campaign(tmp_path / "none.yaml")


def test_bundled_examples_validate() -> None:
    root = Path(__file__).resolve().parents[2]
    files = [root / "src/layerbench/data/default-campaign.yaml", *sorted((root / "examples").glob("*.yaml"))]
    for file in files:
        load_campaign(file)


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=8))
json_tree = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
keys = st.sampled_from(["name", "baseline", "variants", "workload", "workloads", "repetitions", "order", "seed",
                        "backend", "extends", "threads", "server", "config", "cpus", "zzz"])
mutated = st.dictionaries(keys, json_tree, max_size=6).map(lambda d: {**VALID, **d})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(json_tree, mutated))
def test_loader_never_tracebacks(data: Any) -> None:
    """Any YAML-shaped input either validates or raises one-line BadInput; nothing else escapes."""
    try:
        parse_campaign(data)
    except BadInput as error:
        assert str(error) and "\n" not in str(error)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_any_text_file_is_handled(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = tmp_path_factory.mktemp("y") / "c.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_campaign(path)
    except BadInput as error:
        assert "\n" not in str(error)


def test_roundtrip_through_yaml() -> None:
    c = parse_campaign(yaml.safe_load(yaml.safe_dump(VALID)))
    assert [v.name for v in c.variants] == ["host", "tuned", "tuned2", "box"]


def test_odd_key_names_keep_the_message_on_one_line() -> None:
    with pytest.raises(BadInput) as info:
        parse_campaign({**VALID, "workload": {"\n": 1}})
    assert str(info.value) == "workloads[0].'\\n': unknown key; remove it or check its spelling (see docs/campaign.md)"


def test_reset_modes_and_the_external_backend() -> None:
    external = {"name": "ext", "backend": "external", "password_env": "X"}
    data = {**VALID, "baseline": "ext", "variants": [external]}
    with pytest.raises(BadInput) as error:
        parse_campaign({**data, "workload": {"tables": 1}})
    message = str(error.value)
    assert message.startswith("workloads.default.reset: 'snapshot' cannot be restored into variant 'ext'")
    assert "reset: none" in message and "\n" not in message
    for reset in ("none", "reprepare"):
        assert parse_campaign({**data, "workload": {"reset": reset}}).workloads[0].reset == reset
    assert parse_campaign({**VALID, "workload": {"reset": "none"}}).workloads[0].reset == "none"


@pytest.mark.parametrize(("variant", "refused"), [
    ({"backend": "docker", "client": "container"}, True), ({"backend": "kubernetes", "client": "job"}, True),
    ({"backend": "kubernetes", "client": "port-forward"}, False), ({"backend": "docker"}, False)])
def test_a_script_of_the_users_only_with_sysbench_on_this_host(variant: dict, refused: bool) -> None:
    data = {**VALID, "variants": [{"name": "v", **variant}], "baseline": "v", "workload": {"test": "/x/my.lua"}}
    if not refused:
        assert parse_campaign(data).workloads[0].is_lua_path
        return
    with pytest.raises(BadInput) as error:
        parse_campaign(data)
    assert str(error.value).startswith(f"variants.v.client: {variant['client']} runs sysbench where ")
    assert "use client: host" in str(error.value) and "\n" not in str(error.value)
    assert parse_campaign({**data, "workload": {"test": "oltp_read_only"}}).variants[0].name == "v"


def test_a_campaign_stored_by_an_older_version_can_be_resumed() -> None:
    """Older stores hold the then-default min_runs: 6 even for 2 repetitions; resume must still accept them,
    while a campaign file that asks for it is refused."""
    import pytest as _pytest

    from layerbench.campaign.models import stored_campaign
    from layerbench.errors import BadInput

    old = {"name": "old", "baseline": "a", "repetitions": 2, "min_runs": 6,
           "variants": [{"name": "a", "backend": "host"}, {"name": "b", "backend": "host"}],
           "workload": {"tables": 1, "table_size": 1000}}
    assert stored_campaign(old).repetitions == 2
    with _pytest.raises(BadInput, match="min_runs: 6 is more than repetitions"):
        parse_campaign(old)
