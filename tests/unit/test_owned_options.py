"""Every number means what its label says: the sysbench options layerbench owns are refused in a workload's
`options:` in every spelling and in every place a campaign file can hold them; `formats: []` is refused; an
inventory's `address:` (and an external server's `host`) must be an IP address or a host name.

Each refusal goes through `layerbench validate` in-process and must be exit 2 with one line naming the key.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_inputs import VALID, assert_one_line_bad_input, validate

from layerbench.backends.base import Endpoint
from layerbench.backends.external.variant import ExternalVariant
from layerbench.campaign.models import parse_campaign
from layerbench.campaign.workload import Workload
from layerbench.errors import BadInput
from layerbench.hosts.inventory import HostEntry, is_host_address
from layerbench.secrets import Secret
from layerbench.server.settings import OWNED_BY_LAYERBENCH
from layerbench.sysbench.command import cleanup_argv, config_file_text, prepare_argv, run_argv
from layerbench.sysbench.options import OWNED_SYSBENCH_OPTIONS, option_name, owned_options_table

ROOT = Path(__file__).resolve().parents[2]
OWNED = sorted(OWNED_SYSBENCH_OPTIONS)
# options users set for real (sysbench's own and the bundled tests'): none of them is owned
LEGITIMATE = ["range_size", "skip_trx", "point_selects", "simple_ranges", "rate", "tx_rate", "db_ps_mode",
              "mysql_storage_engine", "mysql_ignore_errors", "mysql_ssl", "forced_shutdown", "rand_spec_pct",
              "rand_pareto_h", "create_secondary", "auto_inc", "secondary", "delete_inserts", "verbosity"]


def spellings(name: str) -> list[str]:
    """The hand-written spellings of one canonical name: separators, case, leading dashes."""
    under = name.replace("-", "_")
    mixed = "_".join(part.capitalize() for part in name.split("-"))
    found = [name, under, name.upper(), mixed, f"--{name}", f"-{under}", f"--{under.upper()}"]
    return list(dict.fromkeys(found))


def with_options(place: str, options: dict[str, Any]) -> str:
    """The valid campaign, as YAML text, with `options` in one of the places a file can hold them: the one
    `workload:`, or the second of two `workloads:` (not only the first workload is checked)."""
    doc = copy.deepcopy(VALID)
    workload = doc.pop("workload")
    if place == "workload":
        doc["workload"] = {**workload, "options": options}
    else:
        doc["workloads"] = [{**workload, "name": "first"}, {**workload, "name": "second", "options": options}]
    return yaml.safe_dump(doc, allow_unicode=True)


PLACES = ("workload", "workloads")
HAND_CASES = [(name, spelling, place) for name in OWNED for spelling in spellings(name) for place in PLACES]


def refused(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    code, err = validate(path)
    assert_one_line_bad_input(code, err)
    return err.strip()


def value_for(name: str) -> Any:
    return {"histogram": True, "rand-type": "uniform", "db-driver": "mysql", "config-file": "/etc/shadow",
            "mysql-db": "mysql", "mysql-host": "127.0.0.1"}.get(name, 64)


def assert_names_key_and_field(line: str, key: str, name: str) -> None:
    assert "options" in line and (f"'{key}'" in line), line
    assert f"--{name} belongs to layerbench" in line, line
    for field in re.findall(r"`(\w+)`", OWNED_SYSBENCH_OPTIONS[name]):
        assert f"`{field}`" in line, line


@pytest.mark.parametrize(("name", "spelling", "place"), HAND_CASES,
                         ids=[f"{s}-{p}" for _, s, p in HAND_CASES])
def test_every_owned_option_in_every_spelling_and_place_is_refused(tmp_path: Path, name: str, spelling: str,
                                                                  place: str) -> None:
    line = refused(tmp_path, with_options(place, {spelling: value_for(name)}))
    assert_names_key_and_field(line, spelling, name)


def hypothesis_spelling(name: str, data: st.DataObject) -> str:
    letters = [c if c.isalnum() else data.draw(st.sampled_from("-_")) for c in name]
    cased = "".join(c.upper() if c.isalpha() and data.draw(st.booleans()) else c for c in letters)
    return "-" * data.draw(st.integers(0, 3)) + cased


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_an_owned_option_among_legitimate_ones_is_refused(tmp_path: Path, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(OWNED))
    spelling = hypothesis_spelling(name, data)
    others = data.draw(st.lists(st.sampled_from(LEGITIMATE), max_size=4, unique=True))
    options = {key: 1 for key in others}
    options[spelling] = data.draw(st.one_of(st.integers(0, 10**6), st.booleans(), st.sampled_from(["on", "x"])))
    keys = list(options)
    data.draw(st.randoms()).shuffle(keys)
    line = refused(tmp_path, with_options(data.draw(st.sampled_from(PLACES)), {k: options[k] for k in keys}))
    assert_names_key_and_field(line, spelling, name)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_legitimate_options_in_any_spelling_are_passed_to_sysbench(data: st.DataObject) -> None:
    keys = data.draw(st.lists(st.sampled_from(LEGITIMATE), min_size=1, max_size=5, unique=True))
    options = {hypothesis_spelling(k, data).lstrip("-"): 7 for k in keys}
    campaign = parse_campaign({**VALID, "workload": {**VALID["workload"], "options": options}})
    command = run_argv(campaign.workloads[0], Path("c"), Path("h.lua"), 1)
    for key in options:
        assert f"--{key.replace('_', '-')}=7" in command


def test_a_legitimate_option_validates_and_reaches_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(with_options("workload", {"range_size": 100, "skip_trx": True}))
    code, err = validate(path)
    assert code == 0, err
    workload = Workload(options={"range_size": 100, "skip_trx": True})
    assert {"--range-size=100", "--skip-trx=on"} <= set(run_argv(workload, Path("c"), Path("h.lua"), 2))


def test_the_options_key_the_dataset_snapshot() -> None:
    """docs/campaign.md: another option, another snapshot (an option can change the prepared bytes)."""
    from layerbench.server.snapshot import dataset_key

    plain, _ = dataset_key(Workload(), "10.11", None)
    assert dataset_key(Workload(options={"create_secondary": False}), "10.11", None)[0] != plain
    assert dataset_key(Workload(options={}), "10.11", None)[0] == plain


def test_every_flag_layerbench_writes_is_owned() -> None:
    """The list cannot fall behind the command lines: each option layerbench passes to sysbench (argv or its
    config file) is in it."""
    workload = Workload(warmup=3, rand_type="uniform", rand_seed=5)
    config, hook = Path("/x/sysbench.cfg"), Path("/x/hook.lua")
    argv = [*run_argv(workload, config, hook, 2), *prepare_argv(workload, config, 2),
            *cleanup_argv(workload, config)]
    flags = {part[2:].split("=", 1)[0] for part in argv if part.startswith("--")}
    in_file = {line.split("=", 1)[0] for line in config_file_text(Endpoint("h", 1, "u", Secret("p"), "d", "/s"))
               .splitlines()}
    assert flags >= {"threads", "tables", "time", "events", "percentile", "histogram", "report-checkpoints"}
    assert (flags | in_file) - set(OWNED_SYSBENCH_OPTIONS) == set()


def test_the_named_fields_exist() -> None:
    fields = set(Workload.model_fields) | set(ExternalVariant.model_fields)
    named = {f for reason in OWNED_SYSBENCH_OPTIONS.values() for f in re.findall(r"`(\w+)`", reason)}
    assert named and named - fields == {"external"}  # `external` is the backend's name, not a field


def test_names_are_canonical() -> None:
    assert all(option_name(name) == name for name in OWNED_SYSBENCH_OPTIONS)


def test_an_owned_option_that_arrives_through_a_yaml_merge_key_is_refused(tmp_path: Path) -> None:
    """A block of options shared with an anchor and a merge key (`<<: *common`) is checked like any other."""
    text = with_options("workload", {"range_size": 50}).replace(
        "options:\n    range_size: 50", "options:\n    <<: *common\n    range_size: 50")
    text = text.replace("backend: host", "backend: host\n  server:\n    config: &common {Table-Size: 1000}")
    assert "<<: *common" in text and "&common" in text
    line = refused(tmp_path, text)
    assert_names_key_and_field(line, "Table-Size", "table-size")


def test_one_option_in_two_spellings_is_refused(tmp_path: Path) -> None:
    line = refused(tmp_path, with_options("workload", {"range_size": 50, "Range-Size": 60}))
    assert "are one sysbench option (--range-size); give it once" in line
    assert "'range_size'" in line and "'Range-Size'" in line


def test_leading_dashes_on_an_option_of_the_user_say_how_to_write_it(tmp_path: Path) -> None:
    line = refused(tmp_path, with_options("workloads", {"--range-size": 50}))
    assert "write it without the leading dashes" in line


def test_a_stored_campaign_with_an_owned_option_is_refused_on_resume() -> None:
    """resume reads the campaign from the store: a store of an earlier version cannot carry one past the check."""
    from layerbench.campaign.models import stored_campaign

    with pytest.raises(BadInput, match="--threads belongs to layerbench"):
        stored_campaign({**VALID, "workload": {**VALID["workload"], "options": {"threads": 64}}})


# --- the docs list what the code refuses ---------------------------------------------------------------------


def test_docs_list_the_owned_sysbench_options_as_the_code_does() -> None:
    text = (ROOT / "docs" / "campaign.md").read_text()
    block = text.split("<!-- owned-sysbench-options: rendered from src/layerbench/sysbench/options.py -->\n", 1)[1]
    assert block.split("\n<!-- /owned-sysbench-options -->", 1)[0] == owned_options_table(), (
        "docs/campaign.md is out of date: paste layerbench.sysbench.options.owned_options_table() between the markers")


def test_docs_list_the_owned_server_options_as_the_code_does() -> None:
    """Both places of docs/campaign.md that name the my.cnf keys layerbench owns name exactly those."""
    lines = (ROOT / "docs" / "campaign.md").read_text().splitlines()
    rows = [line for line in lines if line.startswith("| `server.config` |")]
    assert len(rows) == 2
    for row in rows:
        named = set(re.findall(r"`([a-z]+(?:-[a-z]+)*)`", row.split("|")[-2]))
        assert named - {"true", "false"} == OWNED_BY_LAYERBENCH, row


# --- formats: [] -------------------------------------------------------------------------------------------


def test_an_empty_formats_list_is_refused(tmp_path: Path) -> None:
    line = refused(tmp_path, yaml.safe_dump({**VALID, "formats": []}))
    assert "formats: [] writes no report" in line and "md, html, json, csv" in line
    assert parse_campaign({**VALID, "formats": ["json"]}).formats == ["json"]


# --- addresses ---------------------------------------------------------------------------------------------

BAD_ADDRESSES = ["db\nmysql-user=root", "db;reboot", "a b", "", "-db", "db-", "db..x", "1.2.3.999", "12345",
                 "db_1", "$(id)", "`id`", "db/x", "[::1]", "x" * 64, ("a." * 127) + "bc", "10.0.0.1:3306", "db\r",
                 "fe80::1%a b;c", "fe80::1%eth0\nmysql-db=mysql", "10.0.0.1%eth0"]
GOOD_ADDRESSES = ["10.0.0.5", "::1", "fe80::1%eth0", "db", "db-1.example.com", "db.example.com.", "localhost",
                  "a" * 63, "2001:db8::7"]


def with_host(address: Any) -> dict[str, Any]:
    return {**VALID, "hosts": {"db": {"local": True, "address": address}}}


@pytest.mark.parametrize("address", BAD_ADDRESSES, ids=range(len(BAD_ADDRESSES)))
def test_an_address_that_is_neither_ip_nor_host_name_is_refused(tmp_path: Path, address: str) -> None:
    line = refused(tmp_path, yaml.safe_dump(with_host(address)))
    assert "c.yaml: hosts.db.address: " in line and "not an IP address or a host name" in line


@pytest.mark.parametrize("address", BAD_ADDRESSES, ids=range(len(BAD_ADDRESSES)))
def test_an_external_host_that_is_neither_is_refused(tmp_path: Path, address: str) -> None:
    variant = {"name": "base", "backend": "external", "host": address}
    doc = {**VALID, "variants": [variant], "workload": {**VALID["workload"], "reset": "none"}}
    line = refused(tmp_path, yaml.safe_dump(doc))
    assert "variants[0].host" in line and ("not an IP address or a host name" in line or "at most 253" in line)


@pytest.mark.parametrize("address", GOOD_ADDRESSES)
def test_ip_addresses_and_host_names_are_accepted(address: str) -> None:
    assert parse_campaign(with_host(address)).hosts["db"].address == address  # type: ignore[index]
    variant = {"name": "base", "backend": "external", "host": address}
    parse_campaign({**VALID, "variants": [variant], "workload": {**VALID["workload"], "reset": "none"}})


ADDRESS_LIKE = st.one_of(st.text(min_size=1, max_size=80),
                         st.text(alphabet="ab09-.:%_;= \n$e", min_size=1, max_size=30))


@settings(max_examples=400)
@given(ADDRESS_LIKE)
def test_no_accepted_address_can_carry_a_separator(text: str) -> None:
    if is_host_address(text):
        assert not set(text) & set(" \t\r\n;=#$`'\"/\\[]{}()<>|&!*?,@"), text
        HostEntry(local=True, address=text)


def test_an_address_taken_from_ssh_must_be_one_too(tmp_path: Path) -> None:
    doc = {**VALID, "hosts": {"db": {"ssh": "bench@db_box"}},
           "variants": [{"name": "base", "backend": "host", "server_host": "db"}]}
    line = refused(tmp_path, yaml.safe_dump(doc))
    assert "'db_box', the host of hosts.db.ssh" in line and "set hosts.db.address" in line
    doc["hosts"]["db"]["address"] = "10.0.0.9"
    assert parse_campaign(doc).hosts["db"].reach_address() == "10.0.0.9"  # type: ignore[index]
