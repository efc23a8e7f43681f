"""The busy rule's per-host key (issue #42 item 4; analysis/busy.py busy_run and run_busy, records/run.py
Environment.server_place, hosts/remote.py kernel_sharers and placed_usage, hosts/procfs.py parse_namespace_lines,
measure/remote_cpu.py): only the other load of the host the server runs on makes a run busy; a load on the
client's host, a host that shares the server host's kernel, or the harness (when the server runs elsewhere) does
not."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from layerbench.analysis.busy import busy_key, busy_run, host_of, run_busy
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.hosts.procfs import in_net_namespace, net_namespace, parse_namespace_lines
from layerbench.hosts.remote import kernel_sharers, placed_usage
from layerbench.measure.remote_cpu import component_seconds, parse_reading
from layerbench.neighbours.model import Neighbour
from layerbench.neighbours.remote import RemoteNeighbour
from layerbench.neighbours.running import NeighboursRunning, Started
from layerbench.records import Environment, StoredFacts, Usage

APP = {"ssh": "root@10.0.0.2"}


def usage(**cpu: float) -> Usage:
    return Usage.from_json({"cpu_seconds": {k.replace("__", "@"): v for k, v in cpu.items()}})


def test_the_key_is_the_server_hosts_other() -> None:
    assert busy_key(None) == "other" and busy_key("db") == "other@db"
    assert host_of("server@db") == "db" and host_of("neighbour:n@app") == "app"
    assert host_of("idle") is None and host_of("other") is None and host_of("@db") is None


def test_load_on_the_server_host_makes_a_run_busy_and_elsewhere_does_not() -> None:
    on_db = usage(server__db=2.0, other__db=4.0, idle=4.0, sysbench__app=3.0)
    found = busy_run(on_db, server_host="db")
    assert found is not None and round(found.share, 2) == 0.4  # 4 of db's 10 CPU-s; app's 3 are another machine's
    on_app = usage(server__db=2.0, other__db=0.1, idle=7.9, sysbench__app=3.0, other__app=9.0)
    assert busy_run(on_app, server_host="db") is None  # a load on the client's host
    assert busy_run(on_app, server_host="db", same_kernel=frozenset({"app"})) is None
    harness = usage(server__app=2.0, other__app=0.2, idle=7.8, other=9.0)  # the harness's plain other
    assert busy_run(harness, server_host="app") is None
    assert busy_run(usage(server=2.0, other=4.0, idle=4.0)) is not None  # no inventory: the harness is the host


def test_a_shared_kernels_hosts_are_part_of_the_whole() -> None:
    shared = usage(server__db=1.0, other__db=1.5, idle=2.5, other__app=5.0)
    assert busy_run(shared, server_host="db") is not None  # 1.5 of db's 5 CPU-s
    assert busy_run(shared, server_host="db", same_kernel=frozenset({"app"})) is None  # 1.5 of the kernel's 10


def environment(server: str | None, boots: dict[str, str]) -> Environment:
    placement = {"placement": {"server_host": server, "client_host": "app"},
                 "hosts": {h: {"boot_id": b} for h, b in boots.items()}} if server else None
    return Environment.of({}, {}, {}, {}, {}, placement)


def test_the_server_host_and_its_kernel_sharers_come_from_the_stored_environment() -> None:
    assert environment("db", {"db": "b1", "app": "b1", "far": "b2"}).server_place() == ("db", frozenset({"app"}))
    assert environment("db", {"app": "b1"}).server_place() == ("db", frozenset())  # db's boot id unknown
    assert environment(None, {}).server_place() == (None, frozenset())
    stored = StoredFacts(environment=environment("db", {"db": "b", "app": "c"}),
                         usage=usage(server__db=1.0, other__db=0.1, idle=1.0, other=50.0))
    assert run_busy(stored) is None  # the harness's `other` of an old record is not the server host's
    assert run_busy(StoredFacts(usage=usage(server=1.0, other=5.0, idle=1.0))) is not None
    assert run_busy(StoredFacts()) is None


def test_kernel_sharers_are_other_hosts_on_the_same_boot_in_another_namespace() -> None:
    facts = {"db": {"boot_id": "b", "netns": "net:[1]"}, "app": {"boot_id": "b", "netns": "net:[2]"},
             "dbssh": {"boot_id": "b", "netns": "net:[1]"}, "far": {"boot_id": "x", "netns": "net:[3]"},
             "old": {"boot_id": "b"}}
    assert kernel_sharers(facts, "db") == {"app": "net:[2]"}
    assert kernel_sharers(facts, "far") == {} and kernel_sharers({}, "db") == {}


def test_a_sharing_hosts_key_stays_and_holds_a_remote_sysbench_on_that_kernel() -> None:
    class Client:
        host = Host("app", HostEntry(**APP))
        cpu_seconds = 2.0

    cpu = {"server": 5.0, "other@app": 3.0, "other": 1.0, "idle": 1.0}
    assert placed_usage(cpu, "db", Client(), same_kernel=True) == {  # type: ignore[arg-type]
        "server@db": 5.0, "other@app": 1.0, "other@db": 1.0, "idle": 1.0, "sysbench@app": 2.0}


def test_a_remote_reading_splits_a_sharing_hosts_processes_by_namespace() -> None:
    first = parse_reading("TICK 100\nUPTIME 50.00\ncpu  100 0 100 1000 0 0 0 40 0 0\n"
                          "P 10 (mariadbd) S 1 10 10 0 -1 0 0 0 0 0 300 100 0 0 20 0 1 0 200 0 0\n"
                          "P 77 (stress-ng) S 1 77 77 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 100 0 0\n")
    last = parse_reading("TICK 100\nUPTIME 60.00\ncpu  400 0 400 1500 0 0 0 90 0 0\n"
                         "P 10 (mariadbd) S 1 10 10 0 -1 0 0 0 0 0 500 200 0 0 20 0 1 0 200 0 0\n"
                         "P 77 (stress-ng) S 1 77 77 0 -1 0 0 0 0 0 150 10 0 0 20 0 1 0 100 0 0\n"
                         "N /proc/77/ns/net net:[4026532999]\nN /proc/10/ns/net net:[4026531840]\n")
    assert last.steal - first.steal == 50 and last.namespaces[77] == "net:[4026532999]"
    cpu = component_seconds(first, last, {"server": [10], "other@app": [77]})
    assert cpu == {"server": 3.0, "other@app": 1.5, "other": 2.0, "idle": 5.0}  # steal (0.5 s) is in other


def test_this_machines_processes_are_found_by_their_namespace() -> None:
    mine = net_namespace(os.getpid())
    assert mine is not None and mine.startswith("net:[") and os.getpid() in in_net_namespace(mine)
    assert net_namespace(2**22 + 7) is None and in_net_namespace("net:[0]") == []


def test_namespace_lines_are_read_strictly() -> None:
    text = ("N /proc/12/ns/net net:[4026531840]\nN /proc/x/ns/net net:[1]\nN /proc/13/ns/net mnt:[1]\n"
            "N /proc/14/ns/net net:[1] extra\nP 1 (x)\nN /proc/15/ns/net net:[2]")
    assert parse_namespace_lines(text) == {12: "net:[4026531840]", 15: "net:[2]"}


@given(st.text(max_size=300))
def test_any_namespace_text_parses_to_pids_and_net_links(text: str) -> None:
    for pid, namespace in parse_namespace_lines(text).items():
        assert pid >= 0 and namespace.startswith("net:[") and namespace.endswith("]")
    reading = parse_reading(text)
    assert reading.steal >= 0 and reading.namespaces == parse_namespace_lines(text)


@given(st.dictionaries(st.text(max_size=12), st.floats(min_value=0, max_value=1e6), max_size=8),
       st.one_of(st.none(), st.text(max_size=8)))
def test_the_rule_never_fails_on_any_recorded_usage(cpu: dict[str, float], server: str | None) -> None:
    found = busy_run(Usage(cpu_seconds=cpu), server_host=server)
    assert found is None or 0 < found.share <= 1 + 1e-9


def test_a_neighbour_placed_over_ssh_on_the_server_host_is_a_component_there(tmp_path: Path) -> None:
    entry = HostEntry(**APP)
    near = Neighbour(name="near", kind="cpu", placement="ssh", host="db2")
    far = Neighbour(name="far", kind="cpu", placement="ssh", host="app")
    running = NeighboursRunning([near, far], tmp_path, "lbtest", tmp_path)

    def placed(n: Neighbour, pid: int) -> Started:
        remote = RemoteNeighbour(Host(str(n.host), entry), "lbtest", "/tmp/x", pid, "r", tmp_path / "r", tmp_path / "l")
        return Started(n, [], [remote], tmp_path / "r")

    running.started = [placed(near, 4321), placed(far, 99)]
    assert running.on_host("db2") == {"neighbour:near": [4321]}
    assert running.on_host("app") == {"neighbour:far": [99]} and running.on_host("db") == {}
    assert placed_usage({"neighbour:near": 2.0, "other": 0.5}, "db2", None, same_kernel=False) == {
        "neighbour:near@db2": 2.0, "other@db2": 0.5}


def test_a_pod_read_off_its_node_is_busy_by_its_nodes_other_never_the_harnesss() -> None:
    """backends/kubernetes/podcpu.py names the pod's node in the backend's facts (server_cpu_node)."""
    pod = Environment.from_json({"backend": {"backend": "kubernetes", "server_cpu_node": "node-a"}})
    assert pod.server_place() == ("node-a", frozenset())
    quiet_node = usage(server__node_a=2.0, other__node_a=0.5, idle=7.5, other__harness=30.0)
    busy_node = usage(server__node_a=2.0, other__node_a=4.0, idle=4.0)
    renamed = {k.replace("node_a", "node-a"): v for k, v in quiet_node.cpu_seconds.items()}
    assert run_busy(StoredFacts(environment=pod, usage=Usage(renamed))) is None
    found = run_busy(StoredFacts(environment=pod, usage=Usage(
        {k.replace("node_a", "node-a"): v for k, v in busy_node.cpu_seconds.items()})))
    assert found is not None and found.share == 0.4
    on_node = Environment.from_json({"backend": {"backend": "kubernetes"}})
    assert on_node.server_place() == (None, frozenset())
