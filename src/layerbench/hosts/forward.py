"""Reaching a server through SSH (`reach: ssh` on a host of the inventory): a managed `ssh -N` process with one
TCP forward, over the host's own SSH options (key, known_hosts, port: hosts/inventory.py) on a connection of its
own (`ControlPath=none`: the campaign's shared connection is never cut by a forward's end), with
`ExitOnForwardFailure=yes` so a forward that cannot bind ends the process at once. Stopping the process removes the
forward; hosts/procs.py reaps it on Ctrl-C and errors like every process layerbench starts.

- `local_forward`: 127.0.0.1:<free port> here -> <bind address>:<port> on the server's host (`ssh -L`): the
  harness's own queries (readiness, server variables, status counters) and a sysbench run here use it.
- `reverse_forward`: 127.0.0.1:<a port its sshd allocates> on a client's host -> 127.0.0.1:<the local forward's
  port> here (`ssh -R`): sysbench on a third host reaches the server through the harness (a chain of two
  forwards), which needs no key or known_hosts entry for the server's host on the client's host (docs/topology.md
  says why)."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import RunFailed
from layerbench.hosts import procfs, procs
from layerbench.hosts.inventory import Host
from layerbench.hosts.machine import free_port

READY_SECONDS = 20.0


def dial_address(bind: str) -> str:
    """The address to dial a server at on its own host: its bind address, loopback for a wildcard one."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(bind, bind)


def forward_command(host: Host, spec: list[str]) -> list[str]:
    """The host's ssh command on a connection of its own, holding only the forward `spec` (`-L ...`)."""
    options = host.ssh_command()
    cut = options.index("--")
    kept: list[str] = []
    for option in options[1:cut]:
        if option.startswith(("ControlMaster=", "ControlPath=", "ControlPersist=")):
            kept[-1:] = []  # the `-o` before it
            continue
        kept.append(option)
    return [options[0], "-N", "-o", "ControlMaster=no", "-o", "ControlPath=none", "-o", "ExitOnForwardFailure=yes",
            *kept, *spec, *options[cut:]]


@dataclass(eq=False)
class Forward:
    """One forward's process and what it carries: `port` is where its listening end accepts connections; `host`
    the host its SSH connection goes to (a local forward's, for source_ports)."""

    process: procs.ManagedProcess
    port: int
    text: str  # the path in words, for the run's record
    host: str = ""

    def alive(self) -> bool:
        return self.process.alive()

    def close(self) -> None:
        LIVE.discard(self)
        self.process.stop(timeout=10)


LIVE: set[Forward] = set()  # this process's local forwards until they are closed


def source_ports(host: str) -> set[int]:
    """The source ports of this machine's open SSH connections that carry a live local forward to `host`: the
    peer port its sshd sees for them, by which measure/remote_cpu.py tells the sshd sessions that carry this
    harness's forwards there (`transport@<host>`) from the host's other load. None through a ProxyJump or a
    ProxyCommand (ssh then talks to a pipe, and the host sees the bastion's port)."""
    mine = [forward for forward in list(LIVE) if forward.host == host and forward.alive()]
    if not mine:
        return set()
    table = procfs.parse_tcp_connections(procfs.tcp_sockets())
    return {table[inode][1] for forward in mine for inode in procfs.socket_inodes(forward.process.pid)
            if inode in table}


def local_forward(host: Host, address: str, port: int, log_dir: Path | None) -> Forward:
    """127.0.0.1:<free port> here -> address:port as seen on `host`; ready when a connection here is accepted."""
    here = free_port("127.0.0.1")
    spec = ["-L", f"127.0.0.1:{here}:{address}:{port}"]
    process = procs.start(f"ssh forward to {host.name}", forward_command(host, spec),
                          log_path=log_dir / f"forward-{host.name}-{here}.log" if log_dir else None)
    forward = Forward(process, here, f"ssh -L 127.0.0.1:{here} here -> {address}:{port} on {host.name}", host.name)
    LIVE.add(forward)
    _wait(forward, lambda: _accepts(here), host)
    return forward


def reverse_forward(client: Host, local_port: int, log_dir: Path) -> Forward:
    """127.0.0.1:<a port the client host's sshd allocates> there -> 127.0.0.1:local_port here; ready when ssh has
    said which port it got (`Allocated port N`, in the forward's log)."""
    log = log_dir / f"forward-{client.name}-to-{local_port}.log"
    process = procs.start(f"ssh reverse forward on {client.name}",
                          forward_command(client, ["-R", f"127.0.0.1:0:127.0.0.1:{local_port}"]), log_path=log)
    forward = Forward(process, 0, f"ssh -R on {client.name} -> 127.0.0.1:{local_port} here")

    def allocated() -> bool:
        forward.port = allocated_port(log.read_text(encoding="utf-8", errors="replace") if log.exists() else "")
        return forward.port > 0

    _wait(forward, allocated, client)
    forward.text = f"ssh -R 127.0.0.1:{forward.port} on {client.name} -> 127.0.0.1:{local_port} here"
    return forward


def allocated_port(text: str) -> int:
    """The port ssh reports for a remote forward it asked the server to allocate; 0 before it said so."""
    found = re.search(r"^Allocated port ([0-9]{1,5}) for remote forward", text, re.MULTILINE)
    return int(found.group(1)) if found and 0 < int(found.group(1)) < 65536 else 0


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def _wait(forward: Forward, ready: Callable[[], bool], host: Host) -> None:
    """Until `ready()` says yes; the forward's process ending first, or READY_SECONDS passing, is a
    RunFailed naming the host and what ssh said (the process is stopped)."""
    deadline = time.monotonic() + READY_SECONDS
    while forward.alive() and time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    said = forward.process.tail(3).strip().replace("\n", "; ")[:200] or "no output"
    forward.close()
    raise RunFailed(f"hosts.{host.name}: the SSH forward did not come up ({forward.text}): {said}")


def reach_facts(host: Host, served: tuple[str, int] | None, forward: Forward | None) -> dict[str, object]:
    """A server's record of its paths on an ssh: host (run/reach.py reach_record): the host's `reach:`, where it
    listens there, and this machine's path to it (the forward, or direct)."""
    if served is None:
        return {}
    there = f"{served[0]}:{served[1]} on {host.name}"
    return {"reach": host.entry.reach, "server_listens": there,
            "harness_path": forward.text if forward else f"direct to {there}"}
