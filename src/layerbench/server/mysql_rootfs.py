"""A server from Debian's unstable archive as a cached root filesystem: `debootstrap --variant=minbase sid` plus
one pinned package (a `Recipe`): MySQL's `mysql-server-core` (with its `mysql-client-core` at the same version,
the `mysql` client a pod's exec reads the server's variables and status with) here, PostgreSQL's `postgresql-18` in
server/postgresql_rootfs.py. Built only when asked (`layerbench server build mysql 9.7`) and kept under
<cache>/servers/. The host backend runs its mysqld as a plain host process through the rootfs's own loader
(rootfs_command), so no namespace, no container and no chroot stand between it and the machine.

sid moves on: every downloaded package is kept beside the rootfs (debs-<key>/: debootstrap's base tarball and
the server's .deb files, with their SHA-256), and a rootfs that is removed is rebuilt from them offline, byte
for byte the same packages. Building happens in a temporary folder renamed into place at the end, under a lock,
so two campaigns never build at once and a signal leaves nothing half-built.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import BadInput, PrerequisiteMissing, shown
from layerbench.hosts import procfs
from layerbench.hosts.procs import capture, require_program, run
from layerbench.hosts.workdirs import cache_dir, folder_lock, folder_size
from layerbench.server.image import checked, mirror
from layerbench.vocabulary.sizes import byte_text

RECIPE_VERSION = 2  # the steps after the packages are installed (the kept packages do not depend on it)
SUITE = "sid"
PACKAGE = "mysql-server-core"
# The MySQL lines layerbench can build, each pinned to one Debian package version (docs/servers.md).
RELEASES = {"9.7": "9.7.4-2"}
BUILD_SECONDS = 120  # 116 s measured here on a loaded 2-core machine (40 s from the kept packages)
# What the build itself leaves that differs from one build to the next (apt's caches, logs): removed, so two
# builds from the same kept packages differ only in file times.
BUILD_LEFTOVERS = ("/var/lib/apt/lists/*", "/var/cache/apt/archives/*.deb", "/var/cache/apt/archives/lock",
                   "/var/cache/apt/*.bin", "/var/cache/ldconfig/aux-cache", "/var/log/dpkg.log",
                   "/var/log/alternatives.log", "/var/log/apt")
NO_VALID_UNTIL = "Acquire::Check-Valid-Until=false"  # a mirror snapshot's Release file may be past its date
UMOUNT_TIMEOUT = 60  # one lazy unmount of what a killed build left mounted
Say = Callable[[str], None]


@dataclass(frozen=True)
class Recipe:
    """What one kind of server rootfs installs, and the steps after: its name in folders and messages, the
    package, the lines it pins, the file a built rootfs has, and the commands run in it after dpkg (chroot)."""

    name: str  # mysql, postgresql: the folder's prefix and `layerbench server build <name>`
    label: str  # MySQL, PostgreSQL
    package: str
    releases: dict[str, str]
    binary: str  # relative to the rootfs: present once built
    before_install: str = ""  # shell, in the rootfs, before dpkg -i (a conffile of our own, a policy)
    after_install: str = ""  # shell, in the rootfs, after dpkg -i
    finish: Callable[[Path], None] | None = None  # on the rootfs from outside, after the install (files of ours)
    recipe_version: int = RECIPE_VERSION
    also: tuple[str, ...] = ()  # packages installed beside it (a lighter alternative apt would not choose itself)
    # packages of the same source installed at the pinned version too (MySQL's client); part of the kept packages'
    # key, so a recipe that gains one downloads anew rather than install the old kept packages without it
    pinned_also: tuple[str, ...] = ()
    with_apt: bool = False  # install the kept .debs with apt (it orders pre-dependencies), rather than dpkg -i
    with_proc: bool = False  # /proc mounted in the rootfs while installing (systemd-tmpfiles in a postinst needs it)
    size: str = "500 MB"


# mysql-client-core: `mysql`, run in the server's container over its socket as root (initialize-insecure's root,
# socket and localhost only) where the harness is not a node (backends/kubernetes/podexec.py); 5 MB
MYSQL = Recipe("mysql", "MySQL", PACKAGE, RELEASES, "usr/sbin/mysqld", pinned_also=("mysql-client-core",))


def pinned(version: str, recipe: Recipe = MYSQL) -> str | None:
    """The Debian package version of a version a user wrote ('9.7', '9.7.4'), or None when unknown."""
    for line, package_version in recipe.releases.items():
        upstream = package_version.split("-")[0]
        if version == line or upstream == version or upstream.startswith(f"{version}."):
            return package_version
    return None


def known_versions(recipe: Recipe = MYSQL) -> str:
    return ", ".join(recipe.releases)


def package_inputs(package_version: str, recipe: Recipe = MYSQL) -> dict[str, str]:
    inputs = {"suite": SUITE, "mirror": mirror(), "package": recipe.package, "version": package_version,
              "variant": "minbase"}
    return inputs | ({"with": " ".join(recipe.pinned_also)} if recipe.pinned_also else {})


def rootfs_inputs(package_version: str, recipe: Recipe = MYSQL) -> dict[str, str]:
    return {"recipe": str(recipe.recipe_version), **package_inputs(package_version, recipe)}


def digest(inputs: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:12]


def rootfs_key(package_version: str, recipe: Recipe = MYSQL) -> str:
    return digest(rootfs_inputs(package_version, recipe))


def servers_dir() -> Path:
    return cache_dir() / "servers"


@dataclass(frozen=True)
class MysqlRootfs:
    """A built rootfs: where it is and how to run its server."""

    folder: Path  # <cache>/servers/mysql-<version>-<key>/

    @property
    def root(self) -> Path:
        return self.folder / "rootfs"

    @property
    def package_version(self) -> str:
        return str(json.loads((self.folder / "versions.json").read_text())[PACKAGE])

    def command(self) -> list[str]:
        """mysqld through the rootfs's own loader and libraries (the host's /lib is never used)."""
        return [str(self.root / "lib64/ld-linux-x86-64.so.2"), "--library-path",
                str(self.root / "usr/lib/x86_64-linux-gnu"), str(self.root / "usr/sbin/mysqld")]

    def paths(self) -> dict[str, str]:
        """Where the server's own files are, inside the rootfs (else it would read MariaDB's in /usr/share)."""
        share = self.root / "usr/share/mysql"
        return {"basedir": str(self.root / "usr"), "lc-messages-dir": str(share),
                "character-sets-dir": str(share / "charsets"), "plugin-dir": str(self.root / "usr/lib/mysql/plugin")}


def rootfs_folder(package_version: str, recipe: Recipe = MYSQL) -> Path:
    return servers_dir() / f"{recipe.name}-{package_version}-{rootfs_key(package_version, recipe)}"


def debs_folder(package_version: str, recipe: Recipe = MYSQL) -> Path:
    return servers_dir() / f"debs-{recipe.name}-{package_version}-{digest(package_inputs(package_version, recipe))}"


def find_rootfs(package_version: str) -> MysqlRootfs | None:
    folder = find_folder(package_version, MYSQL)
    return MysqlRootfs(folder) if folder else None


def find_folder(package_version: str, recipe: Recipe) -> Path | None:
    """The folder of a built rootfs of this recipe and package version, or None."""
    folder = rootfs_folder(package_version, recipe)
    if (folder / "versions.json").is_file() and (folder / "rootfs" / recipe.binary).is_file():
        return folder
    return None


def build_command(version: str, recipe: Recipe = MYSQL) -> str:
    return f"layerbench server build {recipe.name} {version}"


def require_rootfs(version: str, where: str) -> MysqlRootfs:
    """The built rootfs of a MySQL version a campaign names, or a one-line BadInput with the command that builds
    it (validate and run never build it themselves: a run does not start a 640 MB download half-way)."""
    package_version = pinned(version)
    if package_version is None:
        raise BadInput(f"{where}: MySQL {shown(version)} is not a version layerbench can build; use one of "
                       f"{known_versions()}")
    found = find_rootfs(package_version)
    if found is None:
        raise BadInput(f"{where}: MySQL {version} is not built on this machine; build it with: "
                       f"{build_command(version)} (about {BUILD_SECONDS // 60} minutes, 500 MB)")
    return found


@contextlib.contextmanager
def build_lock(key: str, say: Say, recipe: Recipe = MYSQL) -> Iterator[None]:
    """flock on <servers>/.locks/<key>: one build at a time; released however its holder ends."""
    with folder_lock(servers_dir(), key, f"another process is building {recipe.label} rootfs {key}; waiting for it",
                     say):
        yield


def ensure_rootfs(version: str, say: Say | None = None) -> MysqlRootfs:
    """The rootfs of a MySQL version, built now (about 80 s, from the kept packages when they are cached)."""
    return MysqlRootfs(ensure_folder(version, MYSQL, say))


def ensure_folder(version: str, recipe: Recipe, say: Say | None = None) -> Path:
    """The folder of the rootfs of this recipe's version, built now when missing."""
    say = say or (lambda _text: None)
    package_version = pinned(version, recipe)
    if package_version is None:
        raise BadInput(f"version: {recipe.label} {shown(version)} is not a version layerbench can build; use one of "
                       f"{known_versions(recipe)}")
    found = find_folder(package_version, recipe)
    if found is not None:
        return found
    require_program("debootstrap", "apt-get install debootstrap (scripts/setup does it)")
    if os.geteuid() != 0:
        raise PrerequisiteMissing(f"building the {recipe.label} rootfs needs root (debootstrap, chroot); run as root")
    with build_lock(rootfs_key(package_version, recipe), say, recipe):
        return find_folder(package_version, recipe) or Builder(package_version, say, recipe).build()


class Builder:
    """One build in a temporary folder under <servers>/ (the same filesystem, so the end is a rename)."""

    def __init__(self, package_version: str, say: Say, recipe: Recipe = MYSQL) -> None:
        self.version, self.say, self.recipe = package_version, say, recipe
        self.key = rootfs_key(package_version, recipe)
        self.started = time.monotonic()

    def step(self, text: str) -> None:
        self.say(f"[{time.monotonic() - self.started:4.0f} s] {text}")

    def build(self) -> Path:
        servers_dir().mkdir(parents=True, exist_ok=True)
        for stale in servers_dir().glob(f".build-{self.key}-*"):  # a build killed outright (we hold the lock)
            remove_build(stale)
        work = Path(tempfile.mkdtemp(prefix=f".build-{self.key}-", dir=servers_dir()))
        try:
            return self.build_in(work)
        finally:
            remove_build(work)

    def build_in(self, work: Path) -> Path:
        # beside the build, not in it: a failed build's folder goes, and its error names this log
        self.log = servers_dir() / ".logs" / f"build-{self.recipe.name}-{self.version}.log"
        self.log.parent.mkdir(exist_ok=True)
        self.log.unlink(missing_ok=True)
        kept = debs_folder(self.version, self.recipe)
        debs = kept if (kept / "SHA256SUMS").is_file() else work / "debs"
        if debs is kept:
            self.step(f"rebuilding from the kept packages in {kept}")
            check_sums(kept)
        else:
            self.download_base(work, debs)
        root = work / "rootfs"
        self.step(f"debootstrap --variant=minbase {SUITE} (unpacking {debs / 'base.tgz'})")
        self.checked("debootstrap", ["debootstrap", "--variant=minbase", f"--unpack-tarball={debs / 'base.tgz'}",
                                     SUITE, str(root), mirror()])
        if debs is not kept:
            self.download_server(root, debs)
        self.install_server(root, debs)
        return self.publish(work, root, debs, kept)

    def checked(self, what: str, cmd: list[str]) -> None:
        checked(run(what, cmd, log_path=self.log, timeout=1800), what, self.log)

    def download_base(self, work: Path, debs: Path) -> None:
        debs.mkdir(parents=True)
        self.step(f"downloading the {SUITE} base packages from {mirror()} (debootstrap --make-tarball)")
        self.checked("debootstrap download", ["debootstrap", "--variant=minbase",
                                              f"--make-tarball={debs / 'base.tgz'}", SUITE, str(work / "dl"),
                                              mirror()])
        shutil.rmtree(work / "dl", ignore_errors=True)

    def download_server(self, root: Path, debs: Path) -> None:
        self.step(f"downloading {self.recipe.package} {self.version} and its libraries")
        archives = root / "var/cache/apt/archives"
        for old in archives.glob("*.deb"):  # debootstrap's own copies: kept in base.tgz already
            old.unlink()
        wanted = [f"{package}={self.version}" for package in (self.recipe.package, *self.recipe.pinned_also)]
        script = (f"apt-get -o {NO_VALID_UNTIL} update -qq && apt-get install --download-only -y -qq "
                  f"--no-install-recommends {' '.join(wanted)} {' '.join(self.recipe.also)}")
        self.checked("apt-get download", ["chroot", str(root), "/bin/sh", "-c", script])
        (debs / "server").mkdir()
        for deb in sorted(archives.glob("*.deb")):
            shutil.move(str(deb), debs / "server" / deb.name)
        write_sums(debs)

    def install_server(self, root: Path, debs: Path) -> None:
        self.step(f"installing {self.recipe.package} {self.version} "
                  f"({len(list((debs / 'server').glob('*.deb')))} packages)")
        inside = root / "tmp/lb-debs"
        shutil.copytree(debs / "server", inside)
        before = f"{self.recipe.before_install} && " if self.recipe.before_install else ""
        after = f" && {self.recipe.after_install}" if self.recipe.after_install else ""
        install = ("apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confold "
                   "/tmp/lb-debs/*.deb" if self.recipe.with_apt else "dpkg -i /tmp/lb-debs/*.deb")
        script = (f"export DEBIAN_FRONTEND=noninteractive && {before}{install}{after} && rm -rf /tmp/lb-debs "
                  f"{' '.join(BUILD_LEFTOVERS)}")
        if self.recipe.with_proc:  # unmounted however the install ends (remove_build unmounts what a kill leaves)
            script = f"mount -t proc proc /proc && ( {script} ); status=$?; umount /proc; exit $status"
        self.checked(f"installing {self.recipe.package}", ["chroot", str(root), "/bin/sh", "-c", script])
        if self.recipe.finish is not None:
            self.recipe.finish(root)

    def publish(self, work: Path, root: Path, debs: Path, kept: Path) -> Path:
        versions = installed_versions(root)
        for package in (self.recipe.package, *self.recipe.pinned_also):
            if versions.get(package) != self.version:
                raise PrerequisiteMissing(f"the {self.recipe.label} rootfs build installed {package} "
                                          f"{versions.get(package)}, not the pinned {self.version}; see {self.log}")
        folder = work / "published"
        folder.mkdir()
        root.rename(folder / "rootfs")
        (folder / "versions.json").write_text(json.dumps(versions, indent=1, sort_keys=True))
        (folder / "inputs.json").write_text(json.dumps(rootfs_inputs(self.version, self.recipe), indent=1,
                                                       sort_keys=True))
        if debs is not kept:
            debs.rename(kept)
        target = rootfs_folder(self.version, self.recipe)
        folder.rename(target)
        self.step(f"{self.recipe.label} {self.version} rootfs ready: {target} "
                  f"({byte_text(folder_size(target), 'MiB', ',.0f')})")
        return target


def remove_build(folder: Path) -> None:
    """Remove a build folder. debootstrap mounts proc and sys in its target and unmounts them when it ends, but
    not when it is killed: whatever is still mounted below the folder is unmounted first (deepest first), so
    the removal never walks into a live /proc. The killed build's processes may still be writing for a moment
    after they are signalled: removed again until nothing is left (at most about 5 s)."""
    for mount in reversed(mounts_under(folder)):
        capture(["umount", "-l", mount], timeout=UMOUNT_TIMEOUT)
    for _ in range(25):
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            return
        time.sleep(0.2)


def mounts_under(folder: Path) -> list[str]:
    prefix = f"{folder.resolve()}/"
    return sorted(p for p in (m["mount_point"] for m in procfs.mounts()) if p.startswith(prefix))


def installed_versions(root: Path) -> dict[str, str]:
    """Every package of the rootfs and its version (from its dpkg status file: nothing runs in the rootfs)."""
    versions, name = {}, ""
    for line in (root / "var/lib/dpkg/status").read_text(errors="replace").splitlines():
        if line.startswith("Package: "):
            name = line.split(": ", 1)[1]
        elif line.startswith("Version: ") and name:
            versions[name] = line.split(": ", 1)[1]
    return versions


def write_sums(debs: Path) -> None:
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(debs)}"
             for p in sorted([debs / "base.tgz", *(debs / "server").glob("*.deb")])]
    (debs / "SHA256SUMS").write_text("\n".join(lines) + "\n")


def check_sums(debs: Path) -> None:
    for line in (debs / "SHA256SUMS").read_text().splitlines():
        digest, _, name = line.partition("  ")
        path = debs / name
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise PrerequisiteMissing(f"the kept package {path} is missing or changed; remove {debs} to download "
                                      "the packages again")


def built_rootfses() -> list[tuple[str, MysqlRootfs]]:
    """(package version, rootfs) of every built MySQL rootfs in the cache."""
    return [(version, MysqlRootfs(folder)) for version, folder in built_folders(MYSQL)]


def built_folders(recipe: Recipe) -> list[tuple[str, Path]]:
    """(package version, folder) of every built rootfs of this recipe in the cache."""
    found = []
    for folder in sorted(servers_dir().glob(f"{recipe.name}-*")):
        if (folder / "versions.json").is_file():
            with contextlib.suppress(OSError, ValueError, KeyError):
                found.append((str(json.loads((folder / "versions.json").read_text())[recipe.package]), folder))
    return found
