"""The campaign file's vocabulary (src/layerbench/vocabulary/): the strict base model, the names, the size
grammars, the CPU lists, the byte formatter and the QoS rule.

Each grammar moved there from the model that used it (issue #45) and kept what it accepts. The `OLD_*` oracles
below are those grammars as they were written before the move; the hypothesis tests feed each field hostile text
(huge numbers and exponents, non-ASCII digits, empty and blank text, whitespace) and check that it accepts and
refuses exactly what its old grammar did, through the field itself, so the wiring is checked too. Where the
grammars differ from each other on such input, a test below says how (docstring of vocabulary/sizes.py).

Issue #44 refuses more, on purpose, and each oracle says where (`ascii`, `zero`, `bounded_quantity` below): digits
that are not ASCII (`٣`, `３`: `\\d` took them, taskset, fio and iperf3 do not), a size a tool reads as "unlimited"
(a Docker memory that is 0 bytes, a neighbour's container memory, fio size, block size or iperf3 bitrate of 0), and
a quantity of more than 19 digits, 9 decimals or a 2-digit exponent, or above 2^63 - 1 (kind 1)."""

from __future__ import annotations

import functools
import re
from decimal import Decimal, InvalidOperation
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError, create_model

from layerbench.backends.docker.qos import qos_options
from layerbench.backends.docker.variant import DockerResources
from layerbench.backends.host.variant import HostVariant
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.backends.variant_base import VariantBase
from layerbench.backends.vm.variant import VMVariant
from layerbench.campaign.models import Campaign, parse_campaign
from layerbench.campaign.published import PublishedSize
from layerbench.campaign.rounds import Adaptive, BusyPolicy
from layerbench.campaign.workload import Workload
from layerbench.errors import BadInput
from layerbench.hosts.inventory import HostEntry
from layerbench.neighbours.model import ContainerSize, Neighbour
from layerbench.server.settings import ServerSettings
from layerbench.vocabulary.base import NAME_RE, Strict
from layerbench.vocabulary.cpus import cpu_list, cpu_set, whole_cpus_problem
from layerbench.vocabulary.limits import MAX_CPU
from layerbench.vocabulary.sizes import byte_text, published_size_bytes, quantity, quantity_text, size_in_bytes

# --- the grammars as they were written before the move (commit 0b80ba7) --------------------------------------------

OLD_SERVER = re.compile(r"\s*(\d{1,15}(?:\.\d{1,6})?)\s*([kmgtpe]?)b?\s*", re.IGNORECASE)  # server/settings.py
OLD_DOCKER_MEMORY = r"\d{1,12}(\.\d{1,6})?[bkmgBKMG]?"  # backends/docker/variant.py, on value.strip()
OLD_QEMU_MEMORY = r"^\d{1,9}[KMGTkmgt]?$"  # backends/vm/variant.py, a pydantic pattern
OLD_CONTAINER_MEMORY = r"^\d{1,7}[kmg]$"  # neighbours/model.py MEMORY_RE, a pydantic pattern (max_length 12)
OLD_TOOL_SIZE = re.compile(r"^(\d{1,7})([KMG])$")  # neighbours/model.py SIZE_RE and RATE_RE
OLD_PUBLISHED = re.compile(r"(\d{1,6}(?:\.\d{1,3})?)\s?([KMGT])i?B?")  # campaign/published.py, on text.strip()
OLD_K8S_STORAGE = r"^\d{1,9}(Ki|Mi|Gi|Ti|k|M|G|T)?$"  # backends/kubernetes/variant.py, a pydantic pattern
OLD_QUANTITY = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?\s*")
OLD_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
              "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "m": Decimal("0.001")}
OLD_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"  # backends/variant_base.py, neighbours/model.py, hosts/inventory.py
OLD_NEIGHBOUR_HOST = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"  # neighbours/model.py `host:`, max_length 63


def ascii(value: Any) -> bool:
    """No digit but ASCII ones: since issue #44 a grammar takes [0-9], not `\\d` (every Unicode decimal digit)."""
    return not isinstance(value, str) or not any(c.isdecimal() and c not in "0123456789" for c in value)


def zero(text: str) -> bool:
    """A tool size or container memory whose number is 0 (all digits, the suffix after them)."""
    digits = text.rstrip("KMGkmg")
    return digits.isdigit() and int(digits) == 0


BOUNDED_QUANTITY = re.compile(r"\s*[0-9]{1,19}(\.[0-9]{1,9})?([eE][+-]?[0-9]{1,2})?\s*[A-Za-z]{0,2}\s*")


def bounded_quantity(text: str, value: Decimal) -> bool:
    """Kind 1 of issue #44: what of the old quantity grammar's values the bounded one keeps."""
    return len(text) <= 64 and BOUNDED_QUANTITY.fullmatch(text) is not None and value <= 2**63 - 1


def old_size_in_bytes(value: Any) -> int | None:
    """server/settings.py size_in_bytes: a number of bytes below 2^63, or text of OLD_SERVER."""
    if isinstance(value, str):
        match = OLD_SERVER.fullmatch(value)
        return int(float(match[1]) * 1024 ** "bkmgtpe".index(match[2].lower() or "b")) if match else None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return int(value) if number and 0 <= value < 2**63 else None  # NaN and infinities compare False


def old_quantity(text: str) -> Decimal | str:
    """The value, or what happened: 'refused' (ValueError) or 'overflow' (decimal.Overflow escaped)."""
    match = OLD_QUANTITY.fullmatch(str(text))
    if not match:
        return "refused"
    try:
        return Decimal(match.group(1)) * Decimal(OLD_SUFFIX[match.group(2) or ""])
    except InvalidOperation:
        return "refused"
    except ArithmeticError:
        return "overflow"


def old_cpu_list(value: Any, digits: int, highest: int | None) -> str:
    """A variant's (backends/variant_base.py VariantBase._cpu_list: 5 digits, CPUs up to MAX_CPU) or a neighbour's
    (neighbours/model.py cpu_list: 4 digits, no bound) list, or the message of its refusal."""
    if value is None:
        return "None"
    ok = isinstance(value, str | int) and not isinstance(value, bool)
    text = str(value).replace(" ", "") if ok else ""
    number = rf"\d{{1,{digits}}}"
    if len(text) > 200 or not re.fullmatch(rf"{number}(-{number})?(,{number}(-{number})?)*", text):
        return "is not a CPU list"
    for part in text.split(","):
        low, _, high = part.partition("-")
        if (highest is not None and int(high or low) > highest) or int(high or low) < int(low):
            return "is not a CPU range; write low-high" + ("" if highest is None else f" with CPUs up to {highest}")
    return text


def old_human_bytes(size: float) -> str:  # cli/maintenance.py before
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


@functools.cache
def pattern_model(pattern: str, max_length: int | None = None) -> type[BaseModel]:
    """A field with an old pydantic pattern: the same regex engine as the field it is compared with."""
    return create_model("Old", value=(str, Field(pattern=pattern, max_length=max_length)))


def accepts(model: type[BaseModel], data: dict[str, Any]) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


# --- hostile text ---------------------------------------------------------------------------------------------------

NON_ASCII_DIGITS = "٣３१๕"  # Arabic-Indic, fullwidth, Devanagari, Thai: Unicode decimal digits (Nd)
SPACES = " \t\n\u00a0\u2003"
SIZE_ALPHABET = "0123456789" + NON_ASCII_DIGITS + SPACES + ".,-+eEbBiKkMmGgTtPp%\u212a"  # U+212A: the Kelvin sign
hostile = st.one_of(
    st.text(alphabet=SIZE_ALPHABET, max_size=14),
    st.from_regex(r"\A[0-9]{1,20}(\.[0-9]{1,9})?[eE][+-]?[0-9]{1,12}(Ki|Mi|Gi|k|M|G|E|m)?\Z"),  # huge exponents
    st.from_regex(r"\A[0-9]{13,40}[KMGTkmgtb]?\Z"),  # more digits than any grammar takes
    st.sampled_from(["", " ", "\n", "2G\n", " 2G", "2 G", "2g ", "２g", "٣G", "1e999999999", "0", "0G", "0.0G"]),
    st.text(max_size=10),
)


# --- the strict base model and the names ------------------------------------------------------------------------------

def test_every_mapping_of_the_campaign_file_is_strict() -> None:
    for model in (Campaign, Workload, Adaptive, BusyPolicy, VariantBase, DockerResources, ServerSettings, Neighbour,
                  ContainerSize, HostEntry, PublishedSize):
        assert issubclass(model, Strict), model
    assert Strict.model_config == {"extra": "forbid", "frozen": True, "allow_inf_nan": False}


def test_the_inventory_refuses_an_unknown_key_as_before() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        HostEntry.model_validate({"local": True, "lokal": True})


@given(st.one_of(st.text(alphabet="aZ09_.-/ é\n", max_size=70), st.text(max_size=8)))
def test_every_name_takes_what_its_pattern_took(name: str) -> None:
    old = re.fullmatch(OLD_NAME, name) is not None and not name.endswith("\n")
    assert NAME_RE == OLD_NAME
    assert accepts(Workload, {"name": name}) == accepts(pattern_model(OLD_NAME), {"value": name})
    neighbour = {"name": "n", "kind": "cpu", "placement": "ssh", "host": name}
    assert accepts(Neighbour, neighbour) == accepts(pattern_model(OLD_NEIGHBOUR_HOST, 63), {"value": name})
    assert accepts(Neighbour, {"name": name, "kind": "cpu"}) == old == accepts(pattern_model(OLD_NAME), {"value": name})


# --- the size grammars ------------------------------------------------------------------------------------------------

@given(st.one_of(hostile, st.integers(), st.floats(), st.booleans(), st.none()))
def test_size_in_bytes_reads_what_it_read(value: Any) -> None:
    old = old_size_in_bytes(value)
    assert size_in_bytes(value) == (old if ascii(value) and (old or 0) < 2**63 else None)  # issue #44


def check_size_fields(text: str) -> None:
    """Each size field of the campaign file takes `text` exactly when its old grammar did."""
    ok = ascii(text)  # issue #44: only ASCII digits; and no size a tool reads as unlimited (zero)
    old_docker = re.fullmatch(OLD_DOCKER_MEMORY, text.strip()) is not None
    docker_bytes = old_size_in_bytes(text.strip()) if old_docker else None
    docker = text.isascii() and docker_bytes is not None and 0 < docker_bytes < 2**63  # issue #44: ASCII only
    assert accepts(DockerResources, {"memory": text}) == docker
    vm = {"name": "v", "backend": "vm", "memory": text}
    assert accepts(VMVariant, vm) == (accepts(pattern_model(OLD_QEMU_MEMORY), {"value": text}) and ok)
    old_container = accepts(pattern_model(OLD_CONTAINER_MEMORY, 12), {"value": text})
    assert accepts(ContainerSize, {"memory": text}) == (old_container and ok and not zero(text))
    tool = OLD_TOOL_SIZE.fullmatch(text) is not None and len(text) <= 12 and ok and not zero(text)
    assert accepts(Neighbour, {"name": "n", "kind": "disk", "size": text}) == tool
    assert accepts(Neighbour, {"name": "n", "kind": "network", "bitrate": text}) == tool
    k8s = {"name": "k", "backend": "kubernetes", "storage": "pvc", "storage_size": text}
    assert accepts(KubernetesVariant, k8s) == (accepts(pattern_model(OLD_K8S_STORAGE), {"value": text}) and ok)
    match = OLD_PUBLISHED.fullmatch(text.strip())
    old_published = old_size_in_bytes(match.group(1) + match.group(2)) or 0 if match and ok else 0
    assert published_size_bytes(text) == old_published
    assert accepts(PublishedSize, {"data": text}) == (old_published != 0)
    old_bytes = old_size_in_bytes(text)
    assert size_in_bytes(text) == (old_bytes if ok and (old_bytes or 0) < 2**63 else None)


@given(hostile)
def test_each_size_field_takes_what_its_grammar_took(text: str) -> None:
    check_size_fields(text)


UNITS = ["", "b", "B", "k", "K", "m", "M", "g", "G", "t", "T", "p", "P", "e", "E", "Ki", "Mi", "Gi", "Ti", "Pi",
         "KiB", "GiB", "GB", "kb", "mb", "ib", "iB", "%"]


@pytest.mark.parametrize("digits", range(1, 17))
def test_each_size_field_at_the_bounds_of_its_digits(digits: int) -> None:
    """Every count of digits a grammar bounds, with and without decimals, spaces and each suffix."""
    for number in ("9" * digits, "٣" * digits):
        for decimals in ("", ".125", ".1234", ".1234567"):
            for unit in UNITS:
                size = f"{number}{decimals}"
                for text in (f"{size}{unit}", f" {size} {unit} ", f"{size}{unit}\n"):
                    check_size_fields(text)


@given(hostile)
def test_a_quantity_is_read_as_it_was(text: str) -> None:
    old = old_quantity(text)
    if old in ("refused", "overflow") or not bounded_quantity(text, old):  # type: ignore[arg-type]
        # overflow: it escaped as decimal.Overflow; now it is refused, as is any quantity past the bounds
        with pytest.raises(ValueError, match=r"is not a Kubernetes quantity|is more than Kubernetes holds"):
            quantity(text)
    else:
        assert quantity(text) == old


def test_where_the_grammars_differ_on_hostile_input() -> None:
    """Each line is a difference between today's grammars, kept: vocabulary/sizes.py's docstring says why."""
    # non-ASCII digits: refused by every grammar since issue #44 (each took them as `\d`, but the quantity)
    assert size_in_bytes("２g") is None and size_in_bytes("٣G") is None
    assert not accepts(DockerResources, {"memory": "２g"}) and not accepts(VMVariant, {"name": "v", "backend": "vm",
                                                                                    "memory": "٣G"})
    assert published_size_bytes("٣G") == 0
    with pytest.raises(ValueError):
        quantity("٣")
    # whitespace: taken around a size by the server's reading, Docker's memory (ASCII, stripped), the published
    # sizes and the quantity; by no other grammar, not even a trailing newline
    assert size_in_bytes(" 2 g ") == 2 << 30 and quantity(" 2Gi\n") == 2 << 30
    assert DockerResources.model_validate({"memory": " 2g "}).memory == "2g"  # stripped since issue #44
    assert not accepts(DockerResources, {"memory": "\u20032g"})  # and ASCII only: Docker took it as it was
    assert published_size_bytes(" 2 G ") == 2 << 30
    assert not accepts(VMVariant, {"name": "v", "backend": "vm", "memory": "2G\n"})
    assert not accepts(Neighbour, {"name": "n", "kind": "disk", "size": "64M "})
    # empty text: refused by all
    assert size_in_bytes("") is None and published_size_bytes("") == 0 and not accepts(DockerResources,
                                                                                          {"memory": ""})
    # case: the server's reading takes either; a neighbour's container memory lower case only, its tool sizes upper
    # case only; a study's sizes upper case
    assert size_in_bytes("2G") == size_in_bytes("2g")
    assert accepts(ContainerSize, {"memory": "512m"}) and not accepts(ContainerSize, {"memory": "512M"})
    assert not accepts(Neighbour, {"name": "n", "kind": "disk", "size": "64m"})
    assert published_size_bytes("2.3g") == 0
    # huge numbers: the server's reading bounds a number it is given, and since issue #44 one it reads from text
    assert size_in_bytes(2**63) is None and size_in_bytes("999999999999999E") is None
    # a bare number: bytes to the server's reading, MiB to QEMU (the VM's memory: its own grammar)
    assert size_in_bytes("2048") == 2048 and accepts(VMVariant, {"name": "v", "backend": "vm", "memory": "4096"})


def test_a_huge_exponent_is_not_a_quantity() -> None:
    """1e999999999 escaped as decimal.Overflow: a traceback from `validate` instead of a one-line refusal."""
    with pytest.raises(ValueError, match="'1e999999999' is not a Kubernetes quantity"):
        quantity("1e999999999")
    with pytest.raises(ValueError, match="with at most 19 digits, 9 decimals and a 2-digit exponent"):
        quantity("1e-999999999")  # issue #44: read as 0 before; no exponent of more than 2 digits now
    data = {"name": "q", "baseline": "pod", "workload": {}, "variants": [
        {"name": "pod", "backend": "kubernetes", "qos": "burstable", "limits": {"memory": "1e999999999"}}]}
    with pytest.raises(BadInput, match=r"variants\.pod\.limits\.memory: '1e999999999' is not a Kubernetes quantity"):
        parse_campaign(data)


def test_quantities_are_written_back_as_kubernetes_writes_them() -> None:
    assert quantity_text(Decimal("1.5"), "cpu") == "1.5" and quantity_text(Decimal(2), "cpu") == "2"
    assert quantity_text(Decimal(3841 << 20), "memory") == "3841Mi"


# --- CPU lists --------------------------------------------------------------------------------------------------------

cpu_texts = st.one_of(st.text(alphabet="0123456789,- " + NON_ASCII_DIGITS + "\t", max_size=16),
                      st.from_regex(r"\A[0-9]{1,6}(-[0-9]{1,6})?\Z"), st.integers(-5, 20_000), st.booleans(),
                      st.none(), st.floats(0, 4))


def refusal(call: Any) -> str:
    try:
        return str(call())
    except ValueError as error:
        return str(error)


@given(cpu_texts)
def test_a_variants_cpu_list_is_what_it_was(value: Any) -> None:
    old = old_cpu_list(value, digits=5, highest=MAX_CPU) if ascii(value) else "is not a CPU list"  # issue #44
    assert old in refusal(lambda: cpu_list(value))
    host = {"name": "v", "backend": "host", "cpus": value}
    assert accepts(HostVariant, host) == (old == "None" or "not a CPU" not in old)
    assert accepts(DockerResources, {"cpuset": value}) == (old == "None" or "not a CPU" not in old)


@given(cpu_texts)
def test_a_neighbours_cpu_list_is_what_it_was(value: Any) -> None:
    old = old_cpu_list(value, digits=4, highest=None) if ascii(value) else "is not a CPU list"  # issue #44
    assert old in refusal(lambda: cpu_list(value, digits=4, highest=None))
    assert accepts(Neighbour, {"name": "n", "kind": "cpu", "cpus": value}) == (old == "None" or "not a CPU" not in old)


def test_where_the_two_cpu_lists_differ() -> None:
    """A variant's CPUs have up to 5 digits and go up to MAX_CPU; a neighbour's up to 4 digits, with no bound."""
    assert refusal(lambda: cpu_list("4096")).endswith("is not a CPU range; write low-high with CPUs up to 4095")
    assert cpu_list("4096", digits=4, highest=None) == "4096"
    assert cpu_list("01234") == "01234" and "is not a CPU list" in refusal(lambda: cpu_list("01234", digits=4,
                                                                                           highest=None))
    assert refusal(lambda: cpu_list("3-1", digits=4, highest=None)).endswith("is not a CPU range; write low-high")
    assert "is not a CPU list" in refusal(lambda: cpu_list("٣"))  # non-ASCII digits: refused since issue #44


def test_cpu_set_reads_a_list() -> None:
    assert cpu_set("0") == {0} and cpu_set("0,2-4") == {0, 2, 3, 4} and cpu_set("1, 3") == {1, 3}


# --- the byte formatter -----------------------------------------------------------------------------------------------

@given(st.one_of(st.integers(0, 2**70), st.floats(0, 2**70, allow_nan=False)))
def test_byte_text_is_each_formatter_it_replaced(size: float) -> None:
    assert byte_text(size, "auto", ".1f") == old_human_bytes(size)  # cli/maintenance.py human_bytes, before
    assert byte_text(size) == f"{size / 2**30:.2f} GiB"  # run/diskspace.py gib, and the inline GiB of the backends
    assert byte_text(size, spec=".1f") == f"{size / 2**30:.1f} GiB"  # preflight, the Markdown report
    assert byte_text(size, "MiB", ".0f") == f"{size / 2**20:.0f} MiB"
    assert byte_text(size, "MiB", ",.0f") == f"{size / 2**20:,.0f} MiB"
    whole = int(size) >> 20 << 20
    assert byte_text(whole, "MiB", ".0f") == f"{whole >> 20} MiB"  # the `>> 20` of a whole number of MiB


def test_byte_text_examples() -> None:
    assert byte_text(512, "auto", ".1f") == "512 B" and byte_text(1536, "auto", ".1f") == "1.5 KiB"
    assert byte_text(3 << 40, "auto", ".1f") == "3.0 TiB" and byte_text(5 << 50, "auto", ".1f") == "5120.0 TiB"
    assert byte_text(3 << 29) == "1.50 GiB" and byte_text(768 << 20, "MiB", ".0f") == "768 MiB"


# --- the QoS presets' rule ----------------------------------------------------------------------------------------

def test_guaranteed_pinned_needs_whole_cpus_in_a_container_and_in_a_neighbour() -> None:
    said = "resources.cpus: 1.5 is not a whole number; guaranteed-pinned needs whole CPUs"
    assert whole_cpus_problem("guaranteed-pinned", 1.5) == said
    assert whole_cpus_problem("guaranteed-pinned", 2.0) is None and whole_cpus_problem("guaranteed", 1.5) is None
    assert whole_cpus_problem("guaranteed-pinned", None) is None
    with pytest.raises(BadInput) as docker:
        qos_options("guaranteed-pinned", 1.5, "2g", None)
    with pytest.raises(ValidationError) as neighbour:
        Neighbour.model_validate({"name": "n", "kind": "cpu", "placement": "docker", "qos": "guaranteed-pinned",
                                  "resources": {"cpus": 1.5}})
    assert str(docker.value) == said and said in str(neighbour.value)
