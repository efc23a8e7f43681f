"""QEMU for one run: the command line (pure), the accelerator decision with its boot deadline, a minimal QMP
client for the graceful end, and the serial console the guest init reports on (LAYERBENCH-READY, ...).

`accel: auto` tries KVM when /dev/kvm opens, but a guest that has not reported readiness within
KVM_DEADLINE seconds is killed and booted again under TCG (nested KVM guests can hang in early boot: they do
on the machines this was built on). The decision is remembered for the rest of the campaign and recorded,
with a loud warning: TCG numbers are emulation, never a virtualisation overhead."""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import RunFailed
from layerbench.hosts.architecture import check_same, this_machine

KVM_DEADLINE = 60.0
SERVER_EXITED = "server exited during start-up in the VM"  # a guest that booted, whose server then ended
GUEST_ARCHITECTURE = "x86_64"  # qemu-system-x86_64, machine q35


def check_guest_architecture(where: str, host: str, host_architecture: str | None, accel: str) -> None:
    """The guest's disk is built here from this machine's packages and booted as an x86_64 guest: refuse (one line)
    a machine of another architecture, and KVM on a host (`host_architecture`: its `uname -m`, None for this
    machine) that is not x86_64, where only TCG can run the guest."""
    check_same("the guest's root disk, built from this machine's packages,", this_machine(), where,
               [("the x86_64 guest of qemu-system-x86_64", GUEST_ARCHITECTURE)],
               "run the vm backend from an x86_64 machine")
    if host_architecture is not None and accel == "kvm":
        check_same("the x86_64 guest under KVM", GUEST_ARCHITECTURE, f"{where}.accel", [(host, host_architecture)],
                   "use accel: tcg there (emulation), or a host of x86_64")


@dataclass(frozen=True)
class Disks:
    root_overlay: Path
    data: Path
    config: Path
    data_format: str = "raw"  # qcow2: a copy-on-write overlay of a prepared base image (backends/vm/datadisk.py)


def kvm_usable() -> bool:
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError:
        return False
    os.close(fd)
    return True


def qemu_command(*, accel: str, vcpus: int, memory: str, kernel: Path, initrd: Path, disks: Disks,
                 cache: str, netdev: str, guest_ip: str, gateway: str, qmp: Path, console: Path,
                 pidfile: Path, marker: str) -> list[str]:
    """The whole QEMU command line. `marker` (the run's folder) makes the process findable by `clean`."""
    append = (f"console=ttyS0 root=/dev/vda rw panic=-1 quiet loglevel=3 lb.ip={guest_ip} lb.gw={gateway} "
              f"lb.run={marker}")
    drive = f"if=virtio,cache={cache},aio=threads"
    return [
        "qemu-system-x86_64", "-name", "layerbench", "-machine", f"q35,accel={accel}",
        "-cpu", "host" if accel == "kvm" else "max", "-smp", str(vcpus), "-m", memory.rstrip("B"),
        "-kernel", str(kernel), "-initrd", str(initrd), "-append", append,
        "-drive", f"file={disks.root_overlay},format=qcow2,{drive}",
        "-drive", f"file={disks.data},format={disks.data_format},{drive}",
        "-drive", f"file={disks.config},format=raw,if=virtio,readonly=on",
        "-netdev", netdev, "-device", "virtio-net-pci,netdev=n0",
        "-qmp", f"unix:{qmp},server=on,wait=off", "-serial", f"file:{console}", "-display", "none",
        "-monitor", "none", "-no-reboot", "-nodefaults", "-pidfile", str(pidfile),
    ]


def user_netdev(host_port: int, address: str = "127.0.0.1", guest_port: int = 3306) -> str:
    """QEMU user networking with the guest's server port (3306; PostgreSQL's 5432) forwarded from
    address:host_port (another host's address when the VM runs on an ssh: host)."""
    return f"user,id=n0,net=10.0.2.0/24,hostfwd=tcp:{address}:{host_port}-10.0.2.15:{guest_port}"


def tap_netdev(tap: str, vhost: bool) -> str:
    return f"tap,id=n0,ifname={tap},script=no,downscript=no{',vhost=on' if vhost else ''}"


def console_state(text: str) -> tuple[str, float | None]:
    """What the guest said last: ready (with its uptime), failed, down, or booting."""
    if m := re.search(r"LAYERBENCH-FAILED (.*)", text):
        return "failed: " + m.group(1).strip(), None
    if "LAYERBENCH-DOWN" in text:
        return "down", None
    if m := re.search(r"LAYERBENCH-READY ([0-9.]+)", text):
        return "ready", float(m.group(1))
    return "booting", None


def wait_for_guest(console: Callable[[], str], alive: Callable[[], bool], deadline: float,
                   poll: float = 0.25) -> tuple[str, float | None]:
    """Until the guest reports readiness, fails, its QEMU exits, or the deadline passes (then "timeout")."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        state, uptime = console_state(console())
        if state != "booting":
            return state, uptime
        if not alive():
            return "exited", None
        time.sleep(poll)
    return "timeout", None


class AccelDecision:
    """Which accelerator this campaign uses, decided at the first boot and kept (so one hang costs once)."""

    def __init__(self) -> None:
        self.chosen: dict[str, str] = {}
        self.reason: dict[str, str] = {}

    def candidates(self, asked: str, kvm_ok: bool) -> list[str]:
        if asked in self.chosen:
            return [self.chosen[asked]]
        if asked == "auto":
            return ["kvm", "tcg"] if kvm_ok else ["tcg"]
        return [asked]


DECISIONS = AccelDecision()


def boot_with_fallback(asked: str, boot: Callable[[str, float], tuple[str, float | None]],
                       stop: Callable[[], None], *, kvm_ok: bool, boot_timeout: float,
                       decisions: AccelDecision = DECISIONS) -> tuple[str, float | None, str]:
    """Boot under the first workable accelerator. `boot(accel, deadline)` starts QEMU and waits; returns the
    accelerator, the guest's uptime at readiness, and why that accelerator was chosen."""
    candidates = decisions.candidates(asked, kvm_ok)
    reason = decisions.reason.get(asked, "")
    for index, accel in enumerate(candidates):
        last = index == len(candidates) - 1
        deadline = boot_timeout if last else min(KVM_DEADLINE, boot_timeout)
        state, uptime = boot(accel, deadline)
        if state == "ready":
            if asked == "auto" and asked not in decisions.chosen:
                reason = reason or ("/dev/kvm works and the KVM guest booted" if accel == "kvm" else
                                    "/dev/kvm does not open here" if not kvm_ok else reason)
                decisions.chosen[asked], decisions.reason[asked] = accel, reason
            return accel, uptime, reason or f"accel: {asked} asked by the campaign"
        stop()
        if state.startswith(SERVER_EXITED):  # the server's own line: another accelerator would not change it
            raise RunFailed(f"{state} (the guest's console.log is in the run folder)")
        if last:
            raise RunFailed(f"the VM did not become ready under {accel.upper()} within {deadline:.0f} s ({state}); "
                            "see console.log in the run folder, or raise boot_timeout")
        reason = (f"the KVM guest did not boot within {deadline:.0f} s (nested KVM can hang in early boot), so TCG "
                  "was used" if state == "timeout" else f"KVM did not work ({state}), so TCG was used")
    raise RunFailed("no accelerator to try")  # unreachable: candidates is never empty


class QMP:
    """Just enough of the QEMU Machine Protocol: connect, negotiate, send a command."""

    def __init__(self, path: Path, timeout: float = 5.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.file = self.sock.makefile("rwb")
        self._read()  # greeting
        self.command("qmp_capabilities")

    def _read(self) -> dict:
        while True:
            line = self.file.readline()
            if not line:
                raise ConnectionError("QMP closed")
            message = json.loads(line)
            if "event" not in message:
                return dict(message)

    def command(self, name: str) -> dict:
        self.file.write(json.dumps({"execute": name}).encode() + b"\n")
        self.file.flush()
        return self._read()

    def close(self) -> None:
        self.file.close()
        self.sock.close()
