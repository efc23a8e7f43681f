"""Reachability per host (issue #42 item 3; hosts/inventory.py `reach`, `bind_address`, `ports`; hosts/forward.py;
hosts/placement.py; run/reach.py): the keys' grammar with hostile values, the forward's ssh command, ssh's
allocated-port line, the placement's bind and dial addresses, and the path sysbench is given from each host.
(The paths on the lab: tests/integration/test_reach.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from layerbench.endpoint import Endpoint
from layerbench.hosts.forward import allocated_port, dial_address, forward_command
from layerbench.hosts.inventory import Host, HostEntry, Hosts, port_range
from layerbench.hosts.placement import check_placement, placement_of, tcp_path
from layerbench.run.reach import client_path
from layerbench.secrets import Secret

SSH = {"ssh": "root@10.0.0.7"}


def test_reach_bind_address_and_ports_of_an_ssh_host() -> None:
    entry = HostEntry(**SSH, reach="ssh", ports="41400-41499")
    assert entry.listen_address() == "127.0.0.1" and port_range(entry.ports or "") == (41400, 41499)
    assert HostEntry(**SSH).listen_address() == "10.0.0.7"  # direct: its address, as before
    assert HostEntry(**SSH, address="203.0.113.9", bind_address="10.0.0.7").listen_address() == "10.0.0.7"
    assert HostEntry(**SSH, reach="ssh", bind_address="0.0.0.0").listen_address() == "0.0.0.0"


@pytest.mark.parametrize("changes, said", [
    ({"reach": "vpn"}, "reach"), ({"ports": "41499-41400"}, "1024 <= LOW <= HIGH"), ({"ports": "80-90"}, "1024"),
    ({"ports": "41400-70000"}, "65535"), ({"ports": "41400"}, "ports"), ({"ports": "4140O-41499"}, "ports"),
    ({"ports": "41400-41499 "}, "ports"), ({"bind_address": "127.0.0.1;rm"}, "not an IP address"),
    ({"local": True, "ssh": None, "reach": "ssh"}, "belong to an ssh: host"),
    ({"local": True, "ssh": None, "ports": "41400-41499"}, "belong to an ssh: host"),
])
def test_bad_values_are_refused_naming_the_field(changes: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError) as error:
        HostEntry(**{**SSH, **changes})
    assert said in str(error.value)


def accepted(**changes: str) -> HostEntry | None:
    """The ssh: host entry with these values, or None when the model refuses them."""
    try:
        return HostEntry(**SSH, **changes)
    except ValidationError:
        return None


@given(st.text(max_size=24))
def test_any_ports_text_is_a_range_within_bounds_or_refused(text: str) -> None:
    entry = accepted(ports=text)
    if entry is not None:
        low, high = port_range(entry.ports or "")
        digits = text.replace("-", "", 1)
        assert 1024 <= low <= high <= 65535 and digits.isascii() and digits.isdigit()


@given(st.text(max_size=40))
def test_any_bind_address_is_an_address_or_refused(text: str) -> None:
    entry = accepted(bind_address=text)
    if entry is not None:
        assert entry.listen_address() == text and text.isascii() and text.isprintable() and " " not in text


def test_the_forward_rides_a_connection_of_its_own_with_the_hosts_options() -> None:
    host = Host("db2", HostEntry(**SSH, port=2222, identity_file="/k", known_hosts="/kh"))
    cmd = forward_command(host, ["-L", "127.0.0.1:5000:127.0.0.1:41400"])
    assert cmd[:8] == ["ssh", "-N", "-o", "ControlMaster=no", "-o", "ControlPath=none", "-o",
                       "ExitOnForwardFailure=yes"]
    assert not any(c.startswith(("ControlMaster=auto", "ControlPersist=", "ControlPath=/")) for c in cmd)
    assert "-p" in cmd and "/k" in cmd and "StrictHostKeyChecking=yes" in cmd and "BatchMode=yes" in cmd
    assert cmd[-4:] == ["-L", "127.0.0.1:5000:127.0.0.1:41400", "--", "root@10.0.0.7"]


def test_the_allocated_port_is_read_from_ssh_only() -> None:
    assert allocated_port("Allocated port 43211 for remote forward to 127.0.0.1:5000\n") == 43211
    assert allocated_port("x Allocated port 43211 for remote forward\n") == 0
    assert allocated_port("Allocated port 0 for remote forward\nAllocated port 99999 for remote forward") == 0
    assert allocated_port("") == 0 and dial_address("0.0.0.0") == "127.0.0.1" and dial_address("::") == "::1"


@given(st.text(max_size=200))
def test_any_forward_log_gives_a_port_or_none(text: str) -> None:
    assert 0 <= allocated_port(text) < 65536


class Variant:
    name, backend, client_kind, takes_reach = "v", "vm", "host", False

    def __init__(self, server: str, client: str | None = None) -> None:
        self.server_host, self.client_host = server, client

    def remote_client_problem(self) -> None:
        return None


def test_the_placement_binds_and_dials_apart() -> None:
    hosts = {"db2": HostEntry(**SSH, address="203.0.113.9", bind_address="10.0.0.7"),
             "tun": HostEntry(**SSH, reach="ssh")}
    place = placement_of(hosts, Variant("db2", "local"))
    assert (place.listen_address, place.binds, place.reach) == ("203.0.113.9", "10.0.0.7", "direct")
    place = placement_of(hosts, Variant("tun"))
    assert (place.binds, place.reach) == ("127.0.0.1", "ssh")
    assert tcp_path(place) == "TCP through SSH forwards to tun, where the server listens on 127.0.0.1"
    assert placement_of({"db": HostEntry(local=True, address="10.0.0.5")}, Variant("db", "db")).binds == "127.0.0.1"
    with pytest.raises(ValueError, match=r"variants\.v\.server_host: host tun has reach: ssh, which a vm server"):
        check_placement(hosts, [Variant("tun", "tun")], ["host", "vm"], ["host", "vm"])


class Served:
    def __init__(self, served: tuple[str, int] | None) -> None:
        self.served = served

    def served_on_host(self) -> tuple[str, int] | None:
        return self.served


ENDPOINT = Endpoint("127.0.0.1", 5000, "u", Secret("p"))


def test_the_path_sysbench_is_given_from_each_host() -> None:
    entries = {"tun": HostEntry(**SSH, reach="ssh"), "db2": HostEntry(**SSH)}
    hosts = Hosts(entries)

    def path(server: str, client: str | None, served: tuple[str, int] | None, endpoint: Endpoint = ENDPOINT) -> Any:
        return client_path(placement_of(entries, Variant(server, client)), hosts, Served(served),  # type: ignore[arg-type]
                           endpoint, None)

    here = path("tun", None, ("127.0.0.1", 41400))
    assert here.endpoint == ENDPOINT and here.text.startswith("ssh: this machine's forward 127.0.0.1:5000 -> ")
    there = path("tun", "tun", ("127.0.0.1", 41400))
    assert (there.endpoint.host, there.endpoint.port) == ("127.0.0.1", 41400) and there.forward is None
    direct = Endpoint("10.0.0.7", 41401, "u", Secret("p"))
    assert path("db2", "local", ("10.0.0.7", 41401), direct).text == "direct: 10.0.0.7:41401 from local"
    assert path("db2", None, None, direct).text == "direct: 10.0.0.7:41401"  # a backend without a host side


def test_the_reports_placement_row_names_the_hosts_and_the_path_each_run_took() -> None:
    """With `hosts:`, the run record's placement (environment.placement) becomes the report's row: server host,
    client host and sysbench's path, as run/reach.py wrote it (forwarded or direct)."""
    from layerbench.analysis.placement import hosts_placement

    forwarded = {"server_host": "db", "client_host": "app", "path": "over the network",
                 "reach": {"kind": "ssh", "client": "ssh: ssh -R 127.0.0.1:41500 on app -> 127.0.0.1:41510"}}
    assert hosts_placement(forwarded) == {"server_node": "db", "client_node": "app",
                                          "network_path": "ssh: ssh -R 127.0.0.1:41500 on app -> 127.0.0.1:41510"}
    direct = {"server_host": "db", "client_host": "app", "reach": {"kind": "direct", "client": None}}
    assert hosts_placement(direct)["network_path"] == "direct"
    assert hosts_placement({"server_host": "db", "client_host": "app"}) == {}  # a run from before reach:


@given(st.recursive(st.none() | st.text(max_size=8) | st.integers(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12))
def test_any_stored_placement_gives_a_row_or_nothing(stored: object) -> None:
    """A store written by another version (or edited by hand) never makes the report fail."""
    from layerbench.analysis.placement import hosts_placement

    row = hosts_placement(stored)
    assert row == {} or set(row) == {"server_node", "client_node", "network_path"}
