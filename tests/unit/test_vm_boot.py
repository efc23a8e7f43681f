"""The VM's boot decisions without QEMU: the accelerator fallback on a guest that never boots (the deadline, not a
hang), the console protocol of the guest init, the initramfs archive format, the QEMU command line."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from layerbench.backends.vm.qemu import (
    AccelDecision,
    Disks,
    boot_with_fallback,
    console_state,
    qemu_command,
    wait_for_guest,
)
from layerbench.errors import RunFailed
from layerbench.server.vmimage import module_closure, newc_entry


class FakeGuests:
    """Boots that behave per accelerator: 'hang' (never ready: waits out its deadline), 'ready'."""

    def __init__(self, behaviour: dict[str, str]) -> None:
        self.behaviour, self.calls, self.stops = behaviour, [], 0

    def boot(self, accel: str, deadline: float) -> tuple[str, float | None]:
        self.calls.append((accel, deadline))
        if self.behaviour[accel] == "ready":
            return "ready", 1.5
        return wait_for_guest(lambda: "[    0.000000] Linux version 6.1\n", lambda: True, deadline=0.05)

    def stop(self) -> None:
        self.stops += 1


def test_auto_falls_back_to_tcg_when_the_kvm_guest_hangs_and_remembers_it() -> None:
    guests, decisions = FakeGuests({"kvm": "hang", "tcg": "ready"}), AccelDecision()
    accel, uptime, reason = boot_with_fallback("auto", guests.boot, guests.stop, kvm_ok=True, boot_timeout=300,
                                               decisions=decisions)
    assert (accel, uptime) == ("tcg", 1.5) and "did not boot within 60 s" in reason and "TCG was used" in reason
    assert [a for a, _ in guests.calls] == ["kvm", "tcg"] and guests.calls[0][1] == 60 and guests.stops == 1
    again = FakeGuests({"kvm": "hang", "tcg": "ready"})
    accel, _, reason2 = boot_with_fallback("auto", again.boot, again.stop, kvm_ok=True, boot_timeout=300,
                                           decisions=decisions)
    assert accel == "tcg" and [a for a, _ in again.calls] == ["tcg"] and reason2 == reason  # no second hang


def test_auto_uses_kvm_when_it_boots_and_tcg_when_there_is_no_kvm() -> None:
    accel, _, reason = boot_with_fallback("auto", FakeGuests({"kvm": "ready"}).boot, lambda: None, kvm_ok=True,
                                          boot_timeout=300, decisions=AccelDecision())
    assert accel == "kvm" and "booted" in reason
    accel, _, reason = boot_with_fallback("auto", FakeGuests({"tcg": "ready"}).boot, lambda: None, kvm_ok=False,
                                          boot_timeout=300, decisions=AccelDecision())
    assert accel == "tcg" and "does not open" in reason


def test_a_guest_that_never_boots_fails_within_its_deadline() -> None:
    guests = FakeGuests({"tcg": "hang"})
    started = time.monotonic()
    with pytest.raises(RunFailed, match="did not become ready under TCG"):
        boot_with_fallback("tcg", guests.boot, guests.stop, kvm_ok=False, boot_timeout=5,
                           decisions=AccelDecision())
    assert time.monotonic() - started < 5 and guests.stops == 1


def test_wait_for_guest_sees_ready_failure_and_a_dead_qemu() -> None:
    assert wait_for_guest(lambda: "x\nLAYERBENCH-READY 12.5 s\n", lambda: True, 1) == ("ready", 12.5)
    assert wait_for_guest(lambda: "LAYERBENCH-FAILED no data disk\n", lambda: True, 1)[0] == "failed: no data disk"
    assert wait_for_guest(lambda: "booting", lambda: False, 1) == ("exited", None)
    assert console_state("LAYERBENCH-READY 3 s\n...\nLAYERBENCH-DOWN\n")[0] == "down"


def test_qemu_command_line() -> None:
    disks = Disks(Path("/w/root.qcow2"), Path("/w/data.img"), Path("/p/config.img"))
    cmd = qemu_command(accel="tcg", vcpus=2, memory="2G", kernel=Path("/k/vmlinuz"), initrd=Path("/k/initrd.gz"),
                       disks=disks, cache="none", netdev="user,id=n0", guest_ip="10.0.2.15/24", gateway="10.0.2.2",
                       qmp=Path("/w/qmp.sock"), console=Path("/w/console.log"), pidfile=Path("/w/qemu.pid"),
                       marker="/w")
    text = " ".join(cmd)
    assert "q35,accel=tcg" in text and "-cpu max" in text and "-smp 2" in text and "-m 2G" in text
    assert "file=/w/data.img,format=raw,if=virtio,cache=none" in text and "readonly=on" in text
    assert "lb.ip=10.0.2.15/24 lb.gw=10.0.2.2" in text and "-no-reboot" in cmd


def test_newc_entries_are_aligned_and_parse_back() -> None:
    entry = newc_entry("init", b"#!/bin/sh\n", 0o100755, 1)
    assert entry.startswith(b"070701") and len(entry) % 4 == 0
    assert int(entry[6 + 8 * 6:6 + 8 * 7], 16) == len(b"#!/bin/sh\n")  # c_filesize
    assert gzip.decompress(gzip.compress(entry)) == entry


def test_module_closure_puts_dependencies_first(tmp_path: Path) -> None:
    modules = {"kernel/fs/ext4/ext4.ko": "jbd2,mbcache", "kernel/fs/jbd2/jbd2.ko": "", "kernel/fs/mbcache.ko": "",
               "kernel/drivers/block/virtio_blk.ko": "virtio", "kernel/drivers/virtio/virtio.ko": ""}
    for rel, depends in modules.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"\x7fELF...\0license=GPL\0depends=" + depends.encode() + b"\0intree=Y\0")
    order = module_closure(tmp_path, ("virtio_blk", "ext4"))
    assert order.index("kernel/drivers/virtio/virtio.ko") < order.index("kernel/drivers/block/virtio_blk.ko")
    assert order[-1] == "kernel/fs/ext4/ext4.ko" and len(order) == 5
    with pytest.raises(RunFailed, match="no module nvme"):
        module_closure(tmp_path, ("nvme",))


def guest_functions(server_sh: str, tmp_path: Path) -> dict[str, str]:
    """What each function of a server.sh runs, as a shell reads it (the guest's sh parses it; bash prints it)."""
    import subprocess

    script = tmp_path / "server.sh"
    script.write_text(server_sh)
    subprocess.run(["sh", "-n", str(script)], check=True)
    out = {}
    for name in ("init_datadir", "run_server", "server_ready"):
        done = subprocess.run(["bash", "-c", f". {script} && declare -f {name}"], capture_output=True, text=True,
                              check=True)
        out[name] = done.stdout
    return out


def test_the_guest_server_script_runs_each_flavours_own_commands(tmp_path: Path) -> None:
    """The config disk's server.sh says how the guest makes, starts and pings its server; the init names none."""
    from layerbench.backends.vm.local import server_script
    from layerbench.server.flavour import MARIADB, parse_version
    from layerbench.server.servers import IMAGE_PROGRAMS, ServerProgram
    from layerbench.server.vmimage import guest_init

    mysql = parse_version("/usr/sbin/mysqld  Ver 9.7.4-2 for Linux on x86_64 ((Debian))")
    assert mysql is not None
    maria = guest_functions(server_script(ServerProgram(MARIADB, (IMAGE_PROGRAMS["mariadb"],))), tmp_path)
    assert "mariadb-install-db --no-defaults --datadir=/var/lib/mysql" in maria["init_datadir"]
    assert "exec mariadbd" in maria["run_server"] and "mariadb-admin" in maria["server_ready"]
    my = guest_functions(server_script(ServerProgram(mysql, (IMAGE_PROGRAMS["mysql"],))), tmp_path)
    assert "/usr/sbin/mysqld --no-defaults --initialize-insecure --datadir=/var/lib/mysql" in my["init_datadir"]
    assert "exec /usr/sbin/mysqld" in my["run_server"]
    assert "test -S /run/mysqld/mysqld.sock" in my["server_ready"]  # the rootfs has no mysqladmin
    assert not any(word in guest_init() for word in ("mariadbd ", "mariadb-admin", "mysqld "))


def test_the_mysql_root_disk_has_a_boot_key_of_its_own() -> None:
    from layerbench.server.vmimage import boot_key

    assert boot_key("6.1.0-1-amd64", "mysql-9.7.4-2-abc") != boot_key("6.1.0-1-amd64", "mysql-9.7.4-2-abd")
    assert boot_key("6.1.0-1-amd64", "mysql-9.7.4-2-abc") != boot_key("6.1.0-1-amd64", "k")
