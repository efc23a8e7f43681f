"""The server image of a docker variant on an ssh: host, built on that host's own daemon from that host's own
installed system, so the container runs the MariaDB of the host's release (trixie's 11.8 on a trixie host), not
this machine's package.

The host's Debian apt archive is not assumed (a server's apt lists and cache are often cleaned), so the image is a
`docker import` of a tar stream of the host's `/`, made and imported there (nothing crosses this machine): its
installed programs and libraries, less its state and data (/proc, /sys, /dev, /run, temporary folders, logs,
caches, home folders, Docker's and MariaDB's data, the campaign's work_dir) and its secrets (SSH host keys,
/etc/shadow, /etc/ssl/private). The tag is keyed by the host's OS release, its mariadb-server package version
and its `mariadbd --version` line, so a host upgraded to another MariaDB gets another image; an image with that
tag on the host's daemon is reused. A host whose system has no mariadbd gets the image built here instead
(remote.py: sent by save and load)."""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable

from layerbench.errors import RunFailed
from layerbench.hosts.inventory import Host

HOST_IMAGE_REPO = "layerbench/mariadb-host"
IMPORT_TIMEOUT = 1800  # a host's / is about 1 GB: tar and import on a loaded 2-core machine took about 2 minutes
# what a server host holds that is not its installed system: state, data, caches and secrets (tar --exclude)
# what a server host holds that is not its installed system: state, data, caches and secrets (tar --exclude; a
# folder's content, not the folder: /tmp, /run and the mount points stay in the image, empty)
RECIPE_VERSION = 2
EXCLUDED = ("./proc/*", "./sys/*", "./dev/*", "./run/*", "./tmp/*", "./var/tmp/*", "./var/log/*", "./var/cache/*",
            "./home/*", "./root/*", "./srv/*", "./mnt/*", "./media/*", "./var/lib/docker/*", "./var/lib/containerd/*",
            "./var/lib/mysql/*", "./etc/ssh/ssh_host_*", "./etc/shadow*", "./etc/gshadow*", "./etc/ssl/private/*")

FACTS_SCRIPT = """. /etc/os-release 2>/dev/null
echo "os=${ID:-unknown} ${VERSION_ID:-} ${VERSION_CODENAME:-}"
echo "package=$(dpkg-query -W -f='${Version}' mariadb-server 2>/dev/null)"
echo "server=$(mariadbd --version 2>/dev/null || /usr/sbin/mariadbd --version 2>/dev/null)"
echo "arch=$(uname -m)"
"""


def parse_facts(text: str) -> dict[str, str]:
    """`key=value` lines of FACTS_SCRIPT -> the host's release facts (values stripped, unknown keys dropped)."""
    facts: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in ("os", "package", "server", "arch"):
            facts[key] = value.strip()
    return facts


def host_facts(host: Host) -> dict[str, str]:
    done = host.shell(FACTS_SCRIPT, name=f"release of {host.name}", timeout=60)
    return parse_facts(done.output)


def host_image_tag(facts: dict[str, str]) -> str:
    inputs = {"recipe": RECIPE_VERSION, **{k: facts.get(k, "") for k in ("os", "package", "server", "arch")}}
    return f"{HOST_IMAGE_REPO}:{hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:12]}"


def import_script(tag: str, work_dir: str, host_name: str) -> str:
    """The host's `/` (one file system, less EXCLUDED and the work_dir) as a tar stream into its daemon's import."""
    excludes = " ".join(f"--exclude={shlex.quote(p)}" for p in (*EXCLUDED, f".{work_dir}"))
    changes = ["LABEL layerbench=1", f"LABEL layerbench.built-from=host:{host_name}",
               'CMD ["/usr/sbin/mariadbd"]']
    change = " ".join(f"--change {shlex.quote(c)}" for c in changes)
    return (f"cd / && tar --numeric-owner --one-file-system -cf - {excludes} . "
            f"| docker import {change} - {shlex.quote(tag)} >/dev/null && docker image inspect --format ok "
            f"{shlex.quote(tag)}")


def has_image(host: Host, tag: str) -> bool:
    done = host.run(["docker", "image", "inspect", "--format", "ok", tag], name=f"image on {host.name}", timeout=120)
    return done.returncode == 0 and done.output.strip() == "ok"


def ensure_host_image(host: Host, facts: dict[str, str], say: Callable[[str], None]) -> str:
    """The host's own image on its daemon (imported there now when missing); returns its tag."""
    tag = host_image_tag(facts)
    if has_image(host, tag):
        return tag
    package = facts.get("package") or "unknown"
    say(f"building image {tag} on host {host.name} from its own system (mariadb-server {package})")
    done = host.shell(import_script(tag, host.work_dir, host.name), name=f"docker import on {host.name}",
                      timeout=IMPORT_TIMEOUT)
    if done.returncode != 0 or not has_image(host, tag):
        last = (done.output.strip().splitlines() or ["no output"])[-1][:200]
        raise RunFailed(f"hosts.{host.name}: building the server image from its own system there failed: {last}")
    return tag


def image_facts(host: Host, facts: dict[str, str]) -> dict[str, str]:
    """What a run's record keeps of where its image came from."""
    return {"image_built_on": host.name, "image_from": f"rootfs of host {host.name} ({facts.get('os', '').strip()}, "
                                                      f"mariadb-server {facts.get('package') or 'unknown'})"}
