"""Before the first run (`validate` and `run`, from preflight): every path the plan uses to a server's port is
tried (issue #42, docs/validate.md): on the server's host a short-lived listener on a port its server could take
(hosts/ports.py, the host's `ports:`) at the address the server binds, dialled from this machine and from the
client's host along the path the run would take: straight to the address (`reach: direct`) or through the SSH
forwards (`reach: ssh`, hosts/forward.py, run/reach.py). Each unreachable path is one line naming the host, the
path and the port; all of them, then exit 2."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from layerbench.campaign.models import Campaign
from layerbench.errors import BadInput, RunFailed
from layerbench.hosts.forward import dial_address, local_forward, reverse_forward
from layerbench.hosts.inventory import Host, Hosts
from layerbench.hosts.machine import free_port
from layerbench.hosts.placement import Placement, placement_of
from layerbench.hosts.ports import pick_port
from layerbench.hosts.probe import dial, listening


class UnreachablePaths(BadInput):
    """Paths to a server's port that a probe could not take: one message line each (cli/main.py prints them)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


@dataclass(frozen=True)
class Route:
    """One path to probe: from which host, in words, and how to dial it (returns None or why it failed)."""

    text: str
    fix: str
    dial: Callable[[Host, int], str | None]


def probed_places(campaign: Campaign) -> list[Placement]:
    """The placements whose paths cross a network: a server on an ssh: host, or sysbench on another host than the
    server's; each (server host, client host) once."""
    seen: dict[tuple[str, str], Placement] = {}
    for variant in campaign.variants:
        place = placement_of(campaign.hosts, variant)
        entry = (campaign.hosts or {}).get(place.server_host)
        remote = entry is not None and not entry.local
        if variant.owns_server and (remote or place.remote_client):
            seen.setdefault((place.server_host, place.client_host), place)
    return list(seen.values())


def check_paths(campaign: Campaign, hosts: Hosts) -> None:
    """UnreachablePaths listing every path of the plan that does not reach its server's port."""
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="lb-probe-") as logs:
        for place in probed_places(campaign):
            lines += probe_place(place, hosts, Path(logs))
    if lines:
        raise UnreachablePaths(lines)


def probe_place(place: Placement, hosts: Hosts, logs: Path) -> list[str]:
    server = hosts[place.server_host]
    bind = place.binds
    try:
        port = free_port(bind) if server.is_local else pick_port(server)
        with listening(server, bind, port):
            return [line for route, host in routes(place, hosts, logs)
                    if (line := _tried(route, host, port, place.server_host))]
    except (RunFailed, OSError) as error:
        return [f"hosts.{place.server_host}: no server port to probe at {bind} ({error}); "
                f"fix hosts.{place.server_host}.bind_address or .ports"]


def _tried(route: Route, host: Host, port: int, server: str) -> str | None:
    said = route.dial(host, port)
    if said is None:
        return None
    return f"hosts.{server}: {route.text} does not reach port {port} ({said}); {route.fix}"


def routes(place: Placement, hosts: Hosts, logs: Path) -> list[tuple[Route, Host]]:
    """The paths a run of this placement takes to the server's port: this machine's, and sysbench's."""
    here = hosts["local"]
    client = hosts[place.client_host]
    there = dial_address(place.binds)
    found = [(harness_route(place, hosts, logs), here)]
    if place.client_host == place.server_host and not client.is_local:
        found.append((Route(f"the path from {client.name} itself to {there}", "check bind_address",
                            lambda host, port: dial(host, there, port)), client))
    elif not client.is_local:
        found.append((client_route(place, hosts, logs), client))
    return found


def harness_route(place: Placement, hosts: Hosts, logs: Path) -> Route:
    if place.reach == "ssh":
        return Route(f"the path from this machine through ssh -L to {place.binds} on {place.server_host}",
                     f"check that sshd on {place.server_host} allows TCP forwarding (AllowTcpForwarding)",
                     lambda host, port: _through_forward(hosts[place.server_host], place, port, logs, None))
    return Route(f"the direct path from this machine to {place.listen_address}", _opening(place, "this machine"),
                 lambda host, port: dial(host, place.listen_address, port))


def client_route(place: Placement, hosts: Hosts, logs: Path) -> Route:
    if place.reach == "ssh":
        return Route(f"the path from {place.client_host} through ssh -R to this machine and ssh -L to "
                     f"{place.binds} on {place.server_host}",
                     f"check that sshd on {place.client_host} and {place.server_host} allows TCP forwarding",
                     lambda host, port: _through_forward(hosts[place.server_host], place, port, logs, host))
    return Route(f"the direct path from {place.client_host} to {place.listen_address}",
                 _opening(place, place.client_host), lambda host, port: dial(host, place.listen_address, port))


def _opening(place: Placement, who: str) -> str:
    return (f"open the server's ports to {who} (hosts.{place.server_host}.ports gives a fixed range), "
            f"or set hosts.{place.server_host}.reach: ssh")


def _through_forward(server: Host, place: Placement, port: int, logs: Path, client: Host | None) -> str | None:
    """Dial the listener through this machine's forward (and, from `client`, a reverse forward chained to it)."""
    try:
        forward = local_forward(server, dial_address(place.binds), port, logs)
    except RunFailed as error:
        return str(error)
    try:
        if client is None:
            return dial(Host("local"), "127.0.0.1", forward.port)
        try:
            chain = reverse_forward(client, forward.port, logs)
        except RunFailed as error:
            return str(error)
        try:
            return dial(client, "127.0.0.1", chain.port)
        finally:
            chain.close()
    finally:
        forward.close()
