"""Placement: which host of the inventory runs a variant's server and its sysbench, the address the client is
given, and the rules of where each backend may run (what a backend may do is its variant's answer:
backends/variant_base.py; the network path each run records is its variant's network_path())."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from layerbench.errors import shown
from layerbench.hosts.inventory import LOCAL, HostEntry, is_host_address


@dataclass(frozen=True)
class Placement:
    server_host: str
    client_host: str
    listen_address: str  # the address sysbench and this machine dial (with reach: direct), and a server here binds
    same_machine: bool = True  # one host, or two names of this machine (local and local: true hosts)
    bind_address: str | None = None  # what a server on an ssh: host binds there (None: listen_address)
    reach: str = "direct"  # how the harness and the client reach the server (the host's `reach:`)

    @property
    def binds(self) -> str:
        return self.bind_address or self.listen_address

    @property
    def remote_client(self) -> bool:
        return not self.same_machine


def _entry(hosts: dict[str, HostEntry] | None, name: str) -> HostEntry:
    return (hosts or {}).get(name) or HostEntry(local=True)


def server_of(variant: Any) -> str:
    return variant.server_host or LOCAL


def client_of(variant: Any) -> str:
    return variant.client_host or LOCAL


def check_placement(hosts: dict[str, HostEntry] | None, variants: Sequence[Any], remote_servers: Sequence[str],
                    remote_clients: Sequence[str]) -> None:
    """Raise ValueError (a one-line message naming the field) for a placement layerbench cannot run;
    `remote_servers` are the backends whose server may run on an ssh: host, `remote_clients` those whose sysbench
    may run on another host than the server's (backends/registry.py)."""
    hosts = hosts or {}
    if LOCAL in hosts:
        raise ValueError(f"hosts.{LOCAL}: the name is taken by this machine; give the host another name")
    known = sorted({LOCAL, *hosts})
    for v in variants:
        for field, name in (("server_host", server_of(v)), ("client_host", client_of(v))):
            if name not in known:
                raise ValueError(f"variants.{v.name}.{field}: {name!r} names no host; use one of {', '.join(known)} "
                                 "(add it under hosts:)")
        if not _entry(hosts, server_of(v)).local:
            _check_remote_server(v, remote_servers, _entry(hosts, server_of(v)))
        if placement_of(hosts, v).remote_client or not _entry(hosts, server_of(v)).local:
            _check_remote_client(hosts, v, remote_servers, remote_clients)


def _check_remote_server(v: Any, remote_servers: Sequence[str], entry: HostEntry) -> None:
    if v.backend not in remote_servers:
        raise ValueError(f"variants.{v.name}.server_host: {server_of(v)} is an ssh: host; a {v.backend} server "
                         f"runs on this machine or a local: true host so far (on an ssh: host: backend "
                         f"{', '.join(remote_servers)}); put sysbench there with client_host instead")
    if not v.takes_reach and (entry.reach != "direct" or entry.bind_address):
        said = f"reach: {entry.reach}" if entry.reach != "direct" else f"bind_address: {entry.bind_address}"
        raise ValueError(f"variants.{v.name}.server_host: host {server_of(v)} has {said}, which a {v.backend} "
                         "server does not take yet (backends host and docker do); use reach: direct without "
                         "bind_address there, or backend: host")


def _check_remote_client(hosts: dict[str, HostEntry], v: Any, remote_servers: Sequence[str],
                         remote_clients: Sequence[str]) -> None:
    """sysbench on another host than the server's: a backend that allows it (or whose server is on an ssh: host,
    its port forwarded from that host's address), with sysbench on a host, at an address that host reaches."""
    where = f"variants.{v.name}.client_host"
    if v.backend not in remote_clients and _entry(hosts, server_of(v)).local:
        also = [k for k in remote_servers if k not in remote_clients]
        raise ValueError(f"{where}: sysbench on another host works with backends {', '.join(remote_clients)}"
                         f" (and {', '.join(also)} on an ssh: host), not {v.backend}; remove client_host")
    if v.client_kind != "host":
        if not v.client_host:  # here because the server is on an ssh: host
            raise ValueError(f"variants.{v.name}.client: client: {v.client_kind} with the server on ssh: host "
                             f"{server_of(v)} is not supported; use client_host: {server_of(v)} (sysbench on that "
                             "host) or another host of hosts:")
        raise ValueError(f"{where}: client: {v.client_kind} already places sysbench; remove one of the two")
    problem = v.remote_client_problem()
    if problem is not None:
        raise ValueError(f"{where}: {problem}")
    address = _entry(hosts, server_of(v)).reach_address()
    if address is None:
        raise ValueError(f"{where}: the client needs the address it reaches {server_of(v)} at; set "
                         f"hosts.{server_of(v)}.address")
    if not is_host_address(address):  # taken from ssh: (an address: of its own is checked with the host)
        raise ValueError(f"{where}: the server's address would be {shown(address)}, the host of "
                         f"hosts.{server_of(v)}.ssh, which is not an IP address or a host name; set "
                         f"hosts.{server_of(v)}.address")


def placement_of(hosts: dict[str, HostEntry] | None, variant: Any) -> Placement:
    """A server on an ssh: host listens on that host's address whoever its client is (its `bind_address:`, or
    127.0.0.1 with `reach: ssh`): this machine's own connections (readiness, server variables, status counters)
    dial `address:` there too, or the SSH forward (hosts/forward.py). Two names of this machine
    (`local` and a `local: true` host) are one machine: loopback."""
    server, client = server_of(variant), client_of(variant)
    local = _entry(hosts, server).local
    same = server == client or (local and _entry(hosts, client).local)
    entry = _entry(hosts, server)
    address = "127.0.0.1" if same and local else entry.reach_address() or "127.0.0.1"
    return Placement(server, client, address, same, None if local else entry.listen_address(), entry.reach)


def tcp_path(placement: Placement) -> str:
    address, server = placement.listen_address, placement.server_host
    if placement.reach == "ssh":
        return f"TCP through SSH forwards to {server}, where the server listens on {placement.binds}"
    if placement.remote_client:
        return f"TCP from {placement.client_host} to {server} ({address}) over the network"
    if address.startswith("127."):
        return f"TCP over loopback ({address})"
    return f"TCP to {server}'s own address {address} (the kernel's loopback path)"
