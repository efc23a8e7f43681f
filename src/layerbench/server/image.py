"""Local server images (no registry needed): a Debian rootfs with exactly the host's server packages and sysbench,
built once with debootstrap, kept as a tarball in the cache (the VM backend's disk is made from the MariaDB one)
and imported into Docker under a tag derived from its inputs. One recipe per server (`Recipe`): MariaDB's
(`MARIADB_RECIPE`, the default of every function here) and PostgreSQL's (server/postgresql_image.py)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from layerbench.errors import PrerequisiteMissing, RunFailed
from layerbench.hosts.procs import capture, require_program, run
from layerbench.hosts.workdirs import cache_dir, folder_lock

RECIPE_VERSION = 1
SUITE = "bookworm"
PACKAGES = ("mariadb-server", "mariadb-client", "sysbench")
IMAGE_REPO = "layerbench/mariadb"
SOURCES_DIR = Path("/etc/apt/sources.list.d")


@dataclass(frozen=True)
class Recipe:
    """One server image: its Docker repository, the host's packages it installs (at the host's versions), the
    commands run in the chroot before and after the install, the program its CMD names, and inputs of its own
    beyond the packages (a user's ids: they key the image too). MariaDB's keys are those it always had."""

    repo: str
    packages: tuple[str, ...]
    program: str
    version: int = RECIPE_VERSION
    before: Callable[[], tuple[str, ...]] = field(default=lambda: ())
    after: tuple[str, ...] = ()
    extra: Callable[[], dict[str, str]] = field(default=lambda: {})
    file_prefix: str = "rootfs-"  # of its tarball in the cache


MARIADB_RECIPE = Recipe(IMAGE_REPO, PACKAGES, "/usr/sbin/mariadbd",
                        after=("rm -rf /var/lib/mysql/* /etc/mysql/conf.d/*", "mkdir -p /run/mysqld /etc/layerbench"))


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


def image_inputs(recipe: Recipe = MARIADB_RECIPE) -> dict[str, str]:
    return {"recipe": str(recipe.version), "suite": SUITE, "mirror": mirror(),
            **{p: installed_version(p) for p in recipe.packages}, **recipe.extra()}


def image_key(recipe: Recipe = MARIADB_RECIPE) -> str:
    return hashlib.sha256(json.dumps(image_inputs(recipe), sort_keys=True).encode()).hexdigest()[:12]


def image_tag(recipe: Recipe = MARIADB_RECIPE) -> str:
    return f"{recipe.repo}:{image_key(recipe)}"


def rootfs_path(recipe: Recipe = MARIADB_RECIPE) -> Path:
    return cache_dir() / "images" / f"{recipe.file_prefix}{image_key(recipe)}.tar"


Progress = Callable[[str], None]


def apt_install_script(pins: dict[str, str], *after: str, before: tuple[str, ...] = ()) -> str:
    """A shell script installing pinned Debian packages in a chroot without starting any service (a policy-rc.d
    that exits 101 during the install), then removing apt's lists and the policy, then the commands `after`; the
    commands `before` run first (under `set -e` too)."""
    packages = " ".join(f"{name}={version}" for name, version in pins.items())
    return "\n".join([
        "set -e", "export DEBIAN_FRONTEND=noninteractive", *before,
        "printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d",
        "apt-get update -qq", f"apt-get install -y -qq --no-install-recommends {packages}",
        "apt-get clean", "rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d", *after,
    ])


def chroot_script(inputs: dict[str, str], recipe: Recipe = MARIADB_RECIPE) -> str:
    return apt_install_script({p: inputs[p] for p in recipe.packages}, *recipe.after, before=recipe.before())


def build_rootfs(progress: Progress | None = None, recipe: Recipe = MARIADB_RECIPE) -> Path:
    """The cached rootfs tarball of a recipe, built now (debootstrap, about 2 minutes) when missing."""
    target = rootfs_path(recipe)
    if target.exists():
        return target
    say = progress or (lambda _text: None)
    require_program("debootstrap", "apt-get install debootstrap (scripts/setup does it)")
    if os.geteuid() != 0:
        raise PrerequisiteMissing("building the server image needs root (debootstrap); run as root")
    target.parent.mkdir(parents=True, exist_ok=True)
    # one build per rootfs at a time: a second process (another campaign, the suite's other lane) waits for it
    with folder_lock(target.parent, target.name, f"another process is building {target.name}; waiting for it", say):
        return target if target.exists() else _built_rootfs(target, say, recipe)


def _built_rootfs(target: Path, say: Callable[[str], None], recipe: Recipe) -> Path:
    inputs = image_inputs(recipe)
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=target.parent))
    log = target.parent / f"build-{image_key(recipe)}.log"
    started = time.monotonic()
    try:
        root = work / "root"
        say(f"debootstrap {SUITE} (minbase) from {inputs['mirror']}")
        checked(run("debootstrap", ["debootstrap", "--variant=minbase", SUITE, str(root), inputs["mirror"]],
                    log_path=log, timeout=1800), "debootstrap", log)
        (root / "etc/apt/sources.list.d").mkdir(parents=True, exist_ok=True)
        (root / "etc/apt/sources.list.d/host.sources").write_text(apt_sources())
        (root / "etc/apt/sources.list").write_text("")
        say("installing " + " and ".join(f"{p} {inputs[p]}" for p in recipe.packages if p != "mariadb-client"))
        checked(run("chroot install", ["chroot", str(root), "/bin/sh", "-c", chroot_script(inputs, recipe)],
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


def ensure_docker_image(client, progress: Progress | None = None, recipe: Recipe = MARIADB_RECIPE) -> str:
    """The locally built server image in Docker (imported from the rootfs when missing); returns its tag."""
    import docker.errors

    tag = image_tag(recipe)
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    tarball = build_rootfs(progress, recipe)
    (progress or (lambda _t: None))(f"importing {tarball.name} into Docker as {tag}")
    client.api.import_image(src=str(tarball), repository=recipe.repo, tag=image_key(recipe),
                            changes=["LABEL layerbench=1", f'CMD ["{recipe.program}"]'])
    client.images.get(tag)  # raises if the import did not produce the image
    return tag
