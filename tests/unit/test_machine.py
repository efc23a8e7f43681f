"""This machine's ports and CPUs (hosts/machine.py): a free port can be listened on, and a CPU list naming a CPU
this process cannot use is refused in one line naming where it came from."""

from __future__ import annotations

import os
import socket

import pytest

from layerbench.errors import BadInput
from layerbench.hosts.machine import check_cpus, free_port


def test_a_free_port_can_be_listened_on() -> None:
    port = free_port()
    assert 0 < port < 65536
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", port))
        server.listen()


def test_cpus_this_process_may_use_pass() -> None:
    usable = sorted(os.sched_getaffinity(0))
    check_cpus(None, "variants.a.cpus")
    check_cpus("", "variants.a.cpus")
    check_cpus(",".join(f"{cpu}-{cpu}" for cpu in usable), "variants.a.cpus")


def test_a_cpu_beyond_this_process_is_refused_naming_the_field() -> None:
    beyond = max(os.sched_getaffinity(0)) + 1
    with pytest.raises(BadInput, match=rf"^variants\.a\.cpus: CPU {beyond} does not exist here; use CPUs among \["):
        check_cpus(f"0,{beyond}-{beyond + 2}", "variants.a.cpus")
