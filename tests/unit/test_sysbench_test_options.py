"""sysbench options that change the test itself (issue #44, kind 6): `test` (sysbench 1.0 runs the script --test
names instead of the workload's), `help` and `version` (it prints and exits) are layerbench's; an option neither a
bundled test nor sysbench has is refused at validate as sysbench refuses it at prepare; a library the tests
`require` (oltp_common) is no test, and validate's list of tests no longer offers it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.test_hostile_inputs import assert_one_line_bad_input, validate

from layerbench.campaign.models import Workload
from layerbench.errors import BadInput
from layerbench.run.preflight import SYSBENCH_SHARE, builtin_tests, check_test
from layerbench.sysbench.custom_script import builtin_facts, sysbench_options

pytestmark = pytest.mark.skipif(shutil.which("sysbench") is None, reason="needs sysbench")
TEST = "oltp_read_only"


def campaign(tmp_path: Path, **workload: object) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({
        "name": "opts", "baseline": "base", "output": str(tmp_path / "out"), "variants": [
            {"name": "base", "backend": "host"}], "workload": {"tables": 1, "table_size": 100, "threads": 1,
                                                               "duration": 1, "warmup": 0, **workload}}))
    return path


def validate_takes(name: str) -> bool:
    """Whether the campaign model and validate's check of the test take `options: {name: 1}`."""
    try:
        check_test(Workload(test=TEST, options={name: 1}))
    except (BadInput, ValueError):  # ValueError: the model's own refusal (an owned option)
        return False
    return True


def sysbench_takes(name: str) -> bool:
    """Whether sysbench runs the test's own script with `--name=1`, as layerbench writes the option."""
    flag = f"--{name.replace('_', '-')}=1"
    done = subprocess.run(["sysbench", TEST, flag, "help"], capture_output=True, text=True, timeout=60, check=False)
    said = done.stdout + done.stderr
    return "invalid option" not in said and "--test option is deprecated" not in said and f"{TEST} options" in said


def names() -> list[str]:
    declared = builtin_facts(SYSBENCH_SHARE / f"{TEST}.lua", "t").options or frozenset()
    return sorted(declared | sysbench_options() | {"test", "help", "version"})


@st.composite
def spellings(draw: st.DrawFn) -> str:
    """A name of the test's or sysbench's, cut short, with `-` or `_`, in any case; or any option-like text."""
    name = draw(st.sampled_from(names()))
    name = name[:draw(st.integers(max(2, len(name) - 3), len(name)))]
    name = "".join(c.upper() if c.isalpha() and draw(st.integers(0, 7)) == 0 else c for c in name)
    return draw(st.sampled_from([name, name.replace("-", "_"), name.replace("_", "-")]) | st.from_regex(
        r"[a-z][a-z0-9_]{1,12}", fullmatch=True))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spellings())
def test_an_option_validate_takes_is_one_sysbench_runs_the_test_with(name: str) -> None:
    """Never valid at validate and then refused by sysbench (or run as another test): what validate takes,
    sysbench takes for the workload's own script (validate refuses more: the options layerbench owns)."""
    if validate_takes(name):
        assert sysbench_takes(name), name
    if not sysbench_takes(name):
        assert not validate_takes(name), name


@pytest.mark.parametrize(("options", "words"), [
    ({"test": "cpu"}, "sysbench's --test belongs to layerbench; sysbench 1.0 runs the script --test names"),
    ({"Test": "oltp_delete"}, "--test belongs to layerbench"),
    ({"help": True}, "sysbench prints its help and exits instead of running the test"),
    ({"version": True}, "sysbench prints its version and exits"),
    ({"point_selcts": 4}, "workloads.default.options.point_selcts: neither the script nor sysbench has this option"),
    ({"POINT_SELECTS": 4}, "workloads.default.options.POINT_SELECTS: neither the script nor sysbench"),
])
def test_an_option_that_changes_the_test_or_that_sysbench_refuses_is_one_line(tmp_path: Path, options: dict,
                                                                              words: str) -> None:
    code, err = validate(campaign(tmp_path, test=TEST, options=options))
    assert_one_line_bad_input(code, err)
    assert words in err, err


def test_a_library_of_the_tests_is_no_test(tmp_path: Path) -> None:
    assert "oltp_common" not in builtin_tests() and TEST in builtin_tests()
    for test in ("oltp_common", str(SYSBENCH_SHARE / "oltp_common.lua")):
        code, err = validate(campaign(tmp_path, test=test))
        assert_one_line_bad_input(code, err)
        assert "defines no event(), so it is a library that tests require, not a test sysbench can run" in err, err
        assert "oltp_common" not in err.split("use one of", 1)[1]
    code, err = validate(campaign(tmp_path, test="oltp_comon"))
    assert "is not a sysbench test; use one of oltp_" in err and "oltp_common," not in err, err


def test_a_script_of_the_user_s_without_event_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "lib.lua"
    script.write_text('sysbench.cmdline.options = {tables = {"t", 1}, table_size = {"s", 1}}\n'
                      'function prepare() end\n')
    code, err = validate(campaign(tmp_path, test=str(script)))
    assert_one_line_bad_input(code, err)
    assert err.startswith("error: workloads.default.test: '") and "lib.lua' defines no event()" in err, err


def test_bulk_insert_is_refused_with_why(tmp_path: Path) -> None:
    """Its prepare makes empty tables, which no restored dataset of rows is: every run failed before (#46)."""
    code, err = validate(campaign(tmp_path, test="bulk_insert"))
    assert_one_line_bad_input(code, err)
    assert "workloads.default.test: bulk_insert is not a test layerbench runs: its prepare makes empty tables" in err
    assert "use oltp_insert" in err, err
