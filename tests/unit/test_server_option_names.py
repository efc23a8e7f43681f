"""server.config names as the server resolves them (issue #44, kind 5): a whole option name, or on MariaDB an
unambiguous prefix; a prefix of several options (`innodb_buffer_pool`), which mariadbd refuses as ambiguous and then
disables InnoDB, is refused at validate, also behind `loose-`; MySQL takes whole names only. Each verdict is checked
against this machine's mariadbd itself (`--verbose --help` parses the options without starting a server)."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.test_hostile_inputs import assert_one_line_bad_input, validate

from layerbench.server.mycnf import HELP_ARGS, parse_server_options, resolve_option

MARIADBD = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin:/sbin")
pytestmark = pytest.mark.skipif(MARIADBD is None, reason="needs this machine's mariadbd")


@functools.cache
def known() -> frozenset[str]:
    done = subprocess.run([str(MARIADBD), *HELP_ARGS], capture_output=True, text=True, timeout=120, check=False)
    return parse_server_options(done.stdout)


def server_verdict(name: str) -> str:
    """What mariadbd itself says of `--name=1`: ambiguous, unknown or taken (other errors, like a flag given a
    value, are not about the name)."""
    done = subprocess.run([str(MARIADBD), "--no-defaults", f"--{name}=1", "--verbose", "--help"],
                          capture_output=True, text=True, timeout=120, check=False)
    if re.search(r"\[ERROR\] .*(ambiguous option|is not unique)", done.stderr):
        return "ambiguous"
    if re.search(r"\[ERROR\] .*unknown (option|variable)", done.stderr):  # loose-: a [Warning] only
        return "unknown"
    return "taken"


def verdict(name: str) -> str:
    resolved = resolve_option(name, known())
    if len(resolved.matches) > 1:
        return "ambiguous"
    return "taken" if resolved.matches or resolved.loose else "unknown"


@pytest.mark.parametrize(("name", "expected"), [
    ("innodb_buffer_pool", "ambiguous"),  # the case: mariadbd disables InnoDB
    ("innodb-buffer-pool-si", "ambiguous"),  # innodb-buffer-pool-size and innodb-buffer-pool-size-max
    ("loose-innodb-buffer-pool", "ambiguous"),  # loose- does not make an ambiguous prefix harmless
    ("innodb_buffer_pool_size", "taken"),  # a whole name, though it also begins innodb-buffer-pool-size-max
    ("INNODB_Buffer_Pool_Size", "taken"),
    ("innodb_buffer_pool_size_m", "taken"),  # an unambiguous prefix, as docs/validate.md says
    ("skip-innodb-file-per-table", "taken"),
    ("plugin-innodb-buffer-pool-size", "taken"),
    ("skip-name-resolve", "taken"),
    ("name-resolve", "unknown"),  # only skip-name-resolve is an option
    ("innodb_bufer_pool_size", "unknown"),
    ("loose-no-such-option-here", "taken"),  # mariadbd warns and goes on
    ("wsrep_slave_FK_checks", "taken"),  # --help lists it with capitals: read whole, not cut at the first one
    ("wsrep-", "ambiguous"),  # hypothesis's find: a prefix of every wsrep option, once taken as one cut short
])
def test_a_name_is_read_as_mariadbd_reads_it(name: str, expected: str) -> None:
    assert verdict(name) == expected
    assert server_verdict(name) == expected, f"mariadbd reads {name} otherwise"


PREFIXES = st.sampled_from(["", "", "", "loose-", "skip-", "enable-"])


@st.composite
def option_spellings(draw: st.DrawFn) -> str:
    """A prefix (at least 6 characters) of an option mariadbd lists, with `_` for `-` here and there and any case."""
    option = draw(st.sampled_from(sorted(o for o in known() if len(o) > 6 and o not in ("help", "version"))))
    cut = draw(st.integers(6, len(option)))
    text = "".join(c.upper() if draw(st.booleans()) and c.isalpha() else c for c in option[:cut])
    return draw(PREFIXES) + text.replace("-", "_" if draw(st.booleans()) else "-")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(option_spellings())
def test_what_validate_takes_mariadbd_takes(name: str) -> None:
    """Never called valid and then refused by the server: a name validate takes is one mariadbd takes, and one
    mariadbd calls ambiguous or unknown validate refuses (validate may refuse more: mariadbd's first pass takes
    some prefixes of two of its own options silently)."""
    if verdict(name) == "taken":
        assert server_verdict(name) == "taken", name
    else:
        assert verdict(name) != "taken"


def test_validate_refuses_an_ambiguous_prefix_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({
        "name": "prefix", "baseline": "base", "output": str(tmp_path / "out"),
        "variants": [{"name": "base", "backend": "host", "server": {"config": {"innodb_buffer_pool": "256M"}}}],
        "workload": {"tables": 1, "table_size": 100, "threads": 1, "duration": 1, "warmup": 0}}))
    code, err = validate(path)
    assert_one_line_bad_input(code, err)
    assert err.startswith("error: variants.base.server.config.innodb_buffer_pool: the server (mariadbd) reads this "
                          "as the start of "), err
    assert "innodb-buffer-pool-size" in err and "write the option's full name" in err


def test_a_server_without_prefix_matching_takes_whole_names_only() -> None:
    """MySQL 5.7 and later: no getopt-prefix-matching in its --help, and no prefix of a name."""
    mysql = frozenset({"innodb-buffer-pool-size", "skip-name-resolve", "max-connections"})
    assert resolve_option("innodb_buffer_pool_size", mysql).matches == ("innodb-buffer-pool-size",)
    assert resolve_option("innodb_buffer_pool_si", mysql).matches == ()
    assert resolve_option("max_conn", mysql).matches == ()
    assert resolve_option("loose-max-conn", mysql).loose
    assert resolve_option("innodb_buffer_pool_si", mysql | {"getopt-prefix-matching"}).matches == (
        "innodb-buffer-pool-size",)
