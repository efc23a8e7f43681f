"""The path sysbench takes to a run's server, and the record of it (issue #42: reachability, docs/topology.md).

With `reach: direct` (the default) sysbench dials the endpoint the backend returned (the server host's `address:`),
and on the server's own ssh: host the address the server binds there. With `reach: ssh` the backend's server
listens where only its host reaches it (`bind_address:`, default 127.0.0.1) and this machine dials an SSH forward
(hosts/forward.py local_forward); sysbench here dials that forward, sysbench on the server's host dials the bind
address there, and sysbench on a third host dials a reverse forward on its host that leads to this machine's
forward (reverse_forward: a chain through the harness). Each run stores which path it took
(`environment.placement.reach`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from layerbench.backends import Backend
from layerbench.endpoint import Endpoint
from layerbench.hosts.forward import Forward, reverse_forward
from layerbench.hosts.inventory import Hosts
from layerbench.hosts.placement import Placement


@dataclass
class ClientPath:
    """The endpoint sysbench is given, the path in words, and the forward made for it (closed after the run)."""

    endpoint: Endpoint
    text: str
    forward: Forward | None = None

    def close(self) -> None:
        if self.forward is not None:
            self.forward.close()
            self.forward = None


def client_path(place: Placement, hosts: Hosts, backend: Backend, endpoint: Endpoint,
                log_dir: Path | None) -> ClientPath:
    """Where sysbench dials the server, from the host it runs on (docs/topology.md, "Reaching the server")."""
    served = backend.served_on_host()
    if served is None:  # a server here, or a backend that takes no reach: (the endpoint is the path)
        return ClientPath(endpoint, f"{place.reach}: {endpoint.host}:{endpoint.port}")
    address, port = served
    if place.client_host == place.server_host:
        return ClientPath(replace(endpoint, host=address, port=port),
                          f"on {place.server_host} itself: {address}:{port}")
    if place.reach != "ssh":
        return ClientPath(endpoint, f"direct: {endpoint.host}:{endpoint.port} from {place.client_host}")
    client = hosts[place.client_host]
    if client.is_local:
        return ClientPath(endpoint, f"ssh: this machine's forward 127.0.0.1:{endpoint.port} -> {address}:{port} on "
                                    f"{place.server_host}")
    chain = reverse_forward(client, endpoint.port, log_dir)
    return ClientPath(replace(endpoint, host="127.0.0.1", port=chain.port),
                      f"ssh: {chain.text}, then this machine's forward to {address}:{port} on {place.server_host}",
                      chain)


def reach_record(place: Placement, facts: dict[str, Any], path: ClientPath | None) -> dict[str, Any]:
    """The run's record of the paths: the host's `reach:`, where the server listened on its host (from the
    backend's facts), this machine's path to it and sysbench's."""
    return {"kind": place.reach, "server_listens": facts.get("server_listens"),
            "harness": facts.get("harness_path"), "client": path.text if path else None}
