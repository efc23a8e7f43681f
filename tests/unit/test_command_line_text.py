"""Issue #44, done-when: every string layerbench puts on a command line (through hosts/procs.py) or into a config
file it writes is printable ASCII, or explicitly allowed below with the reason.

A property test: hypothesis writes hostile values (control characters C0, DEL and C1, terminal escapes, digits that
are not ASCII, fullwidth and accented letters, bidi overrides, Unicode spaces) at each key whose value reaches a
command or a config file; whatever the campaign's models accept is handed to the builders (sysbench's argv and
config file, my.cnf, taskset, stress-ng, fio, iperf3, Docker's resource options), and each string they make is
checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.backends.docker.qos import resource_options
from layerbench.campaign.models import parse_campaign
from layerbench.endpoint import Endpoint
from layerbench.errors import BadInput, RunFailed
from layerbench.hosts import procs
from layerbench.neighbours.tools import fio_command, iperf3_client_command, stress_ng_command
from layerbench.secrets import Secret
from layerbench.server.mycnf import merged_settings, render_mycnf
from layerbench.sysbench.command import (
    cleanup_argv,
    config_file_text,
    hook_script,
    prepare_argv,
    run_argv,
    script_path,
)

# What may be other than printable ASCII, and why. Each is still one printable line (no control character).
ALLOWED = {
    "a path of the user's": "a Lua script the workload's `test` names: Linux paths are bytes, and a user's file "
                            "may be named in UTF-8; sysbench opens it as it is (the campaign refuses control "
                            "characters in it)",
    "mysql-user": "an external server's user name: MySQL's user names are utf8mb3; sysbench sends the bytes",
    "mysql-password": "a password read by the bounded reader as one printable UTF-8 line; MySQL compares bytes",
}
HOSTILE_CHARS = ("\x1b\x9b\x85\x7f\x07\u202e\u2003\u00a0\u0663\uff13\u0967\u00e9\uff41Ω" + "aZ09_.-/:=% ,[]")
hostile_text = st.one_of(st.text(alphabet=HOSTILE_CHARS, min_size=1, max_size=12),
                         st.sampled_from(["2g", " 2g ", "\u20032g", "0-1", "٣", "64M", "4K", "100M", "\x1b[31m",
                                          "uniform", "on", "1", "/tmp/ü.lua", "t\u202eest"]))
SLOTS = ["option name", "option value", "test", "server key", "server value", "cpus", "client_cpus",
         "docker memory", "docker cpuset", "size", "block_size", "bitrate", "neighbour cpus", "user", "host"]


def printable_ascii(text: str) -> bool:
    return all(32 <= ord(c) < 127 for c in text)


def one_printable_line(text: str) -> bool:
    return text.isprintable()


def campaign_with(slot: str, value: str) -> dict[str, Any]:
    workload: dict[str, Any] = {"name": "w", "tables": 1, "table_size": 100, "threads": 1}
    base: dict[str, Any] = {"name": "base", "backend": "host", "server": {"config": {}}}
    docker: dict[str, Any] = {"name": "box", "backend": "docker", "resources": {}}
    external: dict[str, Any] = {"name": "ext", "backend": "external", "host": "db.example", "user": "sbtest",
                                "reset": "none"}
    neighbours: list[dict[str, Any]] = [{"name": "io", "kind": "disk"}, {"name": "net", "kind": "network"},
                                        {"name": "mem", "kind": "memory", "method": "vm"},
                                        {"name": "cpu", "kind": "cpu"}]
    target = {"option name": (workload.setdefault("options", {}), value, "1"),
              "option value": (workload.setdefault("options", {}), "rand-spec-pct", value)}
    if slot in target:
        mapping, key, item = target[slot]
        mapping[key] = item
    elif slot in ("server key", "server value"):
        base["server"]["config"] = {value: "1"} if slot == "server key" else {"max_connections": value}
    else:
        where = {"test": (workload, "test"), "cpus": (base, "cpus"), "client_cpus": (base, "client_cpus"),
                 "docker memory": (docker["resources"], "memory"), "docker cpuset": (docker["resources"], "cpuset"),
                 "size": (neighbours[0], "size"), "block_size": (neighbours[0], "block_size"),
                 "bitrate": (neighbours[1], "bitrate"), "neighbour cpus": (neighbours[3], "cpus"),
                 "user": (external, "user"), "host": (external, "host")}
        mapping, key = where[slot]
        mapping[key] = value
    return {"name": "c", "baseline": "base", "variants": [base, docker, external], "workloads": [workload],
            "neighbours": neighbours}


def neighbour_command(neighbour: Any) -> list[str]:
    folder, report = Path("/run/lb"), Path("/run/lb/report.json")
    if neighbour.kind == "disk":
        return fio_command(neighbour, folder, report)
    if neighbour.kind == "network":
        return iperf3_client_command(neighbour, "127.0.0.1", 5201, report)
    return procs.with_cpus(stress_ng_command(neighbour, report), neighbour.cpus)[1:]


def strings_of(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(what, string) for every string the builders make from the campaign's first workload and each variant."""
    campaign = parse_campaign(doc)
    workload = campaign.workloads[0]
    if workload.is_lua_path and not Path(workload.test).is_file():
        raise BadInput("validate refuses a script that is not a file (tests/unit/test_hostile_files.py)")
    cfg, hook = Path("/run/lb/sysbench.cfg"), Path("/run/lb/hook.lua")
    argv = [*prepare_argv(workload, cfg, 2), *cleanup_argv(workload, cfg), *run_argv(workload, cfg, hook, 2)]
    user_paths = {str(script_path(workload))} if workload.is_lua_path else set()
    out = [("a path of the user's" if arg in user_paths else "sysbench argv", arg) for arg in argv]
    out += [("hook script", line) for line in hook_script(workload).splitlines()
            if not any(path in line for path in user_paths)]
    base, docker, external = campaign.variants
    out += [("my.cnf", line) for line in render_mycnf(merged_settings({}, base.server.config)).splitlines()]
    for cpus in (base.cpus, base.client_cpus):
        out += [("taskset", arg) for arg in procs.with_cpus(["sysbench"], cpus)[1:]] if cpus else []
    out += [("docker", str(v)) for v in resource_options(docker).values()]  # type: ignore[arg-type]
    endpoint = Endpoint(external.host, 3306, external.user, Secret("pw"))  # type: ignore[attr-defined]
    for line in config_file_text(endpoint).splitlines():
        out.append((line.split("=", 1)[0], line))
    for neighbour in campaign.neighbours or []:
        out += [(neighbour.kind, arg) for arg in neighbour_command(neighbour)]
    return out


@settings(max_examples=400, deadline=None)
@given(slot=st.sampled_from(SLOTS), value=hostile_text)
def test_every_string_on_a_command_line_or_in_a_config_file_is_printable_ascii(slot: str, value: str) -> None:
    try:
        made = strings_of(campaign_with(slot, value))
    except BadInput:
        return  # refused at validate: nothing reaches a command
    for what, text in made:
        if what in ALLOWED:
            assert one_printable_line(text), (slot, what, text)
        else:
            assert printable_ascii(text), (slot, what, text)


def test_the_hostile_values_reach_the_builders(tmp_path: Path) -> None:
    """The property above is not vacuous: a value of each slot that validates reaches a string it checks."""
    script = tmp_path / "mine é.lua"  # a user's script named in UTF-8: allowed, and reaches sysbench's argv
    script.write_text("function event() end\n")
    plain = {"option name": "rand-spec-pct", "option value": "special", "test": str(script), "server key":
             "max_connections", "server value": "50", "cpus": "0", "client_cpus": "0", "docker memory": "2g",
             "docker cpuset": "0", "size": "64M", "block_size": "8K", "bitrate": "100M", "neighbour cpus": "0",
             "user": "bench", "host": "db2.example"}
    for slot, value in plain.items():
        made = strings_of(campaign_with(slot, value))
        assert any(value in text for _, text in made), slot


GUARDED = {
    "start": lambda cmd: procs.start("t", cmd, log_path=None),
    "run": lambda cmd: procs.run("t", cmd, timeout=5),
    "capture": lambda cmd: procs.capture(cmd, timeout=5),
    "pipe first": lambda cmd: procs.pipe(cmd, ["cat"], timeout=5),
    "pipe second": lambda cmd: procs.pipe(["true"], cmd, timeout=5),
    "held": lambda cmd: procs.held(cmd, timeout=5).__enter__(),
}


@given(control=st.one_of(st.characters(min_codepoint=0x80, max_codepoint=0x9F), st.sampled_from(["\x1b", "\x7f"])),
       how=st.sampled_from(sorted(GUARDED)))
def test_the_process_helper_starts_nothing_with_a_control_character(control: str, how: str) -> None:
    """hosts/procs.py's last guard: whatever reached it, no process starts with ESC, DEL or a C1 control in an
    argument (tab and newline pass: a script given to sh -c)."""
    with pytest.raises(RunFailed, match="an argument holds the control character"):
        GUARDED[how](["echo", f"a{control}b"])
    assert procs.capture(["printf", "%s", "a\tb\nc"], timeout=5).stdout == "a\tb\nc"
