"""The VM's boot files, built locally and cached by their inputs: Debian's kernel (from `linux-image-amd64`,
unpacked into the cache, never installed on the host), a small initramfs (busybox-static and the virtio and
ext4 modules) that mounts the root disk, and a raw ext4 root disk made from the same rootfs as the Docker image
plus the guest's init (data/vm/init.sh): the MariaDB image's rootfs (the host's exact MariaDB package), or for
a MySQL variant the cached MySQL rootfs (server/mysql_rootfs.py, the bytes the host and Docker backends run)
with the host's busybox-static beside it (its minbase has no `ip`), or for a PostgreSQL variant the MariaDB
image's rootfs with Debian's postgresql-15 installed into it at this machine's exact package versions (a root disk
of its own: the MariaDB guest's stays as it is, so its cache is kept). The kernel and initramfs are the same for
all. Per run, the backend adds a qcow2 overlay on the root disk, a data disk made from the dataset snapshot,
and a config disk (which says how to start the flavour's server: backends/vm/local.py)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from layerbench.errors import PrerequisiteMissing, RunFailed
from layerbench.hosts.procs import capture, require_program, run
from layerbench.hosts.workdirs import cache_dir, folder_size
from layerbench.server.image import apt_install_script, build_rootfs, checked, image_key, installed_version
from layerbench.server.mysql_rootfs import MysqlRootfs, rootfs_key

RECIPE_VERSION = 1
KERNEL_PACKAGE = "linux-image-amd64"
MODULES = ("virtio_pci", "virtio_blk", "virtio_net", "crc32c_generic", "ext4")  # ext4 checksums need crc32c
# Debian 12's PostgreSQL, installed into a PostgreSQL guest's root disk at the versions this machine has (the server
# that prepares its dataset snapshots here: the same bytes); Debian's own cluster is not made (layerbench's is).
POSTGRESQL_PACKAGES = ("postgresql-15", "postgresql-client-15")
NO_DEBIAN_CLUSTER = "create_main_cluster = false\n"
Say = Callable[[str], None]


@dataclass(frozen=True)
class BootFiles:
    kernel: Path
    initrd: Path
    root: Path  # raw ext4 image, the read-only base of each run's overlay
    kernel_version: str


def vm_cache() -> Path:
    folder = cache_dir() / "vm"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def guest_init() -> str:
    return (resources.files("layerbench") / "data" / "vm" / "init.sh").read_text(encoding="utf-8")


def kernel_package() -> str:
    """The versioned kernel package linux-image-amd64 depends on (linux-image-6.1.0-NN-amd64)."""
    out = capture(["apt-cache", "depends", KERNEL_PACKAGE], timeout=120)
    for line in out.stdout.splitlines():
        if "Depends:" in line and "linux-image-" in line:
            return line.split("Depends:", 1)[1].strip()
    raise PrerequisiteMissing(f"apt knows no {KERNEL_PACKAGE}; run `apt-get update` (the VM boots Debian's kernel)")


def ensure_kernel(say: Say) -> tuple[Path, str]:
    """The unpacked kernel package folder (boot/vmlinuz-*, lib/modules/*), downloaded once."""
    package = kernel_package()
    folder = vm_cache() / package
    if (folder / ".complete").exists():
        return folder, package.removeprefix("linux-image-")
    say(f"downloading and unpacking {package} (not installed on this host)")
    shutil.rmtree(folder, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix="kernel-", dir=vm_cache()))
    os.chmod(work, 0o755)  # apt drops to the _apt user for downloads
    try:
        done = run("apt-get download", ["apt-get", "download", "-q", package], log_path=work / "download.log",
                   cwd=work, timeout=900)
        debs = sorted(work.glob("*.deb"))
        if done.returncode != 0 or not debs:
            raise RunFailed(f"apt-get download {package} failed; see {work / 'download.log'}")
        unpacked = work / "x"
        if run("dpkg-deb", ["dpkg-deb", "-x", str(debs[0]), str(unpacked)], timeout=600).returncode != 0:
            raise RunFailed(f"dpkg-deb -x {debs[0].name} failed")
        unpacked.rename(folder)
        (folder / ".complete").write_text(package)
        return folder, package.removeprefix("linux-image-")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def module_depends(path: Path) -> list[str]:
    """The module names a .ko needs, from its .modinfo `depends=` entry (what depmod reads)."""
    for field in path.read_bytes().split(b"\0"):
        if field.startswith(b"depends="):
            return [d for d in field[8:].decode(errors="replace").split(",") if d]
    return []


def module_closure(modules_dir: Path, wanted: tuple[str, ...]) -> list[str]:
    """Module paths (relative to modules_dir) for `wanted` and everything they depend on, dependencies first.
    The package ships no modules.dep (depmod writes it at install), so the .ko files say it themselves."""
    by_name = {p.name.split(".ko")[0].replace("-", "_"): p for p in modules_dir.rglob("*.ko")}
    order: list[str] = []

    def visit(name: str) -> None:
        if name not in by_name:
            raise RunFailed(f"the guest kernel has no module {name}; the VM cannot mount its disks")
        rel = str(by_name[name].relative_to(modules_dir))
        if rel in order:
            return
        for dep in module_depends(by_name[name]):
            visit(dep.replace("-", "_"))
        order.append(rel)

    for name in wanted:
        visit(name)
    return order


INITRAMFS_INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
/bin/busybox mkdir -p /proc /sys /dev /newroot
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs dev /dev
for m in $(cat /modules.order); do insmod "/modules/$m" || echo "LAYERBENCH-NOTE insmod $m failed"; done
n=0
while [ ! -b /dev/vda ] && [ $n -lt 300 ]; do /bin/busybox sleep 0.1; n=$((n+1)); done
mount -t ext4 -o rw /dev/vda /newroot || { echo "LAYERBENCH-FAILED cannot mount the root disk"; poweroff -f; }
/bin/busybox umount /proc /dev
exec /bin/busybox switch_root /newroot /layerbench-init
"""


def newc_entry(name: str, data: bytes, mode: int, ino: int) -> bytes:
    """One entry of a cpio archive in the kernel's initramfs format (newc)."""
    name_bytes = name.encode() + b"\0"
    fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name_bytes), 0]
    header = b"070701" + b"".join(f"{f:08x}".encode() for f in fields)
    pad = lambda n: b"\0" * ((4 - n % 4) % 4)  # noqa: E731
    return header + name_bytes + pad(len(header) + len(name_bytes)) + data + pad(len(data))


def build_initramfs(kernel_dir: Path, version: str, target: Path) -> None:
    busybox = Path(require_program("busybox", "apt-get install busybox-static (scripts/setup does it)"))
    modules_dir = kernel_dir / "lib" / "modules" / version
    order = module_closure(modules_dir, MODULES)
    files: list[tuple[str, bytes, int]] = [("bin", b"", stat.S_IFDIR | 0o755), ("modules", b"", stat.S_IFDIR | 0o755),
                                           ("bin/busybox", busybox.read_bytes(), stat.S_IFREG | 0o755),
                                           ("init", INITRAMFS_INIT.encode(), stat.S_IFREG | 0o755)]
    names = []
    for index, rel in enumerate(order):
        name = f"{index:02d}-{Path(rel).name}"
        names.append(name)
        files.append((f"modules/{name}", (modules_dir / rel).read_bytes(), stat.S_IFREG | 0o644))
    files.append(("modules.order", "\n".join(names).encode() + b"\n", stat.S_IFREG | 0o644))
    archive = b"".join(newc_entry(n, d, m, i + 1) for i, (n, d, m) in enumerate(files))
    archive += newc_entry("TRAILER!!!", b"", 0, 0)
    target.write_bytes(gzip.compress(archive, compresslevel=6))


def postgresql_pins() -> dict[str, str]:
    """The PostgreSQL packages a guest gets, at this machine's installed versions (else PrerequisiteMissing)."""
    return {package: installed_version(package) for package in POSTGRESQL_PACKAGES}


def root_id(mysql: MysqlRootfs | None, tree: Path | None = None, postgresql: bool = False) -> str:
    """What the root disk is made from: the MariaDB image's rootfs key, the MySQL rootfs's, the content key of
    the root filesystem of a variant's `mysqld:` (server/binary_root.py), or for PostgreSQL the MariaDB image's
    key and the versions of the PostgreSQL packages installed on top of it."""
    if postgresql:
        pins = hashlib.sha256(json.dumps(postgresql_pins(), sort_keys=True).encode()).hexdigest()[:12]
        return f"postgresql-{pins}-{image_key()}"
    if tree is not None:
        from layerbench.server.binary_root import content_key

        return f"root-{content_key(tree)}"
    return image_key() if mysql is None else f"mysql-{mysql.package_version}-{rootfs_key(mysql.package_version)}"


def boot_key(version: str, rootfs: str | None = None) -> str:
    inputs = {"recipe": RECIPE_VERSION, "rootfs": rootfs or image_key(), "kernel": version, "init": guest_init(),
              "initramfs": INITRAMFS_INIT, "modules": MODULES}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:12]


def boot_files_built(mysql: MysqlRootfs | None = None, tree: Path | None = None, postgresql: bool = False) -> bool:
    """The boot files of this root are in the cache (False when the kernel is not downloaded yet)."""
    kernels = sorted(vm_cache().glob("linux-image-*/.complete"))
    root = root_id(mysql, tree, postgresql)
    return any((vm_cache() / f"boot-{boot_key(k.parent.name.removeprefix('linux-image-'), root)}"
                / ".complete").exists() for k in kernels)


def ensure_boot_files(say: Say, mysql: MysqlRootfs | None = None, tree: Path | None = None,
                      postgresql: bool = False) -> BootFiles:
    """The kernel, initramfs and root disk for the current inputs, built now when missing (about a minute): the
    root disk holds the MariaDB image's rootfs (with `postgresql`: and Debian's PostgreSQL 15), `mysql`'s (a MySQL
    variant's), or the root filesystem `tree` of a variant's `mysqld:`."""
    kernel_dir, version = ensure_kernel(say)
    folder = vm_cache() / f"boot-{boot_key(version, root_id(mysql, tree, postgresql))}"
    files = BootFiles(next(iter(sorted((kernel_dir / "boot").glob("vmlinuz-*")))), folder / "initrd.gz",
                      folder / "root.img", version)
    if (folder / ".complete").exists():
        return files
    require_program("mkfs.ext4", "apt-get install e2fsprogs (scripts/setup does it)")
    tree = tree or (mysql.root if mysql is not None else None)
    tarball = build_rootfs(say) if tree is None else None
    started = time.monotonic()
    say("building the VM's root disk from the " + ("server image's rootfs" if tree is None else
                                                    f"root filesystem {tree}")
        + (f" with {', '.join(f'{p} {v}' for p, v in postgresql_pins().items())}" if postgresql else ""))
    shutil.rmtree(folder, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix="boot-", dir=vm_cache()))
    try:
        build_initramfs(kernel_dir, version, work / "initrd.gz")
        root_disk(work / "root.img", tarball=tarball, tree=tree, postgresql=postgresql)
        work.rename(folder)
        (folder / ".complete").write_text(json.dumps({"kernel": version, "seconds": time.monotonic() - started}))
        say(f"VM boot files ready in {time.monotonic() - started:.0f} s")
        return files
    finally:
        shutil.rmtree(work, ignore_errors=True)


def root_disk(target: Path, *, tarball: Path | None, tree: Path | None, postgresql: bool = False) -> None:
    """A raw ext4 image holding the rootfs (a tarball's, or a copy of a rootfs folder with the host's busybox
    beside it; with `postgresql`, Debian's PostgreSQL installed into it) and the guest init, sized with room for
    the server's own files."""
    staged = target.parent / "rootfs"
    if tarball is not None:
        staged.mkdir()
        command = ["tar", "-C", str(staged), "--numeric-owner", "-xf", str(tarball)]
    else:
        command = ["cp", "-a", "--reflink=auto", str(tree), str(staged)]
    if run(command[0], command, timeout=900).returncode != 0:
        raise RunFailed(f"copying the rootfs {tarball or tree} failed")
    if tarball is None:
        busybox = require_program("busybox", "apt-get install busybox-static (scripts/setup does it)")
        (staged / "usr/local/lib/layerbench").mkdir(parents=True, exist_ok=True)
        shutil.copy(busybox, staged / "usr/local/lib/layerbench/busybox")  # busybox reads its applet from argv[0]
    if postgresql:
        install_postgresql(staged, target.parent)
    init = staged / "layerbench-init"
    init.write_text(guest_init(), encoding="utf-8")
    init.chmod(0o755)
    for folder in ("etc/layerbench", "var/lib/mysql"):
        (staged / folder).mkdir(parents=True, exist_ok=True)
    tree = staged
    make_ext4(tree, target, extra_mib=512)
    shutil.rmtree(tree, ignore_errors=True)


def install_postgresql(root: Path, folder: Path) -> None:
    """Debian's PostgreSQL at this machine's versions, installed in the staged rootfs by apt in a chroot (as the
    MariaDB image's packages are: no service started, apt's lists removed after), without Debian's own cluster;
    every installed package and its version kept beside the root disk (packages.json)."""
    pins = postgresql_pins()
    cluster = root / "etc/postgresql-common/createcluster.d"
    cluster.mkdir(parents=True, exist_ok=True)
    (cluster / "layerbench.conf").write_text(NO_DEBIAN_CLUSTER)
    log = vm_cache() / "postgresql-install.log"  # kept after a failure (the build folder is not)
    checked(run("chroot install", ["chroot", str(root), "/bin/sh", "-c", apt_install_script(pins)], log_path=log,
                timeout=1800), "the install of PostgreSQL in the VM's root disk", log)
    listed = capture(["chroot", str(root), "dpkg-query", "-W", "-f=${Package} ${Version}\\n"], timeout=120)
    versions = dict(line.split(" ", 1) for line in listed.stdout.splitlines() if " " in line)
    missing = [p for p, v in pins.items() if versions.get(p) != v]
    if missing:
        raise RunFailed(f"the VM's root disk got {', '.join(f'{p} {versions.get(p)}' for p in missing)}, not this "
                        f"machine's {', '.join(pins[p] for p in missing)}; see {log}")
    (folder / "packages.json").write_text(json.dumps(versions, sort_keys=True))


def guest_packages(boot: BootFiles) -> dict[str, str]:
    """The PostgreSQL packages of a guest's root disk and their versions (packages.json; {} for another root)."""
    try:
        versions = json.loads((boot.root.parent / "packages.json").read_text())
    except (OSError, ValueError):
        return {}
    return {name: str(version) for name, version in versions.items() if "postgresql" in name or name == "libpq5"}


def ext4_command(tree: str | None, size_bytes: int, target: str, *, extra_mib: int, min_mib: int = 16,
                 label: str = "") -> list[str]:
    """mkfs.ext4 of `tree` (size_bytes of files, or empty) into the image `target` with `extra_mib` free; the same
    command runs here and on a server's ssh: host (backends/vm/remote.py)."""
    size_mib = max(min_mib, size_bytes * 13 // 10 // 2**20 + extra_mib)
    cmd = ["mkfs.ext4", "-q", "-F", "-E", "root_owner=0:0", "-O", "^has_journal" if size_mib < 32 else "has_journal"]
    cmd += ["-L", label] if label else []
    cmd += ["-d", tree] if tree else []
    return [*cmd, target, f"{size_mib}M"]


def make_ext4(tree: Path | None, target: Path, *, extra_mib: int, min_mib: int = 16, label: str = "") -> None:
    """An ext4 image of `tree` (or empty) with `extra_mib` free, built without mounting anything (mkfs -d)."""
    cmd = ext4_command(str(tree) if tree else None, folder_size(tree) if tree else 0, str(target),
                       extra_mib=extra_mib, min_mib=min_mib, label=label)
    done = capture(cmd, timeout=900)
    if done.returncode != 0:
        raise RunFailed(f"mkfs.ext4 of {target.name} failed: {done.stderr.strip()[-300:]}")
