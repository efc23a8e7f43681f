"""Issue #44, kinds 1, 3 and 8, through `layerbench validate` (as test_hostile_inputs.py): each hostile value is
refused with exit 2 and one line naming its key, in under 5 s.

- kind 1: Kubernetes quantities with huge exponents, thousands of digits, vanishing fractions, past 2^63;
- kind 3: limits a tool reads as "unlimited" (0, or a value that rounds to 0 where the tool reads it);
- kind 8: digits that are not ASCII at every key whose grammar takes digits, control characters (C0, DEL, C1,
  written as YAML escapes) in text printed to a terminal, two merge keys, `work_dir` spellings of a refused folder.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.test_hostile_inputs import assert_one_line_bad_input, validate

SECONDS = 5
FIXTURE = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
BASE: dict[str, Any] = {"name": "hostile", "baseline": "base", "repetitions": 2,
                        "workload": {"tables": 1, "table_size": 100, "threads": 1, "duration": 1, "warmup": 0}}


def refused(tmp_path: Path, doc: dict[str, Any], key: str, said: str = "") -> str:
    """Validate `doc` (written as JSON, which is YAML): exit 2, one line naming `key`, in under SECONDS."""
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(doc))
    started = time.monotonic()
    code, err = validate(path)
    assert time.monotonic() - started < SECONDS, err
    assert_one_line_bad_input(code, err)
    assert key in err and said in err, err
    return err


def campaign(variant: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """BASE with a host baseline, `variant` beside it, and `top` keys."""
    variants = [{"name": "base", "backend": "host"}] + ([variant] if variant else [])
    return {**BASE, "variants": variants, **top}


def pod(**keys: Any) -> dict[str, Any]:
    return {"name": "pod", "backend": "kubernetes", "qos": "burstable", **keys}


# --- kind 1: quantities ------------------------------------------------------------------------------------------

hostile_quantities = st.one_of(
    st.from_regex(r"\A[0-9]{1,30}(\.[0-9]{1,12})?[eE][+-]?[0-9]{3,12}(Ki|Mi|Gi|k|M|G|E|m)?\Z"),  # huge exponents
    st.integers(20, 9000).map(lambda n: "9" * n),  # thousands of digits
    st.integers(10, 9000).map(lambda n: "0." + "0" * n + "1"),  # a vanishing fraction
    st.sampled_from(["1e999999999", "1e-999999999", "9223372036854775808", "9999999999999999999Ei", "1E99Ei"]),
)


@FIXTURE
@given(text=hostile_quantities, resource=st.sampled_from(["cpu", "memory"]), side=st.sampled_from(["limits",
                                                                                                     "requests"]))
def test_a_hostile_quantity_is_refused_at_once(tmp_path: Path, text: str, resource: str, side: str) -> None:
    refused(tmp_path, campaign(pod(**{side: {resource: text}})), f"variants.pod.{side}.{resource}")


# --- kind 3: zero limits ------------------------------------------------------------------------------------------

zeros = st.integers(1, 7).map(lambda n: "0" * n)


@FIXTURE
@given(zero=zeros, unit=st.sampled_from(["K", "M", "G"]), key=st.sampled_from(["size", "block_size"]))
def test_a_fio_size_of_zero_is_refused(tmp_path: Path, zero: str, unit: str, key: str) -> None:
    doc = campaign(neighbours=[{"name": "io", "kind": "disk", key: zero + unit}])
    refused(tmp_path, doc, f"neighbours[0].{key}", "comes to 0 for fio")


@FIXTURE
@given(zero=zeros, unit=st.sampled_from(["K", "M", "G"]))
def test_an_iperf3_bitrate_of_zero_is_refused(tmp_path: Path, zero: str, unit: str) -> None:
    doc = campaign(neighbours=[{"name": "net", "kind": "network", "bitrate": zero + unit}])
    refused(tmp_path, doc, "neighbours[0].bitrate", "0 means unlimited to iperf3")


@FIXTURE
@given(memory=st.one_of(zeros, st.from_regex(r"\A0\.0{0,3}[0-9]{1,2}[bB]?\Z"), st.sampled_from(["0.000001k",
                                                                                                 "0g", "0.0m"])))
def test_a_docker_memory_that_comes_to_zero_bytes_is_refused(tmp_path: Path, memory: str) -> None:
    doc = campaign({"name": "box", "backend": "docker", "resources": {"memory": memory}})
    refused(tmp_path, doc, "resources.memory", "0 means unlimited to Docker")


@FIXTURE
@given(cpus=st.one_of(st.floats(min_value=1e-300, max_value=0.0099), st.just(1e-10)))
def test_docker_cpus_below_its_least_are_refused(tmp_path: Path, cpus: float) -> None:
    doc = campaign({"name": "box", "backend": "docker", "resources": {"cpus": cpus}})
    refused(tmp_path, doc, "resources.cpus", "means unlimited to Docker")
    neighbour = campaign(neighbours=[{"name": "c", "kind": "cpu", "placement": "docker", "resources": {"cpus": cpus}}])
    refused(tmp_path, neighbour, "neighbours[0].resources.cpus", "means unlimited to Docker")


@FIXTURE
@given(text=st.one_of(zeros, st.sampled_from(["0m", "0Mi", "0.0", "0e5", "0.0001", "0.0009", "500m"])),
       resource=st.sampled_from(["cpu", "memory"]))
def test_a_kubernetes_limit_that_rounds_to_zero_is_refused(tmp_path: Path, text: str, resource: str) -> None:
    if text == "500m" and resource == "cpu":  # half a CPU is a limit; half a byte is not
        text = "0.0005"
    refused(tmp_path, campaign(pod(limits={resource: text})), f"variants.pod.limits.{resource}",
            "0 means unlimited to Kubernetes")


def test_a_neighbours_container_memory_of_zero_is_refused(tmp_path: Path) -> None:
    doc = campaign(neighbours=[{"name": "c", "kind": "cpu", "placement": "docker", "resources": {"memory": "0m"}}])
    refused(tmp_path, doc, "neighbours[0].resources.memory", "0 means unlimited to Docker and Kubernetes")


# --- kind 8: digits that are not ASCII -----------------------------------------------------------------------------

non_ascii_digits = st.characters(categories=["Nd"]).filter(lambda c: c not in "0123456789")
DIGIT_KEYS: list[tuple[str, Any]] = [  # (the key in the refusal, a campaign with `D` where a digit goes)
    ("cpus", lambda d: campaign(variants_override={"cpus": f"0-{d}"})),
    ("client_cpus", lambda d: campaign(variants_override={"client_cpus": d})),
    ("resources.cpuset", lambda d: campaign({"name": "box", "backend": "docker", "resources": {"cpuset": d}})),
    ("resources.memory", lambda d: campaign({"name": "box", "backend": "docker", "resources": {"memory": d + "g"}})),
    ("memory", lambda d: campaign({"name": "v", "backend": "vm", "memory": d + "G"})),
    ("storage_size", lambda d: campaign(pod(storage="pvc", storage_size=d + "Gi"))),
    ("limits.cpu", lambda d: campaign(pod(limits={"cpu": d}))),
    ("neighbours[0].size", lambda d: campaign(neighbours=[{"name": "io", "kind": "disk", "size": d + "M"}])),
    ("neighbours[0].bitrate", lambda d: campaign(neighbours=[{"name": "n", "kind": "network", "bitrate": d + "M"}])),
    ("neighbours[0].cpus", lambda d: campaign(neighbours=[{"name": "c", "kind": "cpu", "cpus": d}])),
    ("neighbours[0].resources.memory", lambda d: campaign(neighbours=[
        {"name": "c", "kind": "cpu", "placement": "docker", "resources": {"memory": d + "m"}}])),
    ("innodb_buffer_pool_size", lambda d: campaign(variants_override={
        "server": {"config": {"innodb_buffer_pool_size": d + "G"}}})),
    ("published", lambda d: campaign(published={"source": "s", "baseline": "b", "size": {"data": d + "G"}})),
]


def _with_override(doc: dict[str, Any]) -> dict[str, Any]:
    """campaign(variants_override=...) sets keys of the host baseline."""
    override = doc.pop("variants_override", None)
    if override:
        doc["variants"][0] = {**doc["variants"][0], **override}
    return doc


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(digit=non_ascii_digits, case=st.sampled_from(DIGIT_KEYS))
def test_a_digit_that_is_not_ascii_is_refused_at_every_key(tmp_path: Path, digit: str, case: Any) -> None:
    key, make = case
    refused(tmp_path, _with_override(make(digit)), key)


# --- kind 8: control characters, merge keys, folders ---------------------------------------------------------------

controls = st.one_of(st.characters(min_codepoint=0x80, max_codepoint=0x9F), st.sampled_from(["\x1b", "\x7f",
                                                                                             "\x07", "\x0d"]))
TEXT_KEYS: list[tuple[str, Any]] = [
    ("description", lambda t: campaign(description=t)),
    ("variants[0].description", lambda t: campaign(variants_override={"description": t})),
    ("published.source", lambda t: campaign(published={"source": t, "baseline": "b"})),
    ("published.baseline", lambda t: campaign(published={"source": "s", "baseline": t})),
]


@FIXTURE
@given(control=controls, before=st.text(alphabet="ab [;0-9m", max_size=8), case=st.sampled_from(TEXT_KEYS))
def test_a_control_character_in_text_for_people_is_refused(tmp_path: Path, control: str, before: str,
                                                           case: Any) -> None:
    key, make = case
    path = tmp_path / "c.yaml"  # the control written as a YAML escape, as a user would
    text = json.dumps(_with_override(make(before + control + "31m")), ensure_ascii=True)
    path.write_text(text.replace("\\u00", "\\x"))
    code, err = validate(path)
    assert_one_line_bad_input(code, err)
    assert key in err and "control character" in err, err


def test_two_merge_keys_in_one_mapping_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: x\nbaseline: base\nvariants: [{name: base, backend: host}]\nworkload:\n"
                    "  <<: {tables: 1}\n  threads: 1\n  <<: {table_size: 100}\n")
    code, err = validate(path)
    assert_one_line_bad_input(code, err)
    assert "line 7: two merge keys (<<) in one mapping" in err
    path.write_text(path.read_text().replace("  <<: {tables: 1}\n  threads: 1\n  <<: {table_size: 100}\n",
                                             "  <<: [{tables: 1}, {table_size: 100}]\n  threads: 1\n"))
    assert validate(path)[0] == 0  # one merge key of both: fine


@FIXTURE
@given(folder=st.sampled_from(["/", "/tmp", "/var"]), slashes=st.integers(1, 3), tail=st.sampled_from(
    ["", "/", "/.", "/./", "/.//", "//"]))
def test_a_work_dir_that_normalises_to_a_refused_folder_is_refused(tmp_path: Path, folder: str, slashes: int,
                                                                   tail: str) -> None:
    work_dir = "/" * slashes + folder.lstrip("/") + tail
    doc = campaign(hosts={"far": {"ssh": "lb@far.example", "work_dir": work_dir}})
    refused(tmp_path, doc, "hosts.far", "" if work_dir == "/" else "give a folder of its own")  # "/": its pattern


@pytest.mark.parametrize("work_dir", ["/tmp/lb", "/var/tmp/layerbench", "//srv/lb/."])
def test_a_work_dir_of_its_own_is_taken(tmp_path: Path, work_dir: str) -> None:
    from layerbench.hosts.inventory import HostEntry

    assert HostEntry.model_validate({"ssh": "lb@far.example", "work_dir": work_dir}).work_dir == work_dir
