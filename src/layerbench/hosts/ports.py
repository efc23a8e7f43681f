"""A server's TCP port on a host of the inventory: a free one in the host's `ports:` range (a firewall's opening),
else in PORTS; chosen on that host, with its own `ss` (the backends on ssh: hosts and validate's path probes)."""

from __future__ import annotations

import random

from layerbench.errors import RunFailed
from layerbench.hosts.inventory import Host, port_range

PORTS = (20000, 40000)


def pick_port(host: Host) -> int:
    """A port no TCP socket uses on the host (ss, every state: a connection's local port blocks a bind as a
    listener does), random in PORTS so two campaigns rarely try the same, and outside the host's ephemeral range
    while any candidate is (its outgoing connections take ports from that range at any moment: a port free when
    checked was found taken by the server's bind a second later). A host with `ports:` (a firewall's opening)
    gets one of those."""
    low, high = port_range(host.entry.ports) if host.entry.ports else (PORTS[0], PORTS[1] - 1)
    span = range(low, high + 1)
    candidates = " ".join(map(str, random.sample(span, min(40, len(span)))))
    script = ("read lo hi < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || { lo=1; hi=0; }; "
              f"for pass in 1 2; do for p in {candidates}; do "
              '[ "$pass" = 1 ] && [ "$p" -ge "$lo" ] && [ "$p" -le "$hi" ] && continue; '
              'ss -Htan "sport = :$p" | grep -q . || { echo PORT $p; exit 0; }; done; done; exit 1')
    done = host.shell(script, name=f"port on {host.name}", timeout=30)
    for line in done.output.splitlines():
        if line.startswith("PORT "):
            return int(line.split()[1])
    if host.entry.ports:
        raise RunFailed(f"hosts.{host.name}.ports: no free port in {host.entry.ports} on that host (40 tried); "
                        "widen the range or stop what uses it")
    raise RunFailed(f"hosts.{host.name}: no free port found in {PORTS[0]}-{PORTS[1]}")
