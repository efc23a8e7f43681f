"""Local server images (no registry needed): a Debian rootfs with exactly the host's MariaDB server package and
sysbench, built once with debootstrap, kept as a tarball in the cache (the VM backend's disk is made from the
same rootfs) and imported into Docker under a tag derived from its inputs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from layerbench.errors import PrerequisiteMissing, RunFailed
from layerbench.hosts.procs import capture, require_program, run
from layerbench.hosts.workdirs import cache_dir

RECIPE_VERSION = 1
SUITE = "bookworm"
PACKAGES = ("mariadb-server", "mariadb-client", "sysbench")
IMAGE_REPO = "layerbench/mariadb"
SOURCES_DIR = Path("/etc/apt/sources.list.d")


def installed_version(package: str) -> str:
    done = capture(["dpkg-query", "-W", "-f=${Version}", package], timeout=60)
    if done.returncode != 0 or not done.stdout.strip():
        raise PrerequisiteMissing(f"{package} is not installed on this host; run scripts/setup (the image "
                                  "installs the same version as the host)")
    return done.stdout.strip()


def apt_sources() -> str:
    """The host's Debian sources, so the image can reach the same package versions (updates, security)."""
    texts = [p.read_text() for p in sorted(SOURCES_DIR.glob("*.sources")) if "debian" in p.read_text()]
    legacy = Path("/etc/apt/sources.list")
    if legacy.exists():
        texts.append(legacy.read_text())
    return "\n".join(texts)


def mirror() -> str:
    for line in apt_sources().splitlines():
        words = line.split()
        if words and words[0] in ("URIs:", "deb") and "security" not in line:
            uri = words[1] if words[0] == "URIs:" else next((w for w in words[1:] if "://" in w), "")
            if uri:
                return uri
    return "http://deb.debian.org/debian"


def image_inputs() -> dict[str, str]:
    return {"recipe": str(RECIPE_VERSION), "suite": SUITE, "mirror": mirror(),
            **{p: installed_version(p) for p in PACKAGES}}


def image_key() -> str:
    return hashlib.sha256(json.dumps(image_inputs(), sort_keys=True).encode()).hexdigest()[:12]


def image_tag() -> str:
    return f"{IMAGE_REPO}:{image_key()}"


def rootfs_path() -> Path:
    return cache_dir() / "images" / f"rootfs-{image_key()}.tar"


Progress = Callable[[str], None]


def apt_install_script(pins: dict[str, str], *after: str) -> str:
    """A shell script installing pinned Debian packages in a chroot without starting any service (a policy-rc.d
    that exits 101 during the install), then removing apt's lists and the policy, then the commands `after`."""
    packages = " ".join(f"{name}={version}" for name, version in pins.items())
    return "\n".join([
        "set -e", "export DEBIAN_FRONTEND=noninteractive",
        "printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d",
        "apt-get update -qq", f"apt-get install -y -qq --no-install-recommends {packages}",
        "apt-get clean", "rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d", *after,
    ])


def chroot_script(inputs: dict[str, str]) -> str:
    return apt_install_script({p: inputs[p] for p in PACKAGES}, "rm -rf /var/lib/mysql/* /etc/mysql/conf.d/*",
                              "mkdir -p /run/mysqld /etc/layerbench")


def build_rootfs(progress: Progress | None = None) -> Path:
    """The cached rootfs tarball, built now (debootstrap, about 2 minutes) when missing."""
    target = rootfs_path()
    if target.exists():
        return target
    say = progress or (lambda _text: None)
    require_program("debootstrap", "apt-get install debootstrap (scripts/setup does it)")
    if os.geteuid() != 0:
        raise PrerequisiteMissing("building the server image needs root (debootstrap); run as root")
    inputs = image_inputs()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=target.parent))
    log = target.parent / f"build-{image_key()}.log"
    started = time.monotonic()
    try:
        root = work / "root"
        say(f"debootstrap {SUITE} (minbase) from {inputs['mirror']}")
        checked(run("debootstrap", ["debootstrap", "--variant=minbase", SUITE, str(root), inputs["mirror"]],
                    log_path=log, timeout=1800), "debootstrap", log)
        (root / "etc/apt/sources.list.d").mkdir(parents=True, exist_ok=True)
        (root / "etc/apt/sources.list.d/host.sources").write_text(apt_sources())
        (root / "etc/apt/sources.list").write_text("")
        say(f"installing mariadb-server {inputs['mariadb-server']} and sysbench {inputs['sysbench']}")
        checked(run("chroot install", ["chroot", str(root), "/bin/sh", "-c", chroot_script(inputs)],
                    log_path=log, timeout=1800), "package install in the image", log)
        say("packing the rootfs")
        partial = work / "rootfs.tar"
        checked(run("tar", ["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial), "."], log_path=log,
                    timeout=900), "tar", log)
        partial.rename(target)
        say(f"rootfs ready in {time.monotonic() - started:.0f} s: {target}")
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def checked(done, what: str, log: Path) -> None:
    if done.returncode != 0:
        last = next((ln for ln in reversed(done.output.splitlines()) if ln.strip()), "no output")
        raise RunFailed(f"image build: {what} failed ({last.strip()}); full log: {log}")


def ensure_docker_image(client, progress: Progress | None = None) -> str:
    """The locally built server image in Docker (imported from the rootfs when missing); returns its tag."""
    import docker.errors

    tag = image_tag()
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    tarball = build_rootfs(progress)
    (progress or (lambda _t: None))(f"importing {tarball.name} into Docker as {tag}")
    client.api.import_image(src=str(tarball), repository=IMAGE_REPO, tag=image_key(),
                            changes=["LABEL layerbench=1", 'CMD ["/usr/sbin/mariadbd"]'])
    client.images.get(tag)  # raises if the import did not produce the image
    return tag
