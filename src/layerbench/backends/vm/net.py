"""The VM's network. `user`: QEMU's user-mode network, the server's port forwarded on 127.0.0.1 (no root, a
userland TCP relay in the QEMU process: a slow path of its own). `tap`: a tap device on a bridge that layerbench
creates per run, with a /24 of 10.251.0.0/16 that no other bridge of this machine uses, virtio-net with vhost
where /dev/vhost-net exists. Device names carry the harness PID (lbvb<pid>x<n>, lbvt<pid>x<n>) so `clean`
removes exactly those of harnesses that are gone."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from layerbench.backends.base import Leftovers
from layerbench.errors import RunFailed
from layerbench.hosts.procs import Captured, capture, pid_alive

NAME = re.compile(r"^lbv[bt](\d+)x(\d+)$")
IP_TIMEOUT = 30.0  # one `ip` command: a device added, removed or listed


@dataclass(frozen=True)
class TapNet:
    bridge: str
    tap: str
    host_ip: str
    guest_ip: str
    vhost: bool


def ip(*args: str) -> Captured:
    return capture(["ip", *args], timeout=IP_TIMEOUT)


def used_subnets() -> set[int]:
    return {int(m) for m in re.findall(r"inet 10\.251\.(\d+)\.", ip("-o", "-4", "addr", "show").stdout)}


def free_subnet() -> int:
    used = used_subnets()
    for third in range(1, 255):
        if third not in used:
            return third
    raise RunFailed("no free /24 left in 10.251.0.0/16 for a VM bridge; run `layerbench clean`")


def create_tap(run_number: int) -> TapNet:
    """A bridge with the host's address and a tap on it for QEMU; undone by remove_tap."""
    suffix = f"{os.getpid()}x{run_number % 1000}"
    third = free_subnet()
    net = TapNet(f"lbvb{suffix}", f"lbvt{suffix}", f"10.251.{third}.1", f"10.251.{third}.2",
                 Path("/dev/vhost-net").exists())
    steps = [("link", "add", net.bridge, "type", "bridge"), ("addr", "add", f"{net.host_ip}/24", "dev", net.bridge),
             ("link", "set", net.bridge, "up"), ("tuntap", "add", "dev", net.tap, "mode", "tap"),
             ("link", "set", net.tap, "master", net.bridge), ("link", "set", net.tap, "up")]
    for step in steps:
        done = ip(*step)
        if done.returncode != 0:
            remove_tap(net)
            raise RunFailed(f"network: ip {' '.join(step)} failed ({done.stderr.strip()}); tap needs root, or "
                            "use network: user")
    return net


def remove_tap(net: TapNet) -> None:
    for name in (net.tap, net.bridge):
        ip("link", "del", name)


def leftover_devices(include_live: bool = False) -> list[str]:
    """Our bridges and taps whose harness is gone (or all of them)."""
    names = [line.split(":")[1].strip().split("@")[0] for line in ip("-o", "link", "show").stdout.splitlines()
             if line.count(":") >= 2]
    found = []
    for name in names:
        match = NAME.match(name)
        if match and (include_live or not pid_alive(int(match.group(1))) or int(match.group(1)) == os.getpid()):
            found.append(name)
    return sorted(found, key=lambda n: n[3] != "t")  # taps before their bridges


def clean_devices(include_live: bool = False) -> list[str]:
    done = []
    for name in leftover_devices(include_live):
        if ip("link", "del", name).returncode == 0:
            done.append(f"removed network device {name}")
    return done


LEFTOVERS = Leftovers("VM network device", clean=clean_devices, find=leftover_devices, after_processes=True)
