"""Neighbours beyond this machine's own processes (#32), without starting anything: a network neighbour in a
container or on an ssh: host with its iperf3 peer on another host of the inventory, a database neighbour (its own
server and sysbench), neighbours of a server on an ssh: host; their one-line refusals (hostile values too, in
`validate` with exit 2), their command lines, and the parser of a database neighbour's own sysbench output."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.hosts.inventory import HostEntry
from layerbench.neighbours import tools
from layerbench.neighbours.model import Neighbour
from layerbench.neighbours.network import peer_of
from layerbench.records.neighbours import NeighbourRun
from layerbench.run.neighbour_checks import check_neighbours
from layerbench.run.neighbour_plan import neighbour_lines

DATA = Path(__file__).parent.parent / "data"
LAB = {"here": {"local": True, "address": "10.231.77.1"}, "lab": {"ssh": "root@10.231.77.2"}}


def campaign(neighbours: list[Any], hosts: dict[str, Any] | None = None, **base: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": "c", "baseline": "base",
                            "variants": [{"name": "base", "backend": "host", **base},
                                         {"name": "noisy", "extends": "base", "neighbours": neighbours}],
                            "workload": {"tables": 1, "table_size": 1000}}
    return data | ({"hosts": hosts} if hosts else {})


def refused(data: dict[str, Any]) -> str:
    with pytest.raises(BadInput) as caught:
        check_neighbours(parse_campaign(data))
    assert "\n" not in str(caught.value)
    return str(caught.value)


# --- the model -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("entry", "said"), [
    ({"name": "x", "kind": "network", "placement": "docker", "to": "loopback"}, "loopback is the container's own"),
    ({"name": "x", "kind": "database", "placement": "docker"}, "placement: docker: a database neighbour runs on the"),
    ({"name": "x", "kind": "database", "placement": "ssh", "host": "lab"}, "a database neighbour runs on the host"),
    ({"name": "x", "kind": "database", "tables": 64, "table_size": 1_000_000}, "is more than 10,000,000"),
    ({"name": "x", "kind": "database", "test": "oltp_nonsense"}, "test"),
    ({"name": "x", "kind": "database", "port": 80}, "port"),
    ({"name": "x", "kind": "database", "threads": 0}, "threads"),
    ({"name": "x", "kind": "database", "rate": -1}, "rate"),
    ({"name": "x", "kind": "cpu", "port": 4000}, "port: only a database neighbour has it"),
    ({"name": "x", "kind": "database", "workers": 2}, "workers: only a cpu or memory neighbour has it"),
])
def test_bad_entries_are_refused_in_one_line(entry: dict[str, Any], said: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_campaign(campaign([entry]))
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_a_database_neighbours_intensity_and_plan_words() -> None:
    db = Neighbour(name="db", kind="database", test="oltp_read_only", threads=2, rate=50, tables=2, table_size=500)
    assert db.intensity() == "sysbench oltp_read_only, 2 thread(s) at 50 tps, on its own server (2 x 500 rows)"
    assert Neighbour(name="db", kind="database").intensity() == (
        "sysbench oltp_read_write, 1 thread(s) unlimited, on its own server (1 x 10,000 rows)")
    parsed = parse_campaign(campaign([{"name": "db", "kind": "database"}]))
    assert "db: database, sysbench oltp_read_write" in " ".join(neighbour_lines(parsed))


# --- where a network neighbour's peer runs ----------------------------------------------------------------------


def test_a_network_neighbours_peer_is_its_to_host() -> None:
    hosts = {name: HostEntry(**entry) for name, entry in LAB.items()}
    net = Neighbour(name="n", kind="network")
    assert peer_of(net, hosts) == peer_of(net, None) and peer_of(net, None).host is None
    far = peer_of(net.model_copy(update={"to": "lab"}), hosts)
    assert (far.host, far.address) == ("lab", "10.231.77.2")
    here = peer_of(Neighbour(name="n", kind="network", placement="docker", to="here"), hosts)
    assert (here.host, here.address) == (None, "10.231.77.1")
    beside = peer_of(Neighbour(name="n", kind="network", placement="ssh", host="lab"), hosts)
    assert (beside.host, beside.address) == ("lab", "127.0.0.1")  # loopback: on its own ssh: host


def test_an_ssh_placed_iperf3_client_is_niced_and_pinned_there() -> None:
    from layerbench.neighbours.remote import remote_command

    net = Neighbour(name="n", kind="network", placement="ssh", host="lab", to="here", cpus="1", nice=4, bitrate="5M")
    client = tools.iperf3_client_command(net, "10.231.77.1", 5201, Path("/tmp/f/n.iperf3.json"))
    cmd = remote_command(net, "/tmp/f", "/tmp/f/n.iperf3.json", client)
    assert cmd[:6] == ["nice", "-n", "4", "taskset", "-c", "1"] and cmd[6:9] == ["iperf3", "-c", "10.231.77.1"]
    assert "5M" in cmd and "/tmp/f/n.iperf3.json" in cmd


def test_listens_in_reads_proc_net_tcp() -> None:
    table = ("  sl  local_address rem_address   st\n"
             "   0: 0100007F:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0 0 1\n"
             "   1: 0100007F:1452 0100007F:9999 01 00000000:00000000 00:00000000 00000000  0 0 2\n")
    assert tools.listens_in(table, 0x1451) and not tools.listens_in(table, 0x1452)
    assert not tools.listens_in("", 5201) and not tools.listens_in("garbage\n[/x]", 5201)


def test_a_local_peer_at_loopback_is_refused_for_a_client_elsewhere() -> None:
    hosts = {"here": {"local": True}}
    said = refused(campaign([{"name": "n", "kind": "network", "placement": "docker", "to": "here"}], hosts))
    assert "neighbours.n.to: here is this machine at a loopback address" in said and "hosts.here.address" in said


def test_a_network_neighbours_peer_host_must_be_in_the_inventory() -> None:
    said = refused(campaign([{"name": "n", "kind": "network", "placement": "docker", "to": "far"}], LAB))
    assert "neighbours.n.to: 'far' is not a host of `hosts:`; use one of: loopback, here, lab" in said


# --- a server on an ssh: host ------------------------------------------------------------------------------------


@pytest.mark.parametrize("placement", ["host", "docker"])
def test_a_neighbour_here_of_a_server_on_an_ssh_host_is_refused_with_what_to_write(placement: str) -> None:
    entry = {"name": "hog", "kind": "cpu", "placement": placement}
    said = refused(campaign([entry], LAB, server_host="lab"))
    assert said == (f"variants.noisy.neighbours.hog.placement: {placement}: the server of noisy runs on the ssh: host "
                    "lab, and this would run on this machine, not beside it; write placement: ssh, host: lab")


# --- a database neighbour's port --------------------------------------------------------------------------------


def test_a_database_neighbours_port_must_be_its_own() -> None:
    two = [{"name": "a", "kind": "database", "port": 40001}, {"name": "b", "kind": "database", "port": 40001}]
    assert "neighbours.b.port: 40001 is already neighbour a's port" in refused(campaign(two))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        if port >= 1024:
            said = refused(campaign([{"name": "a", "kind": "database", "port": port}]))
            assert f"neighbours.a.port: {port} is in use on this machine" in said


def test_a_database_neighbour_on_the_external_servers_port_is_refused() -> None:
    data = campaign([{"name": "db", "kind": "database", "port": 3307}], backend="external", port=3307, reset="none")
    assert "neighbours.db.port: 3307 is already the variant's server's port" in refused(data)


# --- what a database neighbour achieved ---------------------------------------------------------------------------


def test_a_stopped_sysbench_gives_its_mean_tps_from_its_per_second_reports() -> None:
    text = (DATA / "run_hook.txt").read_text()
    summary = text.index("SQL statistics:")
    achieved = tools.sysbench_achieved(text[:summary])  # stopped by SIGTERM: no summary
    assert achieved["tps"] > 0 and achieved["qps"] > achieved["tps"] and achieved["seconds"] >= 1
    with pytest.raises(ValueError, match="no per-second report"):
        tools.sysbench_achieved("sysbench 1.0.20\nFATAL: nope\n")
    run = NeighbourRun("db", "database", "host", None, 0, "i", "sysbench", achieved={"tps": 12.345, "qps": 250.0})
    assert run.achieved_text() == "12.3 TPS (250 QPS) of its own sysbench"


# --- hostile values ------------------------------------------------------------------------------------------------

hostile = st.one_of(st.text(max_size=30), st.integers(), st.just(10**400), st.floats(), st.none(), st.booleans(),
                    st.lists(st.text(max_size=5), max_size=3), st.just("[/x]"), st.just("a\nb"), st.just(""),
                    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["database", "network"]),
       key=st.sampled_from(["test", "tables", "table_size", "threads", "rate", "port", "to", "placement", "host",
                            "bitrate", "streams"]), value=hostile)
def test_hostile_values_give_one_line_or_a_valid_neighbour(kind: str, key: str, value: Any) -> None:
    try:
        parsed = parse_campaign(campaign([{"name": "x", "kind": kind, key: value}]))
    except BadInput as error:
        assert "\n" not in str(error) and len(str(error)) < 600
        return
    (n,) = parsed.neighbours_of(parsed.variant("noisy"))
    assert n.kind == kind and n.intensity()


@pytest.mark.parametrize(("entry", "said"), [
    ({"name": "x", "kind": "network", "placement": "docker", "to": "far"}, "'far' is not a host of `hosts:`"),
    ({"name": "x", "kind": "database", "port": 10**400}, "port"),
    ({"name": "x\n[/x]", "kind": "database"}, "name"),
    ({"name": "x", "kind": "database", "test": ["oltp_read_only"]}, "test"),
    ({"name": "x", "kind": "database", "test": "[/x]"}, "test"),
    ({"name": "x", "kind": "network", "to": "a\nb"}, "'a\\nb' is not a host of `hosts:`"),
])
def test_validate_refuses_in_one_line_with_exit_2(tmp_path: Path, entry: dict[str, Any], said: str) -> None:
    assert_refused(tmp_path, campaign([entry]), said)


def test_validate_refuses_a_database_neighbour_on_the_variants_port(tmp_path: Path) -> None:
    data = campaign([{"name": "db", "kind": "database", "port": 3307}], backend="external", port=3307,
                    password_env="NEIGHNET_PASSWORD", reset="none")
    assert_refused(tmp_path, data, "variants.noisy.neighbours.db.port: 3307 is already the variant's server's port",
                   {"NEIGHNET_PASSWORD": "x"})


def assert_refused(tmp_path: Path, data: dict[str, Any], said: str, env: dict[str, str] | None = None) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data | {"output": str(tmp_path / "out")}))
    done = subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "300", **(env or {})})
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], lines
    assert not (tmp_path / "out").exists()


def test_a_database_neighbours_sysbench_runs_its_test_at_its_rate_until_stopped() -> None:
    from layerbench.run.neighbour_database import neighbour_workload
    from layerbench.sysbench.command import run_argv

    db = Neighbour(name="db", kind="database", test="oltp_point_select", tables=2, table_size=500, threads=3, rate=40)
    workload = neighbour_workload(db)
    cmd = run_argv(workload, Path("/p/sysbench.cfg"), Path("/r/hook.lua"), db.database_threads)
    assert cmd[-1] == "run" and "--threads=3" in cmd and "--rate=40" in cmd and "--report-interval=1" in cmd
    assert "--tables=2" in cmd and "--table-size=500" in cmd and "--time=86400" in cmd
    assert workload.test == "oltp_point_select" and workload.warmup == 0
    assert "--rate" not in " ".join(run_argv(neighbour_workload(Neighbour(name="d", kind="database")),
                                                Path("/c"), Path("/h"), 1))


def test_the_peers_report_gives_what_it_received_from_a_stopped_client() -> None:
    """A real iperf3 3.x server's JSON (one client at 10 Mbit/s, stopped by SIGTERM after 2.5 s): the client's own
    report says 0 received; the server's says what arrived."""
    text = (DATA / "neighbours" / "iperf3-server-client-sigterm.json").read_text()
    assert 5e6 < tools.iperf3_peer_received(text) < 20e6
    with pytest.raises(ValueError):
        tools.iperf3_peer_received("iperf3: error - unable to start listener")
