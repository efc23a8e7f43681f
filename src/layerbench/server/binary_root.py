"""A `mysqld:` binary that lives inside a root filesystem (ROOT/usr/sbin/mysqld of a debootstrap rootfs, like the
MySQL rootfs layerbench builds): the root it belongs to (the nearest folder above it holding the x86-64 loader
`lib64/ld-linux-x86-64.so.2`), the command that runs it on this machine through that root's own loader and
libraries (none of this machine's libraries is used), the paths of its own files, the check that every library it
needs is found inside the root, and the content key an image or root disk made from that root is cached by.

| `mysqld:` names                                   | what happens                                            |
|---------------------------------------------------|---------------------------------------------------------|
| a binary below a folder holding lib64/ld-linux... | run here through that root's loader; Docker/VM: that root |
| a binary of this machine (/usr/sbin/mariadbd)     | run as it is (host backend); Docker/VM: refused          |
| a library not found in the root, a MariaDB in a root | refused in one line                                   |
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from layerbench.errors import BadInput, shown
from layerbench.hosts.procs import TimedOut, capture

LOADER = "lib64/ld-linux-x86-64.so.2"
LIBRARY_DIRS = ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib", "lib")
LIST_TIMEOUT = 30.0
_LISTED = re.compile(r"^\s*(?P<name>\S+)\s+=>\s+(?P<path>.*?)(?:\s+\(0x[0-9a-f]+\))?\s*$")


@dataclass(frozen=True)
class BinaryRoot:
    """A server binary and the root filesystem it belongs to (both resolved, the binary inside the root)."""

    root: Path
    binary: Path

    @property
    def inside(self) -> str:
        """The binary's path as a container or guest made from the root sees it (/usr/sbin/mysqld)."""
        return "/" + self.binary.relative_to(self.root).as_posix()

    def library_path(self) -> str:
        seen: dict[str, str] = {}
        for folder in LIBRARY_DIRS:
            path = self.root / folder
            if path.is_dir():
                seen.setdefault(os.path.realpath(path), str(path))
        return ":".join(seen.values())

    def command(self) -> tuple[str, ...]:
        """The binary through the root's own loader and libraries (as the MySQL rootfs's mysqld runs here)."""
        return (str(self.root / LOADER), "--library-path", self.library_path(), str(self.binary))

    def paths(self) -> dict[str, str]:
        """Where the server's own files are in the root (basedir, messages, character sets, plugins), for a
        server run here: else it would read this machine's (MariaDB's /usr/share/mysql)."""
        base = self.binary.parent.parent
        share = next((s for s in (base / "share/mysql", base / "share") if (s / "english").is_dir()), None)
        plugin = next((p for p in (base / "lib/mysql/plugin", base / "lib/plugin") if p.is_dir()), None)
        found = {"basedir": base, "lc-messages-dir": share,
                 "character-sets-dir": share / "charsets" if share and (share / "charsets").is_dir() else None,
                 "plugin-dir": plugin}
        return {key: str(value) for key, value in found.items() if value is not None}

    def paths_inside(self) -> dict[str, str]:
        """paths() as a container or guest made from the root sees them."""
        return {key: "/" + Path(value).relative_to(self.root).as_posix() for key, value in self.paths().items()}

    def missing_programs(self, programs: tuple[str, ...]) -> list[str]:
        """Which of the programs are in none of the root's bin folders (a link counts, wherever it points)."""
        folders = ("usr/bin", "bin", "usr/sbin", "sbin")
        return [name for name in programs if not any(os.path.lexists(self.root / f / name) for f in folders)]

    def missing_libraries(self) -> list[str]:
        """The libraries the loader does not find inside the root (`ld.so --list`), each with where it looked."""
        try:
            done = capture([*self.command()[:3], "--list", str(self.binary)], timeout=LIST_TIMEOUT)
        except (OSError, TimedOut) as error:
            return [f"the root's loader did not list them ({error})"]
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
            return [f"the root's loader refused it ({said[-1]})"]
        return libraries_outside(done.stdout, self.root)


def libraries_outside(listing: str, root: Path) -> list[str]:
    """From `ld.so --list` output: each library not found, or found outside `root` (this machine's)."""
    prefix = f"{root}/"
    problems = []
    for line in listing.splitlines():
        match = _LISTED.match(line)
        if match is None:
            continue
        name, path = match.group("name"), match.group("path")
        if path == "not found":
            problems.append(f"{name} not found")
        elif path and not path.startswith(prefix):
            problems.append(f"{name} from {path}")
    return problems


def find_root(binary: str) -> BinaryRoot | None:
    """The root filesystem a binary is inside: the nearest folder above it (never / itself) holding the loader
    and usr/ and etc/ folders (ROOT/usr holds lib64/ld-linux... too, but is no root), the loader's real path inside
    that folder too (an absolute link would lead to this machine's)."""
    try:
        resolved = Path(os.path.realpath(binary))
    except (ValueError, OSError):  # a NUL byte, a name too long for the system: no file at all
        return None
    for parent in resolved.parents:
        if parent == Path("/"):
            return None
        loader = parent / LOADER
        if loader.is_file() and is_root(parent) and os.path.realpath(loader).startswith(f"{parent}/"):
            return BinaryRoot(parent, resolved)
    return None


def require_root(binary: str, where: str) -> BinaryRoot:
    """The root of a binary that runs in a container or guest made from it, or a one-line BadInput."""
    found = find_root(binary)
    if found is None:
        raise BadInput(f"{where}: {shown(binary)} is not inside a root filesystem (no folder above it holds "
                       f"{LOADER}), so no image or guest can be made from it; give the mysqld of a root "
                       "filesystem (debootstrap, like ROOTFS/usr/sbin/mysqld), or use backend: host")
    check_libraries(found, where)
    return found


def check_libraries(found: BinaryRoot, where: str) -> None:
    missing = found.missing_libraries()
    if missing:
        more = f" and {len(missing) - 2} more" if len(missing) > 2 else ""
        raise BadInput(f"{where}: {shown(str(found.binary))} needs libraries its root {shown(str(found.root))} does "
                       f"not hold ({shown('; '.join(missing[:2]), 160)}{more}); install them in that root")


@lru_cache(maxsize=8)
def content_key(root: Path) -> str:
    """sha256 (12 hex digits) of everything in the root as `docker import` takes it: each entry's path, mode,
    owner, link target and bytes (about 2 s for the 400 MB MySQL rootfs here, once per process)."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted([*dirs, *files]):
            path = os.path.join(folder, name)
            info = os.lstat(path)
            digest.update(f"{os.path.relpath(path, root)}\0{info.st_mode}\0{info.st_uid}\0{info.st_gid}\0".encode())
            if os.path.islink(path):
                digest.update(os.readlink(path).encode())
            elif os.path.isfile(path):
                with open(path, "rb") as file:
                    digest.update(hashlib.file_digest(file, "sha256").digest())
    return digest.hexdigest()[:12]


def is_root(folder: Path) -> bool:
    return (folder / "usr").is_dir() and (folder / "etc").is_dir()
