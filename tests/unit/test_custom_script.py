"""A user's own Lua script: the options it declares (read by real sysbench), the dataset flags and the command
lines it gets, LUA_PATH in every step, the checks validate makes, and the dataset key of its data."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.campaign.models import parse_campaign
from layerbench.campaign.workload import Workload, smoke_dataset
from layerbench.errors import BadInput
from layerbench.server.snapshot import dataset_key
from layerbench.sysbench.command import cleanup_argv, hook_script, prepare_argv, run_argv
from layerbench.sysbench.custom_script import (
    check_script,
    dataset_flags,
    dataset_label,
    declared_options,
    lua_path,
    parse_probe,
    script_digest,
)

MODULE = 'local m = {}\nfunction m.name(n) return "kv" .. n end\nreturn m\n'
EVENTS = "function prepare() end\nfunction cleanup() end\nfunction event() end\n"


def script(folder: Path, options: str | None, *, body: str = EVENTS, name: str = "main.lua") -> Path:
    """A main script that requires its sibling module `kvmod`; `options`: its sysbench.cmdline.options (Lua)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kvmod.lua").write_text(MODULE, encoding="utf-8")
    declared = f"sysbench.cmdline.options = {options}\n" if options is not None else ""
    path = folder / name
    path.write_text(f'local kvmod = require("kvmod")\n{declared}{body}', encoding="utf-8")
    return path


ALL = '{tables = {"t", 1}, table_size = {"s", 10}, groups = {"g", 3}}'


def test_declared_options_are_read_by_sysbench_with_the_sibling_module_found(tmp_path: Path) -> None:
    w = Workload(test=str(script(tmp_path, ALL)))
    assert declared_options(w) == {"tables", "table_size", "groups"}
    assert dataset_flags(w) == ("tables", "table_size")


def test_a_script_that_declares_nothing_gets_no_dataset_flags_unless_told(tmp_path: Path) -> None:
    path = str(script(tmp_path, None))
    assert declared_options(Workload(test=path)) is None
    assert dataset_flags(Workload(test=path)) == ()
    assert dataset_flags(Workload(test=path, dataset_flags="always")) == ("tables", "table_size")
    check_script(Workload(test=path, tables=3, dataset_flags="always"))  # sysbench accepts any option then


def test_each_dataset_flag_only_where_declared(tmp_path: Path) -> None:
    """Percona's tpcc.lua declares `tables` but no `table_size`: only --tables, or sysbench refuses the run."""
    w = Workload(test=str(script(tmp_path, '{tables = {"t", 1}, scale = {"s", 1}}')), tables=3,
                 options={"scale": 2})
    assert dataset_flags(w) == ("tables",)
    cmd = prepare_argv(w, tmp_path / "cfg", 2)
    assert "--tables=3" in cmd and not any(a.startswith("--table-size") for a in cmd) and "--scale=2" in cmd
    assert dataset_flags(w.model_copy(update={"dataset_flags": "never"})) == ()


def test_an_empty_options_table_declares_none_and_takes_no_flag(tmp_path: Path) -> None:
    w = Workload(test=str(script(tmp_path, "{}")))
    assert declared_options(w) == frozenset() and dataset_flags(w) == ()


def test_a_script_built_on_oltp_common_loads_and_declares_its_options(tmp_path: Path) -> None:
    """oltp_common.lua refuses to load without a command: the probe loads under `help`, as sysbench lists options."""
    path = tmp_path / "mine.lua"
    path.write_text('require("oltp_common")\nsysbench.cmdline.options.extra = {"x", 1}\nfunction event() end\n')
    declared = declared_options(Workload(test=str(path)))
    assert declared is not None and {"tables", "table_size", "extra", "range_size"} <= declared


def test_a_script_that_fails_to_load_is_one_line_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "broken.lua"
    path.write_text('local x = require("no_such_module_here")\n')
    with pytest.raises(BadInput) as error:
        declared_options(Workload(name="w", test=str(path)))
    message = str(error.value)
    assert message.startswith("workloads.w.test: ") and "no_such_module_here" in message and "\n" not in message


def test_the_commands_of_a_script_put_its_folder_on_lua_path(tmp_path: Path) -> None:
    path = script(tmp_path / "kv", ALL)
    w = Workload(test=str(path), tables=2, table_size=50, options={"groups": 7, "verbose_log": True})
    expected = ["env", f"LUA_PATH={tmp_path}/kv/?.lua;{tmp_path}/kv/?/init.lua;;", "sysbench"]
    prepare, cleanup = prepare_argv(w, tmp_path / "cfg", 2), cleanup_argv(w, tmp_path / "cfg")
    run = run_argv(w, tmp_path / "cfg", tmp_path / "hook.lua", 4)
    for cmd in (prepare, cleanup, run):
        assert cmd[:3] == expected
        assert {"--tables=2", "--table-size=50", "--groups=7", "--verbose-log=on"} <= set(cmd)
    assert prepare[-1] == "prepare" and str(path) in prepare and cleanup[-1] == "cleanup" and run[-1] == "run"
    assert dataset_label(w) == "a dataset of its own (prepare --tables=2 --table-size=50 --groups=7 --verbose-log=on)"


def test_a_builtin_test_keeps_its_command_line() -> None:
    w = Workload(tables=3, table_size=100)
    cmd = prepare_argv(w, Path("/c"), 2)
    assert cmd[0] == "sysbench" and cmd[2:5] == ["/usr/share/sysbench/oltp_read_write.lua", "--tables=3",
                                                 "--table-size=100"]
    assert dataset_label(w) == "3 x 100 rows"


def test_the_hook_finds_the_script_and_its_sibling_without_lua_path(tmp_path: Path) -> None:
    """Real sysbench on the generated hook, LUA_PATH unset and another working folder: the module beside the
    script loads (the hook puts the script's folder first), and a copy of a share module there wins."""
    folder = tmp_path / "w"
    path = script(folder, ALL, body=EVENTS + 'io.write("OLTP=", require("oltp_common").mine or "share", "\\n")\n')
    (folder / "oltp_common.lua").write_text('return {mine = "beside"}\n')
    hook = tmp_path / "hook.lua"
    hook.write_text(hook_script(Workload(test=str(path))))
    done = subprocess.run(["sysbench", str(hook), "help"], capture_output=True, text=True, cwd="/", check=False,
                          env={"PATH": "/usr/bin:/bin"})
    assert "OLTP=beside" in done.stdout, done.stdout + done.stderr


def test_lua_path_keeps_the_default_path() -> None:
    assert lua_path(Path("/a/b/main.lua")) == "/a/b/?.lua;/a/b/?/init.lua;;"


def test_validate_refuses_a_dataset_field_the_script_would_not_get(tmp_path: Path) -> None:
    path = str(script(tmp_path, '{groups = {"g", 3}}'))
    check_script(Workload(test=path, options={"groups": 4}))
    with pytest.raises(BadInput, match=r"^workloads.default.table_size: set, but the script does not get "
                                       r"--table-size \(it does not declare table_size; dataset_flags: auto\)"):
        check_script(Workload(test=path, table_size=500))
    with pytest.raises(BadInput, match=r"^workloads.default.dataset_flags: always passes --tables, which the "
                                       "script does not declare"):
        check_script(Workload(test=path, dataset_flags="always"))


def test_validate_refuses_a_folder_lua_path_cannot_carry(tmp_path: Path) -> None:
    path = str(script(tmp_path / "a;b", ALL))
    with pytest.raises(BadInput, match=r"holds ';' or '\?', which LUA_PATH cannot carry"):
        check_script(Workload(test=path))


def test_a_folder_with_too_many_lua_files_is_refused(tmp_path: Path) -> None:
    path = script(tmp_path, ALL)
    for i in range(201):
        (tmp_path / f"m{i}.lua").write_text("return {}\n")
    with pytest.raises(BadInput, match=r"^workloads.default.test: the script's folder .* holds more than a workload"):
        script_digest(Workload(test=str(path)))


def test_dataset_flags_on_a_builtin_test_is_one_line() -> None:
    data = {"name": "c", "baseline": "v", "variants": [{"name": "v", "backend": "host"}],
            "workload": {"dataset_flags": "never"}}
    with pytest.raises(BadInput, match=r"^workloads.default.dataset_flags: oltp_read_write is a built-in test"):
        parse_campaign(data)


def test_the_dataset_key_follows_what_defines_the_data(tmp_path: Path) -> None:
    path = script(tmp_path, '{tables = {"t", 1}, groups = {"g", 3}}')
    w = Workload(test=str(path), tables=2, options={"groups": 7})
    key, inputs = dataset_key(w, "v1", None)
    assert key.startswith("lua-") and inputs["dataset_flags"] == {"tables": 2}
    assert dataset_key(w.model_copy(update={"table_size": 99}), "v1", None)[0] == key  # not passed: not data
    assert dataset_key(w.model_copy(update={"tables": 3}), "v1", None)[0] != key
    assert dataset_key(w.model_copy(update={"options": {"groups": 8}}), "v1", None)[0] != key
    (tmp_path / "kvmod.lua").write_text(MODULE + "-- changed\n")  # a module it requires is part of its code
    assert dataset_key(w, "v1", None)[0] != key


def test_a_smoke_run_shrinks_only_the_dataset_fields_a_script_gets(tmp_path: Path) -> None:
    path = str(script(tmp_path, ALL))
    assert smoke_dataset(Workload(test=path)) == {}
    assert smoke_dataset(Workload(test=path, tables=8)) == {"tables": 1}
    assert smoke_dataset(Workload()) == {"tables": 1, "table_size": 1000}


PROBE_LINES = ["LBOPT a", "LBOPT  ", "LBNONE", "LBERR ", "LBDECLARED", "LBERR x\n", "FATAL: y", "[/x]", "LBOPT \x00"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300) | st.lists(st.sampled_from(PROBE_LINES), max_size=8).map("\n".join))
def test_the_probe_parser_only_ever_answers_or_says_why(text: str) -> None:
    try:
        result = parse_probe(text)
    except ValueError as error:
        assert str(error)
    else:
        assert result is None or isinstance(result, frozenset)


def test_validate_refuses_an_option_neither_the_script_nor_sysbench_has(tmp_path: Path) -> None:
    """sysbench refuses it at prepare (`invalid option`); validate says so first, naming what the script declares."""
    path = str(script(tmp_path, '{groups = {"g", 3}}'))
    check_script(Workload(test=path, options={"groups": 4, "mysql-ignore-errors": "all", "db_ps_mode": "disable"}))
    with pytest.raises(BadInput, match=r"^workloads.default.options.grups: neither the script nor sysbench has this "
                                       r"option \(sysbench would refuse it\); the script declares: groups$"):
        check_script(Workload(test=path, options={"grups": 4}))
    check_script(Workload(test=str(script(tmp_path / "legacy", None)), options={"grups": 4}))  # any option then


def test_sysbench_refuses_what_validate_refuses(tmp_path: Path) -> None:
    """The rule validate applies is sysbench's: an undeclared option fails, a declared one and a general one pass."""
    path = script(tmp_path, '{groups = {"g", 3}}')
    env = {"PATH": "/usr/bin:/bin", "LUA_PATH": lua_path(path)}
    for option, refused in (("--grups=4", True), ("--groups=4", False), ("--mysql-ignore-errors=all", False)):
        done = subprocess.run(["sysbench", str(path), option, "help"], capture_output=True, text=True, env=env,
                              check=False)
        assert ("invalid option" in done.stdout + done.stderr) is refused, option
