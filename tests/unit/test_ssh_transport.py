"""The harness's own SSH transport on a server's host is not that host's other load (issue #42): the sshd sessions
that serve this harness there (the shared connection that runs the CPU script, the connections of its forwards,
told by their source ports here) are read as `transport@<host>` (measure/remote_cpu.py harness_sessions and
component_seconds), which analysis/busy.py's rule does not count; hosts/procfs.py reads the TCP tables and socket
links both sides use, hosts/forward.py source_ports the forwards' ports here."""

from __future__ import annotations

import socket
import sys

from hypothesis import given
from hypothesis import strategies as st

from layerbench.analysis.busy import busy_run
from layerbench.hosts import forward, procs
from layerbench.hosts.procfs import hex_address, parse_socket_lines, parse_tcp_connections
from layerbench.measure.remote_cpu import component_seconds, harness_sessions, parse_reading
from layerbench.records.cpu import Usage

HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
DB, HARNESS = "024FE70A", "014FE70A"  # 10.231.79.2, 10.231.79.1 as /proc/net/tcp writes them


def row(local: str, remote: str, inode: int) -> str:
    return f"   0: {local} {remote} 01 00000000:00000000 02:000A0B5E 00000000     0        0 {inode} 4 0 20 4 31 10 -1"


def proc(pid: int, name: str, ppid: int, ticks: int) -> str:
    return f"P {pid} ({name}) S {ppid} {pid} {pid} 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 50 0 0"


def reading(ticks: dict[int, int], busy: int) -> str:
    """db: the listener (36), this harness's shared connection (168 [priv] -> 170 -> the script 171), another
    client's session from the same address (200 -> 201, port 40000), this harness's forward (300 -> 301, port
    45555, its row in tcp6 as an IPv4-mapped address), the server (7), and a child of the session (172)."""
    tree = [(36, "sshd", 1), (168, "sshd-session", 36), (170, "sshd-session", 168), (171, "sh", 170),
            (172, "sysbench", 170), (200, "sshd-session", 36), (201, "sshd-session", 200),
            (300, "sshd-session", 36), (301, "sshd-session", 300), (7, "mariadbd", 1)]
    lines = ["TICK 100", "UPTIME 100", f"cpu  {busy} 0 0 1000 0 0 0 0 0 0", "CONN 10.231.79.1 34762 10.231.79.2 22",
             "SELF 171", *(proc(pid, name, ppid, ticks.get(pid, 0)) for pid, name, ppid in tree),
             "S /proc/36/fd/6 socket:[100]", "S /proc/170/fd/7 socket:[101]", "S /proc/168/fd/7 socket:[101]",
             "S /proc/201/fd/7 socket:[102]", "S /proc/301/fd/7 socket:[103]", f"T {HEADER}",
             "T " + row(f"{DB}:0016", "00000000:0000", 100), "T " + row(f"{DB}:0016", f"{HARNESS}:87CA", 101),
             "T " + row(f"{DB}:0016", f"{HARNESS}:9C40", 102),
             "T " + row(f"0000000000000000FFFF0000{DB}:0016", f"0000000000000000FFFF0000{HARNESS}:B1F3", 103)]
    return "\n".join(lines) + "\n"


def test_the_harness_sessions_are_its_connection_and_its_forwards_never_another_clients() -> None:
    text = parse_reading(reading({}, 0))
    assert text.connection == ("10.231.79.1", 34762, 22) and text.script == 171
    assert harness_sessions(text, set()) == {168, 170}  # the script's own session, its monitor; not the listener
    assert harness_sessions(text, {45555}) == {168, 170, 300, 301}  # 0xB1F3: the forward's source port here
    assert harness_sessions(text, {40001}) == {168, 170}  # 201's port is 40000: another client, from this address
    assert harness_sessions(parse_reading(reading({}, 0).replace("CONN ", "NOCONN ")), {45555}) == set()


def test_the_transports_cpu_is_its_own_component_not_other_and_not_its_childrens() -> None:
    """Between the readings: the server 3 s, the forward's session 2 s, the shared one 0.5 s, sysbench started on
    db through the shared connection (a child of its session) 1 s, another client's session 0.5 s; 8 s busy."""
    first = parse_reading(reading({}, 0))
    last = parse_reading(reading({7: 300, 301: 150, 300: 50, 170: 40, 168: 10, 172: 100, 201: 50}, 800))
    sessions = harness_sessions(first, {45555}) | harness_sessions(last, {45555})
    cpu = component_seconds(first, last, {"server": [7], "client": [172]}, {"transport@db": sorted(sessions)})
    assert cpu == {"server": 3.0, "client": 1.0, "transport@db": 2.5, "other": 1.5, "idle": 0.0}
    usage = Usage(cpu_seconds={"server@db": 3.0, "transport@db": 2.5, "other@db": 1.5, "idle": 2.0})
    assert busy_run(usage, 0.2, "db") is None  # 1.5 of 9 s: the transport's 2.5 s would have made it 4/9
    as_other = Usage(cpu_seconds={"server@db": 3.0, "other@db": 4.0, "idle": 2.0})
    assert busy_run(as_other, 0.2, "db") is not None


def test_addresses_of_the_tcp_tables() -> None:
    assert hex_address("0100007F") == "127.0.0.1" and hex_address(DB) == "10.231.79.2"
    assert hex_address(f"0000000000000000FFFF0000{HARNESS}") == "10.231.79.1"
    assert hex_address("00000000000000000000000001000000") == "::1"
    table = parse_tcp_connections(f"{HEADER}\n{row(f'{DB}:0016', f'{HARNESS}:87CA', 101)}\n{row('zz:1', 'x:2', 5)}\n")
    assert table == {101: ("10.231.79.2", 22, "10.231.79.1", 34762)}
    assert parse_socket_lines("S /proc/7/fd/3 socket:[9]\nS /proc/7/fd/4 socket:[10]\nS /proc/x/fd/4 socket:[1]\n"
                              "S /proc/8/fd/1 pipe:[3]\n") == {7: {9, 10}}


@given(st.text(max_size=400))
def test_any_text_gives_tables_of_sockets_or_nothing(text: str) -> None:
    for here, here_port, there, there_port in parse_tcp_connections(text).values():
        assert 0 <= here_port < 65536 and 0 <= there_port < 65536 and here and there
    assert all(pid >= 0 and inodes for pid, inodes in parse_socket_lines(text).items())


def test_a_live_forwards_source_port_is_read_from_its_process_here() -> None:
    """A process of this machine holding a TCP connection, registered as a live forward to host `h`: its source
    port is what source_ports gives for `h`, nothing for another host, nothing once it is closed."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        code = ("import socket,sys,time; s=socket.create_connection(('127.0.0.1', int(sys.argv[1]))); "
                "print(s.getsockname()[1], flush=True); time.sleep(60)")
        process = procs.start("a connection", [sys.executable, "-c", code, str(server.getsockname()[1])], log_path=None)
        held = forward.Forward(process, 0, "test", "h")
        forward.LIVE.add(held)
        try:
            accepted, peer = server.accept()
            accepted.close()
            assert forward.source_ports("h") == {peer[1]} and forward.source_ports("other") == set()
        finally:
            held.close()
        assert forward.source_ports("h") == set() and held not in forward.LIVE
