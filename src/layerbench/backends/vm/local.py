"""The VM backend: the same server package and dataset bytes as the other variants, in a QEMU virtual machine
of the variant's size. Boot files are built once (server/vmimage.py); each run gets a qcow2 overlay on the
root disk, a qcow2 overlay of the dataset snapshot's base data disk (built once, backends/vm/datadisk.py), a
config disk (my.cnf, the init SQL with the
run's password, in the run's private folder), and either QEMU user networking or a tap on a bridge of its
own (backends/vm/net.py). The end is graceful (SQL SHUTDOWN, the guest init syncs and powers off), then QMP
`quit`, then a kill on deadline; the QEMU process, tap, bridge and disk images are always removed, also on
Ctrl-C, and `layerbench clean` finds what a killed harness left."""

from __future__ import annotations

import contextlib
import shlex
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layerbench.backends.base import BackendBase, Endpoint, ServerSpec
from layerbench.backends.vm import guestpg
from layerbench.backends.vm import net as vm_net
from layerbench.backends.vm.datadisk import METHOD, ensure_base, make_overlay, write_restore_facts
from layerbench.backends.vm.qemu import (
    QMP,
    SERVER_EXITED,
    Disks,
    boot_with_fallback,
    check_guest_architecture,
    kvm_usable,
    qemu_command,
    tap_netdev,
    user_netdev,
    wait_for_guest,
)
from layerbench.backends.vm.variant import VMVariant
from layerbench.errors import BadInput
from layerbench.hosts import owners
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.machine import check_cpus, free_port
from layerbench.hosts.procs import ManagedProcess, require_program, run, start, with_cpus
from layerbench.hosts.workdirs import datasets_dir
from layerbench.server.binary_root import require_root
from layerbench.server.bootstrap import server_files, write_server_files
from layerbench.server.datadir import connect, startup_error, wait_until_ready
from layerbench.server.mycnf import check_overlay
from layerbench.server.mysql_rootfs import MysqlRootfs, built_rootfses, require_rootfs
from layerbench.server.postgresql import check_reachable, first_error
from layerbench.server.servers import (
    DEFAULT_MYSQL,
    ServerProgram,
    image_server,
    resolve_server,
    rooted_image_server,
)
from layerbench.server.vmimage import BootFiles, ensure_boot_files, guest_packages, make_ext4
from layerbench.versions import version_output

GUEST_DATADIR = "/var/lib/mysql"
GUEST_SOCKET = "/run/mysqld/mysqld.sock"
EMULATED = ("emulated: QEMU ran this VM under TCG (software emulation, no hardware virtualisation), so its "
            "numbers measure emulation and must not be read as a virtualisation overhead")


def run_number(label: str) -> int:
    """The run's number from its label (lb<campaign>-<token>-<run>-<variant>), for device names; else 0."""
    parts = label.split("-")
    return int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 0


class VMBackend(BackendBase):
    kind = "vm"

    def __init__(self, variant: VMVariant) -> None:
        self.variant = variant
        self.spec: ServerSpec | None = None
        self.boot: BootFiles | None = None
        self.qemu: ManagedProcess | None = None
        self.tap: vm_net.TapNet | None = None
        self.work: Path | None = None
        self.facts: dict[str, Any] = {}
        self.endpoint: Endpoint | None = None

    # --- preflight -----------------------------------------------------------------------------------------

    def check(self) -> None:
        variant = self.variant
        where = f"variants.{variant.name}"
        require_program("qemu-system-x86_64", "apt-get install qemu-system-x86 (scripts/setup does it)")
        require_program("qemu-img", "apt-get install qemu-utils (scripts/setup does it)")
        check_overlay(variant.server.config, where)
        check_guest_architecture(where, "this machine", None, variant.accel)
        check_cpus(variant.cpus, f"{where}.cpus")
        if variant.accel == "kvm" and not kvm_usable():
            raise BadInput(f"{where}.accel: kvm, but /dev/kvm does not open here; use accel: auto or tcg")
        if not variant.memory[:-1].isdigit() or variant.memory[-1].upper() not in "MG":
            raise BadInput(f"{where}.memory: {variant.memory!r} is not a size like 2G or 1536M")
        if variant.network == "tap" and not Path("/dev/net/tun").exists():
            raise BadInput(f"{where}.network: tap needs /dev/net/tun; use network: user")
        if self.postgresql:  # this machine's PostgreSQL, run as user postgres, prepares and checks its snapshots
            check_reachable(datasets_dir(), "dataset snapshots (LAYERBENCH_DATASET_DIR)", f"{where}.server.flavour")

    def prepare(self, say: Callable[[str], None]) -> None:
        ensure_boot_files(say, *guest_root(self.variant), postgresql=self.postgresql)

    @property
    def postgresql(self) -> bool:
        return self.variant.server.flavour == "postgresql"

    @property
    def server(self) -> ServerProgram:
        return guest_server(self.variant)

    # --- lifecycle -----------------------------------------------------------------------------------------

    def up(self, spec: ServerSpec) -> Endpoint:
        variant, self.spec = self.variant, spec
        self.boot = ensure_boot_files(lambda _t: None, *guest_root(self.variant), postgresql=self.postgresql)
        with signals_deferred():  # noted for down() and `clean` before it exists
            self.work = spec.work_dir / "vm" / spec.label
            owners.record(spec.label, pid=None, marker=str(self.work), paths=[self.work])
        self.work.mkdir(parents=True, exist_ok=True)
        disks = self._disks(spec)
        netdev, guest_ip, gateway, endpoint = self._network(spec)
        started = time.monotonic()

        def boot(accel: str, deadline: float) -> tuple[str, float | None]:
            self._start_qemu(accel, disks, netdev, guest_ip, gateway)
            state, uptime = wait_for_guest(self._console, lambda: bool(self.qemu and self.qemu.alive()), deadline)
            if state == "exited" and self.qemu is not None:
                last = self.qemu.tail(1).strip()
                state = f"QEMU exited: {last}" if last else "QEMU exited"
            return server_exit(self._console(), self.server) if state == "down" else state, uptime

        accel, uptime, reason = boot_with_fallback(variant.accel, boot, self._kill, kvm_ok=kvm_usable(),
                                                   boot_timeout=variant.boot_timeout)
        self.facts |= {"accel": accel, "accel_reason": reason, "boot_seconds": round(time.monotonic() - started, 1),
                       "guest_uptime_at_ready": uptime, "guest_kernel": self.boot.kernel_version,
                       "root_disk": str(self.boot.root), **qemu_version(), **guest_facts(self.server, self.boot)}
        if accel == "tcg":
            self.facts["warnings"] = [EMULATED + (f" ({reason})" if reason else "")]
        wait_until_ready(endpoint, alive=lambda: bool(self.qemu and self.qemu.alive()), timeout=120,
                         log_tail=self.server_log_tail)
        self.endpoint = endpoint
        return endpoint

    def _disks(self, spec: ServerSpec) -> Disks:
        assert self.work is not None and self.boot is not None
        overlay = self.work / "root.qcow2"
        done = run("qemu-img", ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(self.boot.root),
                                str(overlay)], timeout=60)
        if done.returncode != 0:
            raise BadInput(f"qemu-img create failed: {done.output.strip()[-200:]}")
        if spec.snapshot is None:  # a fresh datadir: an empty, sparse disk
            make_ext4(None, self.work / "data.img", extra_mib=1024, label="data")
            return Disks(overlay, self.work / "data.img", self._config_disk(spec))
        base, built = ensure_base(spec.snapshot, spec.say, spec.run_dir)  # outside any boot deadline
        data = self.work / "data.qcow2"
        write_restore_facts(spec.run_dir, spec.snapshot, make_overlay(base, data), built)
        self.facts["data_disk"] = f"{METHOD}: {base.name} of dataset {spec.snapshot.parent.name}"
        return Disks(overlay, data, self._config_disk(spec), data_format="qcow2")

    def _config_disk(self, spec: ServerSpec) -> Path:
        return config_disk(spec, self.server)

    def _network(self, spec: ServerSpec) -> tuple[str, str, str, Endpoint]:
        variant, driver = self.variant, self.server.flavour.driver
        guest_port = guestpg.GUEST_PORT if self.postgresql else 3306
        if variant.network == "user":
            port = free_port()
            self.facts["network_path"] = f"QEMU user networking, 127.0.0.1:{port} forwarded to the guest"
            return (user_netdev(port, guest_port=guest_port), "10.0.2.15/24", "10.0.2.2",
                    Endpoint("127.0.0.1", port, spec.user, spec.password, spec.database, driver=driver))
        with signals_deferred():  # created and noted for down() together (clean finds it by name as well)
            self.tap = vm_net.create_tap(run_number(spec.label))
        self.facts["network_path"] = (f"tap {self.tap.tap} on bridge {self.tap.bridge}, virtio-net"
                                      f"{' with vhost' if self.tap.vhost else ' without vhost (no /dev/vhost-net)'}")
        return (tap_netdev(self.tap.tap, self.tap.vhost), f"{self.tap.guest_ip}/24", self.tap.host_ip,
                Endpoint(self.tap.guest_ip, guest_port, spec.user, spec.password, spec.database, driver=driver))

    def _start_qemu(self, accel: str, disks: Disks, netdev: str, guest_ip: str, gateway: str) -> None:
        assert self.work is not None and self.boot is not None and self.spec
        for name in ("console.log", "qmp.sock", "qemu.pid"):
            (self.work / name).unlink(missing_ok=True)
        cmd = qemu_command(accel=accel, vcpus=self.variant.vcpus, memory=self.variant.memory,
                           kernel=self.boot.kernel, initrd=self.boot.initrd, disks=disks,
                           cache=self.variant.disk_cache, netdev=netdev, guest_ip=guest_ip, gateway=gateway,
                           qmp=self.work / "qmp.sock", console=self.work / "console.log",
                           pidfile=self.work / "qemu.pid", marker=str(self.work))
        with signals_deferred():
            self.qemu = start("qemu", with_cpus(cmd, self.variant.cpus), log_path=self.spec.run_dir / "qemu.log")
            owners.record(self.spec.label, pid=self.qemu.pid, marker=str(self.work), paths=[self.work])

    def _console(self) -> str:
        path = self.work / "console.log" if self.work else None
        return path.read_text(errors="replace") if path and path.exists() else ""

    def _kill(self) -> None:
        if self.qemu is not None:
            self.qemu.stop(timeout=5)
            self.qemu = None

    def down(self) -> None:
        with signals_deferred():
            self._stop_and_remove()

    def _stop_and_remove(self) -> None:
        if self.qemu is not None and self.qemu.alive():
            self._graceful_stop()
        self._kill()
        if self.tap is not None:
            vm_net.remove_tap(self.tap)
            self.tap = None
        self._keep_console()
        if self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)
        if self.spec is not None:
            owners.forget(self.spec.label)
        self.spec, self.work = None, None

    def _graceful_stop(self) -> None:
        """SQL SHUTDOWN (the guest init syncs and powers off), then QMP quit, each with a short deadline."""
        # Ctrl-C while the guest boots: no server to ask, and waiting a minute for a power-off nobody asked for made
        # that Ctrl-C take 63 s (measured); QMP quit at once
        deadline = time.monotonic() + (60 if sql_shutdown(self.endpoint) else 0)
        while self.qemu is not None and self.qemu.alive() and time.monotonic() < deadline:
            if "LAYERBENCH-DOWN" in self._console():
                time.sleep(0.5)
                break
            time.sleep(0.2)
        if self.qemu is not None and self.qemu.alive() and self.work is not None:
            with contextlib.suppress(Exception):
                qmp = QMP(self.work / "qmp.sock")
                qmp.command("quit")
                qmp.close()
            end = time.monotonic() + 10
            while self.qemu.alive() and time.monotonic() < end:
                time.sleep(0.1)

    def _keep_console(self) -> None:
        """The guest's console (kernel, init, server log) is kept with the run's logs."""
        if self.work is not None and self.spec is not None and (self.work / "console.log").exists():
            with contextlib.suppress(OSError):
                shutil.copy(self.work / "console.log", self.spec.run_dir / "console.log")

    def exit_cause(self) -> str | None:
        if self.qemu is not None and not self.qemu.alive():
            return f"(its QEMU) exited with code {self.qemu.popen.returncode}"
        return None

    # --- accounting and description ------------------------------------------------------------------------

    def components(self) -> dict[str, list[int]]:
        return {"qemu": [self.qemu.pid]} if self.qemu is not None and self.qemu.alive() else {}

    def describe(self) -> dict[str, Any]:
        v = self.variant
        return {"backend": "vm", **self.facts, "vcpus": v.vcpus, "memory": v.memory, "disk_cache": v.disk_cache,
                "network": v.network, "accel_asked": v.accel, "qemu_cpus": v.cpus}

    def server_log_tail(self, lines: int = 20) -> str:
        text = self._console()
        if not text and self.spec is not None and (self.spec.run_dir / "console.log").exists():
            text = (self.spec.run_dir / "console.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])


def guest_server(variant: VMVariant) -> ServerProgram:
    """The guest's server: its flavour (MySQL's read from the rootfs's own mysqld, a `mysqld:`'s from it, through
    its root's loader; PostgreSQL's from this machine's postgres, the package the guest has at its version) and
    program (PostgreSQL's at the same path in the guest)."""
    if variant.server.flavour == "postgresql":
        return resolve_server(variant)
    return rooted_image_server(variant) if variant.mysqld is not None else image_server(variant)


def guest_facts(server: ServerProgram, boot: BootFiles) -> dict[str, Any]:
    """A PostgreSQL guest's flavour and the package versions its root disk holds (server/vmimage.py)."""
    if not server.flavour.is_postgresql:
        return {}
    return {**server.flavour.facts(), "guest_packages": guest_packages(boot)}


def server_exit(console: str, server: ServerProgram) -> str:
    """The state of a guest whose server ended before it was ready: the server's own line from the console (what
    the guest printed after LAYERBENCH-BOOTED), read as the host backend reads that flavour's log."""
    log = console.split("LAYERBENCH-BOOTED", 1)[-1]
    log = "\n".join(ln for ln in log.splitlines() if "LAYERBENCH-" not in ln)
    cause = first_error(log) if server.flavour.is_postgresql else startup_error(log)
    return f"{SERVER_EXITED}: {cause.strip()}"


def sql_shutdown(endpoint: Endpoint | None) -> bool:
    """Ask the guest's server to shut down (its init then syncs and powers off); False when it was not asked (no
    endpoint yet, or no answer: a guest stopped while it boots), so that nobody waits for a power-off to come.
    PostgreSQL has no SQL to stop its server, and the benchmark account is no superuser: not asked (QMP quit ends
    the guest; its data disk is the run's overlay, removed with it, so nothing waits for a clean stop)."""
    with contextlib.suppress(Exception):
        if endpoint is not None and not endpoint.is_postgresql:
            conn = connect(endpoint, timeout=5)
            with conn.cursor() as cursor:
                cursor.execute("SHUTDOWN")
            conn.close()
            return True
    return False


def qemu_version() -> dict[str, str]:
    with contextlib.suppress(Exception):
        out = version_output(["qemu-system-x86_64"], timeout=30)
        return {"qemu_version": out.stdout.splitlines()[0]}
    return {}


def guest_root(variant: VMVariant) -> tuple[MysqlRootfs | None, Path | None]:
    """What the root disk is copied from: the MySQL rootfs (a MySQL variant, or a `mysqld:` of that very rootfs:
    its root disk is shared), the root filesystem of the variant's `mysqld:`, else neither (MariaDB's image)."""
    if variant.mysqld is not None:
        found = require_root(variant.mysqld, f"variants.{variant.name}.mysqld")
        built = next((rootfs for _, rootfs in built_rootfses() if rootfs.root.resolve() == found.root), None)
        return (built, None) if built is not None else (None, found.root)
    if variant.server.flavour != "mysql":
        return None, None
    return require_rootfs(variant.server.version or DEFAULT_MYSQL, f"variants.{variant.name}.server.version"), None


GUEST_OWNED = {"datadir": GUEST_DATADIR, "port": 3306, "socket": GUEST_SOCKET, "bind-address": "0.0.0.0",
               "pid-file": "/run/mysqld/mysqld.pid", "user": "root"}


def server_script(server: ServerProgram) -> str:
    """The config disk's server.sh, which the guest init (data/vm/init.sh) sources: how the flavour makes an empty
    datadir, runs its server and says it is up (server/flavour.py's commands, nothing named by the init)."""
    init = server.flavour.init_command(server.command, Path(GUEST_DATADIR), paths=server.path_options())
    return (f"init_datadir() {{ {shlex.join(init)}; }}\n"
            f"run_server() {{ exec {shlex.join(server.command)} \"$@\"; }}\n"
            f"server_ready() {{ {shlex.join(server.flavour.ready_command(GUEST_SOCKET))}; }}\n")


def config_disk(spec: ServerSpec, server: ServerProgram) -> Path:
    """The guest's config disk: my.cnf, init SQL, server.sh (PostgreSQL: its postgresql.conf, pg_hba.conf, account
    script and server.sh, backends/vm/guestpg.py), and a `fresh` mark when the datadir is to be made."""
    folder = spec.private_dir / "vm-config"
    if server.flavour.is_postgresql:
        guestpg.write_config(spec, server, folder, GUEST_DATADIR)
    else:
        write_server_files(server_files(spec, {**GUEST_OWNED, **server.paths}, server.flavour), folder)
        (folder / "server.sh").write_text(server_script(server), encoding="utf-8")
    if spec.snapshot is None:
        (folder / "fresh").write_text("")
    image = spec.private_dir / "config.img"
    make_ext4(folder, image, extra_mib=4, min_mib=8, label="config")
    image.chmod(0o600)
    return image
