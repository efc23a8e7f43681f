"""validate's probe of every path to a server's port (issue #42; run/paths.py, hosts/probe.py): the listener and
the dial on this machine (real sockets and perl), which placements are probed, and the one line per unreachable
path. (Over SSH and the forwards, on the lab: tests/integration/test_reach.py.)"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from layerbench.campaign.models import parse_campaign
from layerbench.errors import RunFailed
from layerbench.hosts.inventory import Host, HostEntry, Hosts
from layerbench.hosts.machine import free_port
from layerbench.hosts.placement import Placement
from layerbench.hosts.probe import dial, listening
from layerbench.run.paths import UnreachablePaths, probe_place, probed_places

HERE = Host("local")


def test_a_dial_reads_the_listeners_greeting_and_nothing_else() -> None:
    port = free_port()
    with listening(HERE, "127.0.0.1", port):
        assert dial(HERE, "127.0.0.1", port) is None
        assert dial(HERE, "127.0.0.2", port) is not None  # bound to 127.0.0.1 only
    assert dial(HERE, "127.0.0.1", port) is not None  # gone with the block
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        threading.Thread(target=lambda: silent.accept()[0].close(), daemon=True).start()
        assert "something else answers there" in (dial(HERE, "127.0.0.1", silent.getsockname()[1]) or "")


def test_a_listener_that_cannot_bind_names_the_host_address_and_port() -> None:
    with pytest.raises(RunFailed, match=r"hosts\.local: cannot listen on 192\.0\.2\.1:41499 there \("), \
            listening(HERE, "192.0.2.1", 41499):
        pass


def test_each_unreachable_path_is_one_line(tmp_path: Path) -> None:
    hosts = Hosts({"db": HostEntry(local=True, address="127.0.0.2")})
    ok = Placement("db", "local", "127.0.0.1", False, "127.0.0.1")
    assert probe_place(ok, hosts, tmp_path) == []
    lines = probe_place(Placement("db", "local", "127.0.0.2", False, "127.0.0.1"), hosts, tmp_path)
    assert len(lines) == 1 and lines[0].startswith("hosts.db: the direct path from this machine to 127.0.0.2 does "
                                                   "not reach port "), lines
    assert "or set hosts.db.reach: ssh" in lines[0]
    bad = probe_place(Placement("db", "local", "127.0.0.2", False, "192.0.2.1"), hosts, tmp_path)
    assert len(bad) == 1 and "no server port to probe at 192.0.2.1" in bad[0] and "bind_address" in bad[0]
    error = UnreachablePaths(["a", "b"])
    assert error.lines == ["a", "b"] and error.exit_code == 2


def test_the_probed_placements_are_those_across_a_network_once_each() -> None:
    hosts = {"db": {"local": True, "address": "10.0.0.5"}, "db2": {"ssh": "root@10.0.0.7"},
             "app": {"ssh": "root@10.0.0.8"}}
    variants = [{"name": "here", "backend": "host"},
                {"name": "far", "backend": "host", "server_host": "db2", "client_host": "app"},
                {"name": "far2", "backend": "host", "server_host": "db2", "client_host": "app"},
                {"name": "near", "backend": "host", "server_host": "db2", "client_host": "db2"},
                {"name": "out", "backend": "host", "server_host": "db", "client_host": "app"}]
    campaign = parse_campaign({"name": "p", "baseline": "here", "hosts": hosts, "variants": variants,
                               "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 3}})
    assert [(p.server_host, p.client_host) for p in probed_places(campaign)] == [
        ("db2", "app"), ("db2", "db2"), ("db", "app")]
