"""Placement: which host of the inventory runs a variant's server and its sysbench, the address the client is
given, and the network path its traffic takes (recorded with every run)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from layerbench.errors import shown
from layerbench.hosts.inventory import LOCAL, HostEntry, is_host_address

REMOTE_CLIENT_BACKENDS = ("host", "docker")  # and a vm on an ssh: host (its port forwarded from that host's address)
REMOTE_SERVER_BACKENDS = ("host", "docker", "vm")  # a server on an ssh: host (backends/*_remote.py)


@dataclass(frozen=True)
class Placement:
    server_host: str
    client_host: str
    listen_address: str  # what the server binds / publishes on, and the address sysbench connects to
    same_machine: bool = True  # one host, or two names of this machine (local and local: true hosts)

    @property
    def remote_client(self) -> bool:
        return not self.same_machine


def _entry(hosts: dict[str, HostEntry] | None, name: str) -> HostEntry:
    return (hosts or {}).get(name) or HostEntry(local=True)


def server_of(variant: Any) -> str:
    return variant.server_host or LOCAL


def client_of(variant: Any) -> str:
    return variant.client_host or LOCAL


def check_placement(hosts: dict[str, HostEntry] | None, variants: Sequence[Any]) -> None:
    """Raise ValueError (a one-line message naming the field) for a placement layerbench cannot run."""
    hosts = hosts or {}
    if LOCAL in hosts:
        raise ValueError(f"hosts.{LOCAL}: the name is taken by this machine; give the host another name")
    known = sorted({LOCAL, *hosts})
    for v in variants:
        for field in ("server_host", "client_host"):
            name = getattr(v, field) or LOCAL
            if name not in known:
                raise ValueError(f"variants.{v.name}.{field}: {name!r} names no host; use one of {', '.join(known)} "
                                 "(add it under hosts:)")
        if not _entry(hosts, server_of(v)).local:
            _check_remote_server(v)
        if placement_of(hosts, v).remote_client or not _entry(hosts, server_of(v)).local:
            _check_remote_client(hosts, v)


def _check_remote_server(v: Any) -> None:
    if v.backend not in REMOTE_SERVER_BACKENDS:
        raise ValueError(f"variants.{v.name}.server_host: {server_of(v)} is an ssh: host; a {v.backend} server "
                         f"runs on this machine or a local: true host so far (on an ssh: host: backend "
                         f"{', '.join(REMOTE_SERVER_BACKENDS)}); put sysbench there with client_host instead")


def _check_remote_client(hosts: dict[str, HostEntry], v: Any) -> None:
    where = f"variants.{v.name}.client_host"
    remote_vm = v.backend == "vm" and not _entry(hosts, server_of(v)).local
    if v.backend not in REMOTE_CLIENT_BACKENDS and not remote_vm:
        raise ValueError(f"{where}: sysbench on another host works with backends {', '.join(REMOTE_CLIENT_BACKENDS)}"
                         f" (and vm on an ssh: host), not {v.backend}; remove client_host")
    if getattr(v, "client", "host") != "host":
        if not v.client_host:  # here because the server is on an ssh: host
            raise ValueError(f"variants.{v.name}.client: client: {v.client} with the server on ssh: host "
                             f"{server_of(v)} is not supported; use client_host: {server_of(v)} (sysbench on that "
                             "host) or another host of hosts:")
        raise ValueError(f"{where}: client: {v.client} already places sysbench; remove one of the two")
    if getattr(v, "network", None) == "bridge-direct":
        raise ValueError(f"{where}: network bridge-direct gives the container an address only this machine "
                         "routes; use network: bridge (published port) or host")
    address = _entry(hosts, server_of(v)).reach_address()
    if address is None:
        raise ValueError(f"{where}: the client needs the address it reaches {server_of(v)} at; set "
                         f"hosts.{server_of(v)}.address")
    if not is_host_address(address):  # taken from ssh: (an address: of its own is checked with the host)
        raise ValueError(f"{where}: the server's address would be {shown(address)}, the host of "
                         f"hosts.{server_of(v)}.ssh, which is not an IP address or a host name; set "
                         f"hosts.{server_of(v)}.address")


def placement_of(hosts: dict[str, HostEntry] | None, variant: Any) -> Placement:
    """A server on an ssh: host listens on that host's address whoever its client is: this machine's own
    connections (readiness, server variables, status counters) reach it there too. Two names of this machine
    (`local` and a `local: true` host) are one machine: loopback."""
    server, client = server_of(variant), client_of(variant)
    local = _entry(hosts, server).local
    same = server == client or (local and _entry(hosts, client).local)
    address = "127.0.0.1" if same and local else _entry(hosts, server).reach_address() or "127.0.0.1"
    return Placement(server, client, address, same)


K8S_PATH = {"host": "this machine to the Service's cluster IP (kube-proxy)",
            "job": "a Job's pod in the cluster to the Service's cluster IP",
            "port-forward": "kubectl port-forward from this machine (a slow path)"}
QEMU_FORWARD = "forwarded to the guest by QEMU's user networking (slirp, in the QEMU process)"


def network_path(variant: Any, placement: Placement) -> str:
    """The way sysbench's packets reach the server, in words: what `validate` previews and each run records."""
    backend = getattr(variant, "backend", "host")
    if backend == "external":
        return f"TCP to the external server {variant.host}:{variant.port}"
    if backend == "kubernetes":
        return K8S_PATH[variant.client]
    if backend == "vm":
        if variant.network == "tap":
            return "to the guest's own address on a tap device (virtio-net) on a bridge"
        return f"{tcp_path(placement)}, {QEMU_FORWARD}"
    if backend == "docker":
        return docker_path(variant, placement)
    return tcp_path(placement)


def tcp_path(placement: Placement) -> str:
    address, server = placement.listen_address, placement.server_host
    if placement.remote_client:
        return f"TCP from {placement.client_host} to {server} ({address}) over the network"
    if address.startswith("127."):
        return f"TCP over loopback ({address})"
    return f"TCP to {server}'s own address {address} (the kernel's loopback path)"


def docker_path(variant: Any, placement: Placement) -> str:
    """A container's path: published port (docker-proxy on loopback, else the kernel's NAT), host network, or a
    bridge network of the run's own."""
    network, client = getattr(variant, "network", "bridge"), getattr(variant, "client", "host")
    if network == "host":
        return f"host network: {tcp_path(placement)}"
    if client == "container":
        return "container to container on a bridge network of the run's own (no NAT, no proxy)"
    if network == "bridge-direct":
        return "the container's own address on a bridge network of the run's own, from this machine (no NAT, no proxy)"
    address = placement.listen_address
    if placement.remote_client:
        return f"published port on {address} from another host: kernel NAT (iptables DNAT), no docker-proxy"
    if not address.startswith("127."):
        return (f"published port on {placement.server_host}'s own address {address} from that host: kernel NAT "
                "(iptables DNAT for local traffic), no docker-proxy")
    return f"published port on {address}: docker-proxy (a userland copy)"
