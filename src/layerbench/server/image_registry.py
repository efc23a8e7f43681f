"""Server images in a registry: `layerbench image push <registry>` copies every server image layerbench builds
(MariaDB's, and MySQL's of each built rootfs: server/image.py, server/mysql_image.py) from this machine's Docker to
the registry with skopeo (Debian's; from the daemon's own store, so dockerd's insecure-registries stay as they are),
and a cluster reads an image's CPU architecture there before its first run (hosts/architecture.py).

A registry is `host[:port]`, as the first part of an image reference: a host with a dot, a port, or `localhost`
(else Docker reads it as a Docker Hub user). A registry on a loopback or private IPv4 address (the lab's,
scripts/k8s-local) is spoken to over plain HTTP, or HTTPS without checking its certificate; any other over HTTPS,
verified."""

from __future__ import annotations

import ipaddress
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from layerbench.errors import BadInput, RunFailed, shown
from layerbench.hosts.procs import capture, require_program

Say = Callable[[str], None]
PUSH_TIMEOUT = 1800.0  # one image of ~400 MB: 12 s measured here into the lab registry
INSPECT_TIMEOUT = 60.0
ADDRESS_LIMIT = 260
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = re.compile(rf"{_LABEL}(?:\.{_LABEL})*", re.ASCII)
_PORT = re.compile(r"[0-9]{1,5}", re.ASCII)
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}", re.ASCII)
SKOPEO_HINT = "install Debian's skopeo (scripts/setup does)"


def registry_address(text: str, where: str = "registry") -> str:
    """`host[:port]` of a registry, checked: a one-line BadInput naming `where` and the fix otherwise."""
    fix = "give host:port, like 10.250.0.1:15000 (scripts/k8s-local status names the lab's) or registry.example.com"
    if not text or len(text) > ADDRESS_LIMIT or not text.isascii() or not text.isprintable() or text != text.strip():
        raise BadInput(f"{where}: {shown(text)} is not a registry address; {fix}")
    if "://" in text or "/" in text:
        raise BadInput(f"{where}: {shown(text)} is not a registry address (no scheme, no path: the images keep "
                       f"their own names under it); {fix}")
    host, _, port = text.partition(":") if text.count(":") == 1 else (text, "", "")
    if ":" in host or not _HOST.fullmatch(host) or len(host) > 253:
        raise BadInput(f"{where}: {shown(text)} is not a registry address (IPv6 and names with characters other "
                       f"than letters, digits, dots and dashes are not); {fix}")
    if text.count(":") == 1 and (not _PORT.fullmatch(port) or not 1 <= int(port) <= 65535):
        raise BadInput(f"{where}: {shown(text)} has no TCP port after its colon (1-65535); {fix}")
    if "." not in host and not port and host != "localhost":
        raise BadInput(f"{where}: {shown(text)} would be read as a Docker Hub user, not a registry (a registry has "
                       f"a dot or a port, or is localhost); {fix}")
    return text


def registry_of(image: str) -> str | None:
    """The registry an image reference names (Docker's rule: a first part with a dot or a colon, or localhost),
    or None for Docker Hub's."""
    first, slash, _ = image.partition("/")
    return first if slash and ("." in first or ":" in first or first == "localhost") else None


def plain_http(registry: str) -> bool:
    """A registry on a loopback or private IPv4 address (or localhost) may speak plain HTTP."""
    host = registry.rpartition(":")[0] if ":" in registry else registry
    if host == "localhost":
        return True
    try:
        address = ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return address.is_private or address.is_loopback


def _tls(flag: str, registry: str) -> list[str]:
    return [f"--{flag}=false"] if plain_http(registry) else []


_MSG = re.compile(r'level=\w+ msg="(?P<msg>(?:[^"\\]|\\.)*)"')


def _skopeo_failure(stderr: str) -> str:
    """skopeo's last line, its logfmt frame removed; the end kept (where the cause is)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if not lines:
        return "no message"
    found = _MSG.search(lines[-1])
    text = found.group("msg").replace('\\"', '"') if found else lines[-1]
    return shown(text, 160, quote=False, keep_end=True)


@lru_cache(maxsize=32)
def image_architecture(image: str, want: str, where: str) -> str:
    """The CPU architecture of `image` in its registry (of the `want` entry of a multi-architecture list, else of
    the one image there is), read by skopeo; a one-line BadInput naming `where` when it cannot be read."""
    skopeo = require_program("skopeo", SKOPEO_HINT)
    registry = registry_of(image)
    tls = _tls("tls-verify", registry) if registry else []
    done = capture([skopeo, "--override-os", "linux", "--override-arch", want, "inspect", *tls, "--retry-times", "1",
                    "--format", "{{.Architecture}}", f"docker://{image}"], timeout=INSPECT_TIMEOUT)
    if done.returncode != 0:
        raise BadInput(f"{where}: the registry does not give {shown(image, 120)} ({_skopeo_failure(done.stderr)}); "
                       "push it first (layerbench image push <registry>) or fix image:")
    return done.stdout.strip()


@dataclass(frozen=True)
class Pushed:
    reference: str  # registry/repository:tag
    digest: str  # sha256:..., the manifest's digest in the registry (a pod's imageID ends in it)
    architecture: str
    seconds: float


def local_architecture(tag: str) -> str:
    done = capture(["docker", "image", "inspect", "--format", "{{.Architecture}}", tag], timeout=INSPECT_TIMEOUT)
    if done.returncode != 0:
        raise RunFailed(f"docker image inspect {tag} failed ({_skopeo_failure(done.stderr)})")
    return done.stdout.strip()


def push_image(tag: str, registry: str) -> Pushed:
    """Copy one image of this machine's Docker to `registry` under its own name; its digest there."""
    skopeo = require_program("skopeo", SKOPEO_HINT)
    reference, started = f"{registry}/{tag}", time.monotonic()
    with tempfile.TemporaryDirectory(prefix="layerbench-push-") as folder:
        digest_file = Path(folder) / "digest"
        done = capture([skopeo, "copy", "--quiet", "--retry-times", "2", *_tls("dest-tls-verify", registry),
                        "--digestfile", str(digest_file), f"docker-daemon:{tag}", f"docker://{reference}"],
                       timeout=PUSH_TIMEOUT)
        if done.returncode != 0:
            raise RunFailed(f"push of {tag} to {registry} failed: {_skopeo_failure(done.stderr)}")
        digest = digest_file.read_text(encoding="ascii", errors="replace")[:100].strip()
    if not _DIGEST.fullmatch(digest):
        raise RunFailed(f"push of {tag} to {registry}: skopeo gave no digest ({shown(digest)})")
    return Pushed(reference, digest, local_architecture(tag), time.monotonic() - started)


def mysql_images(say: Say) -> list[str]:
    """The MySQL image of every built rootfs, imported into Docker now when missing (server/mysql_image.py)."""
    from layerbench.server.mysql_image import import_rootfs, mysql_image_tag
    from layerbench.server.mysql_rootfs import built_rootfses

    tags = []
    for _version, rootfs in built_rootfses():
        tag = mysql_image_tag(rootfs)
        if capture(["docker", "image", "inspect", tag], timeout=INSPECT_TIMEOUT).returncode != 0:
            say(f"importing the MySQL rootfs {rootfs.folder.name} into Docker as {tag}")
            import_rootfs(rootfs, tag)
        tags.append(tag)
    return tags
