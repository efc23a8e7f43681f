"""The vm backend on an ssh: host of the inventory: the same QEMU guest as backends/vm/local.py (the same boot files,
server package and dataset bytes, vCPUs, memory, disk cache, KVM or a labelled TCG), started over SSH.

The boot files are built on this machine as today and sent once per host into `<work_dir>/vm-boot/<key>/`,
checked there with sha256sum against the sums taken here (a `shipped.json` marker lets later runs reuse them).
Each run has a 0700 folder `<work_dir>/runs/<label>/` there: the qcow2 overlay (qemu-img there), the data disk
made there from the dataset shipped with server/remote_files.py (`mkfs.ext4 -d`, the command vmimage.py runs here), the
config disk made there from the my.cnf and the init SQL (written over SSH's standard input, removed with the
folder), the console log, and QEMU's pid file. QEMU uses user networking with the guest's port forwarded from the
host's address, so every client connects there. `down` shuts the server down over SQL, waits for the guest to
power off, then stops QEMU and removes the folder (remote.remove_remote_folder)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layerbench.backends.base import Endpoint, ServerSpec
from layerbench.backends.host.remote import pick_port
from layerbench.backends.vm.local import EMULATED, GUEST_OWNED, VMBackend, server_script, sql_shutdown
from layerbench.backends.vm.qemu import (
    Disks,
    boot_with_fallback,
    check_guest_architecture,
    qemu_command,
    user_netdev,
    wait_for_guest,
)
from layerbench.backends.vm.variant import VMVariant
from layerbench.errors import BadInput, PrerequisiteMissing, RunFailed
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.inventory import Host
from layerbench.hosts.remote import detached_script, process_alive, start_detached
from layerbench.server.bootstrap import server_files
from layerbench.server.datadir import wait_until_ready
from layerbench.server.mycnf import check_overlay
from layerbench.server.remote_files import (
    check_tools,
    claim_run_folder,
    host_lock,
    release_run_folder,
    remote_snapshot,
    runs_root,
    ship_snapshot,
    storage_on_host,
)
from layerbench.server.vmimage import BootFiles, ensure_boot_files, ext4_command
from layerbench.vocabulary.sizes import byte_text

QEMU_TOOLS = ("qemu-system-x86_64", "qemu-img", "mkfs.ext4", "sha256sum")


def boot_sums(boot: BootFiles) -> dict[str, str]:
    """sha256 of each boot file, taken once and kept beside the boot files here."""
    cache = boot.root.parent / "sha256.json"
    with contextlib.suppress(OSError, ValueError):
        return dict(json.loads(cache.read_text()))
    sums = {}
    for path in (boot.kernel, boot.initrd, boot.root):
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(8 << 20), b""):
                digest.update(block)
        sums[path.name] = digest.hexdigest()
    cache.write_text(json.dumps(sums))
    return sums


def parse_sums(text: str) -> dict[str, str]:
    """sha256sum's `<hex>  <name>` lines -> {name: hex}; anything else is ignored."""
    out = {}
    for line in text.splitlines():
        digest, sep, name = line.partition("  ")
        if sep and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest):
            out[name.rsplit("/", 1)[-1]] = digest
    return out


def ship_boot_files(host: Host, boot: BootFiles, say: Callable[[str], None]) -> str:
    """The boot files in `<work_dir>/vm-boot/<key>/` on the host, sent and checked once; returns that folder."""
    sums = boot_sums(boot)
    folder = f"{host.work_dir}/vm-boot/{boot.root.parent.name}"
    with host_lock(host, f"{folder}.lock", "the VM boot files"):  # one sender at a time (server/remote_files.py)
        return _send_boot_locked(host, boot, sums, folder, say)


def _send_boot_locked(host: Host, boot: BootFiles, sums: dict[str, str], folder: str,
                      say: Callable[[str], None]) -> str:
    q, digest = shlex.quote(folder), hashlib.sha256(json.dumps(sums, sort_keys=True).encode()).hexdigest()[:32]
    if digest in host.shell(f"cat {q}/shipped.json 2>/dev/null; true", name="marker").output:
        return folder
    root_disk = byte_text(boot.root.stat().st_size, "MiB", ".0f")
    say(f"sending the VM boot files to host {host.name} ({root_disk} root disk)")
    host.shell(f"rm -f {q}/shipped.json && mkdir -p {q}", name=f"mkdir on {host.name}")
    host.send_files([boot.kernel, boot.initrd, boot.root], folder)
    there = parse_sums(host.shell(f"cd {q} && sha256sum {' '.join(shlex.quote(n) for n in sums)}", timeout=None,
                                  name=f"sha256sum on {host.name}").output)
    if there != sums:
        raise RunFailed(f"hosts.{host.name}: the VM boot files sent to {folder} do not match their sums here")
    host.shell(f"cat > {q}/shipped.json", input_text=json.dumps({"sums": digest}), name="marker")
    return folder


class RemoteVMBackend(VMBackend):
    """VMBackend with QEMU, its disks and its console on an ssh: host."""

    def __init__(self, variant: VMVariant, host: Host) -> None:
        super().__init__(variant)
        self.host = host
        self.folder: str | None = None
        self.owner: str | None = None
        self.pid: int | None = None
        self.kvm = False

    def check(self) -> None:
        v, where = self.variant, f"variants.{self.variant.name}"
        if v.network != "user":
            raise BadInput(f"{where}.network: a vm on an ssh: host uses network: user (its port forwarded from the "
                           "host's address); tap is built for this machine only")
        if not v.memory[:-1].isdigit() or v.memory[-1].upper() not in "MG":
            raise BadInput(f"{where}.memory: {v.memory!r} is not a size like 2G or 1536M")
        check_overlay(v.server.config, where)
        self.host.check()
        missing = check_tools(self.host) + [t for t in QEMU_TOOLS if self.host.run(
            ["sh", "-c", f"command -v {t} || [ -x /usr/sbin/{t} ]"], timeout=30).returncode != 0]
        if missing:
            raise PrerequisiteMissing(f"{where}.server_host: host {self.host.name} lacks {', '.join(missing)}; "
                                      "install them there (Debian: qemu-system-x86 qemu-utils e2fsprogs rsync "
                                      "xxhash iproute2)")
        uname = self.host.run(["uname", "-m"], timeout=30)
        check_guest_architecture(where, self.host.name, uname.output.strip() if uname.returncode == 0 else None,
                                 v.accel)
        if v.accel == "kvm" and not self._kvm_there():
            raise BadInput(f"{where}.accel: kvm, but /dev/kvm does not open on host {self.host.name}; use accel: "
                           "auto or tcg")

    def _kvm_there(self) -> bool:
        return self.host.run(["sh", "-c", "[ -r /dev/kvm ] && [ -w /dev/kvm ]"], timeout=30).returncode == 0

    def prepare(self, say: Callable[[str], None]) -> None:
        ship_boot_files(self.host, ensure_boot_files(say), say)

    def up(self, spec: ServerSpec) -> Endpoint:
        self.spec, boot = spec, ensure_boot_files(lambda _t: None)
        self.boot = boot
        boot_dir = ship_boot_files(self.host, boot, lambda _t: None)
        with signals_deferred():  # noted for down() and `clean` before anything exists on the host
            self.folder, self.owner = claim_run_folder(self.host, self.variant.data_dir, spec.label)
        folder = self.folder
        disks = self._remote_disks(spec, folder, boot_dir)
        port = pick_port(self.host)
        self.facts["network_path"] = f"QEMU user networking on host {self.host.name}, {spec.listen_address}:{port}"
        endpoint = Endpoint(spec.listen_address, port, spec.user, spec.password, spec.database)
        self.kvm = self._kvm_there()
        started = time.monotonic()

        def boot_once(accel: str, deadline: float) -> tuple[str, float | None]:
            self._start_remote(accel, disks, user_netdev(port, spec.listen_address), folder)
            state, uptime = wait_for_guest(self._console, self._alive, deadline, poll=0.5)
            return ("QEMU exited" if state == "exited" else state), uptime

        accel, uptime, reason = boot_with_fallback(self.variant.accel, boot_once, self._kill, kvm_ok=self.kvm,
                                                   boot_timeout=self.variant.boot_timeout)
        self.facts |= {"accel": accel, "accel_reason": reason, "boot_seconds": round(time.monotonic() - started, 1),
                       "guest_uptime_at_ready": uptime, "guest_kernel": boot.kernel_version,
                       "server_host": self.host.name}
        if accel == "tcg":
            self.facts["warnings"] = [EMULATED + (f" ({reason})" if reason else "")]
        wait_until_ready(endpoint, alive=self._alive, timeout=120, log_tail=self.server_log_tail)
        self.endpoint = endpoint
        self.facts["storage"] = storage_on_host(self.host, runs_root(self.host, self.variant.data_dir))
        return endpoint

    def _remote_disks(self, spec: ServerSpec, folder: str, boot_dir: str) -> Disks:
        """The overlay, data and config disks, made on the host in the run's folder."""
        q, h = shlex.quote(folder), self.host
        h.shell(f"umask 077 && mkdir -p {q}/vm-config", name=f"mkdir on {h.name}")
        run_checked(h, ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b",
                        f"{boot_dir}/{Path(str(self.boot.root if self.boot else 'root.img')).name}",
                        f"{folder}/root.qcow2"], spec.run_dir)
        if spec.snapshot is not None:
            ship_snapshot(h, spec.snapshot.parent, spec.run_dir, lambda _t: None)
            size = _manifest_bytes(spec.snapshot.parent)
            data = ext4_command(f"{remote_snapshot(h, spec.snapshot.parent.name)}/datadir", size,
                                f"{folder}/data.img", extra_mib=max(512, size // 2**20), label="data")
        else:
            data = ext4_command(None, 0, f"{folder}/data.img", extra_mib=1024, label="data")
        run_checked(h, data, spec.run_dir)
        files = server_files(spec, GUEST_OWNED, self.server.flavour)
        h.write_private(f"{folder}/vm-config/my.cnf", files.mycnf)
        h.write_private(f"{folder}/vm-config/server.sh", server_script(self.server))
        h.write_private(f"{folder}/vm-config/init.sql", files.init_sql)
        if spec.snapshot is None:
            h.write_private(f"{folder}/vm-config/fresh", "")
        run_checked(h, ext4_command(f"{folder}/vm-config", 1 << 16, f"{folder}/config.img", extra_mib=4, min_mib=8,
                                    label="config"), spec.run_dir)
        h.shell(f"rm -rf {q}/vm-config && chmod 600 {q}/config.img", name=f"rm on {h.name}")
        return Disks(Path(f"{folder}/root.qcow2"), Path(f"{folder}/data.img"), Path(f"{folder}/config.img"))

    def _start_remote(self, accel: str, disks: Disks, netdev: str, folder: str) -> None:
        assert self.boot is not None
        f, boot_dir = shlex.quote(folder), f"{self.host.work_dir}/vm-boot/{self.boot.root.parent.name}"
        self.host.shell(f"rm -f {f}/console.log {f}/qemu.pid {f}/qmp.sock", name=f"rm on {self.host.name}")
        cmd = qemu_command(accel=accel, vcpus=self.variant.vcpus, memory=self.variant.memory,
                           kernel=Path(f"{boot_dir}/{self.boot.kernel.name}"),
                           initrd=Path(f"{boot_dir}/{self.boot.initrd.name}"), disks=disks,
                           cache=self.variant.disk_cache, netdev=netdev, guest_ip="10.0.2.15/24", gateway="10.0.2.2",
                           qmp=Path(f"{folder}/qmp.sock"), console=Path(f"{folder}/console.log"),
                           pidfile=Path(f"{folder}/qemu.pid"), marker=folder)
        taskset = ["taskset", "-c", self.variant.cpus] if self.variant.cpus else []
        script = detached_script(folder, shlex.join([*taskset, *cmd]), "qemu.log", "launch.pid")
        with signals_deferred():
            self.pid = start_detached(self.host, script, name=f"qemu on {self.host.name}",
                                      failed=f"hosts.{self.host.name}: QEMU did not start")

    def _console(self) -> str:
        if self.folder is None:
            return ""
        done = self.host.run(["cat", f"{self.folder}/console.log"], name=f"console on {self.host.name}", timeout=30)
        return done.output if done.returncode == 0 else ""

    def _alive(self) -> bool:
        return process_alive(self.host, self.pid)

    def _kill(self) -> None:
        if self.pid is not None:
            self.host.run(["kill", str(self.pid)], name=f"kill on {self.host.name}", timeout=30)
            end = time.monotonic() + 10
            while self._alive() and time.monotonic() < end:
                time.sleep(0.3)
            self.pid = None

    def down(self) -> None:
        with signals_deferred():
            if self.pid is not None and self._alive_quietly():
                self._shutdown()
            self._keep_remote_console()
            release_run_folder(self.host, self.folder, self.owner)
            self.folder = self.owner = self.pid = None
            self.spec = None

    def _alive_quietly(self) -> bool:
        try:
            return self._alive()
        except RunFailed:
            return False

    def _shutdown(self) -> None:
        """SQL SHUTDOWN (the guest's init syncs and powers off), waited for a short while."""
        asked = sql_shutdown(self.endpoint)
        with contextlib.suppress(Exception):
            end = time.monotonic() + (30 if asked else 0)  # not asked (it boots): no power-off to wait for
            while time.monotonic() < end and self._alive() and "LAYERBENCH-DOWN" not in self._console():
                time.sleep(0.5)

    def _keep_remote_console(self) -> None:
        with contextlib.suppress(Exception):
            if self.spec is not None and (text := self._console()):
                (self.spec.run_dir / "console.log").write_text(text)

    def exit_cause(self) -> str | None:
        if self.pid is not None and not self._alive_quietly():
            return f"(its QEMU on host {self.host.name}) exited"
        return None

    def components(self) -> dict[str, list[int]]:
        return {"qemu": [self.pid]} if self.pid else {}

    def client_processes(self, hook: Path) -> list[int]:
        return []

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "server_host": self.host.name}

    def server_log_tail(self, lines: int = 20) -> str:
        return "\n".join(self._console().splitlines()[-lines:])


def _manifest_bytes(folder: Path) -> int:
    from layerbench.server.manifest import read_manifest

    manifest = read_manifest(folder)
    return manifest.total_bytes if manifest else 0


def run_checked(host: Host, cmd: list[str], log_dir: Path) -> None:
    done = host.run(cmd, name=f"{cmd[0]} on {host.name}", log_path=log_dir / "vm-remote.log", timeout=600)
    if done.returncode != 0:
        raise RunFailed(f"hosts.{host.name}: {cmd[0]} failed: {done.output.strip()[-200:]}")
