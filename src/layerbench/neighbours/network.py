"""A network neighbour's peer (docs/neighbours.md): where its iperf3 server runs, the host its `to:` names (beside
its client for `loopback`; this machine at that host's address; an ssh: host, over SSH from a folder of its own there
noted for `layerbench clean`, neighbours/remote.py), started on a free port and waited for until it listens, before
its client starts wherever the neighbour is placed (running.py)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import RunFailed
from layerbench.hosts import owners, procfs
from layerbench.hosts.inventory import HostEntry
from layerbench.hosts.machine import free_port
from layerbench.neighbours import tools
from layerbench.neighbours.model import Neighbour
from layerbench.neighbours.placed import Placed
from layerbench.neighbours.remote import RemoteNeighbour

LISTEN_SECONDS = 15  # how long its iperf3 server may take to listen (an ssh: host's answer included)


def listening(port: int) -> bool:
    """Whether a TCP socket listens on `port` here (from /proc/net/tcp and tcp6: state 0A)."""
    return tools.listens_in(procfs.tcp_sockets(), port)


@dataclass(frozen=True)
class Peer:
    """Where a network neighbour's iperf3 server runs: `host` None for this machine, else an ssh: host's name,
    and the address its client sends to."""

    host: str | None
    entry: HostEntry | None
    address: str


def peer_of(neighbour: Neighbour, hosts: dict[str, HostEntry] | None) -> Peer:
    """`to: loopback`: beside its client (on its ssh: host, or here); a local host: here, at its address; an
    ssh: host: there, at the address other hosts reach it at."""
    to = neighbour.to or "loopback"
    if to == "loopback":
        if neighbour.placement == "ssh":
            return Peer(neighbour.host, (hosts or {}).get(neighbour.host or ""), "127.0.0.1")
        return Peer(None, None, "127.0.0.1")
    entry = (hosts or {}).get(to)
    if entry is None:
        raise RunFailed(f"neighbour {neighbour.name}: to: {to} is not in `hosts:`")
    if entry.local:
        return Peer(None, None, entry.address or "127.0.0.1")
    return Peer(to, entry, entry.reach_address() or "127.0.0.1")


def start_peer(neighbour: Neighbour, label: str, peer: Peer, folder: Path,
               spawn: Callable[[str, list[str], str], Placed]) -> tuple[Placed, int]:
    """The iperf3 server (one client, then it exits) on a free port of its peer, once it listens; `spawn` starts
    a process here (noted for `clean` by the marker it is given)."""
    server_report = folder / f"{neighbour.name}.iperf3-server.json"
    if peer.host is None:
        port = free_port(peer.address)
        server = spawn(f"{label}-server", tools.iperf3_server_command(peer.address, port, server_report),
                       str(server_report))
        up: Callable[[], bool] = lambda: listening(port)  # noqa: E731
    else:
        if peer.entry is None:
            raise RunFailed(f"neighbour {neighbour.name}: host {peer.host} is not in `hosts:`")
        port = 20_000 + secrets.randbelow(30_000)  # its host's: taken there, iperf3 stops and says so
        remote = RemoteNeighbour.start(
            neighbour, f"{label}-server", peer.entry, server_report,
            folder / f"{neighbour.name}-server.log", host_name=peer.host, as_asked=False,
            tool=lambda path: tools.iperf3_server_command(peer.address, port, Path(path)))
        server, up = remote, lambda: remote.listening(port)
    deadline = time.monotonic() + LISTEN_SECONDS
    while not up() and server.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    if not up():
        tail = server.tail(3)
        server.stop(timeout=5)
        if peer.host is None:
            owners.forget(f"{label}-server")
        raise RunFailed(f"neighbour {neighbour.name}: iperf3's server did not listen on {peer.address}:{port}"
                        f"{f' on host {peer.host}' if peer.host else ''}; {tail or 'no output'}")
    return server, port
