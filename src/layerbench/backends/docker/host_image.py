"""The server image of a docker variant on an ssh: host, built on that host's own daemon from that host's own
installed system, so the container runs the MariaDB of the host's release (trixie's 11.8 on a trixie host), not
this machine's package.

The host's Debian apt archive is not assumed (a server's apt lists and cache are often cleaned), so the image is a
`docker import` of a tar stream made and imported there (nothing crosses this machine): the files the host's dpkg
lists for its installed mariadb-server, everything that package needs (Pre-Depends and Depends, each installed
alternative and provider, to the end) and the Essential packages (sh and coreutils, the container's command), plus
the few files no package lists (users, the loader's cache, merged-/usr links); never the host's state, data or
secrets (EXCLUDED, the campaign's work_dir). On the lab's trixie host that is 363 MB, built in 3-9 s. The tag is
keyed by the host's OS release, its mariadb-server package version, its `mariadbd --version` line and its
architecture, so a host upgraded to another MariaDB gets another image; an image with that tag on the host's daemon
is reused. A host whose system has no mariadbd gets the image built here instead
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
RECIPE_VERSION = 4
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


# The installed packages mariadb-server needs on the host (its Pre-Depends and Depends, every installed alternative
# and provider, to the end) and the Essential ones (sh, coreutils: the container's command), one name a line, from
# the host's dpkg database.
CLOSURE_SCRIPT = r"""dpkg-query -W -f='${Package}\t${Essential}\t${Status}\t${Provides}\t${Pre-Depends}, ${Depends}\n' |
awk -F'\t' '
$3 !~ / installed$/ { next }
{ inst[$1] = 1; deps[$1] = $5; if ($2 == "yes") want[$1] = 1
  n = split($4, pv, /, */)
  for (i = 1; i <= n; i++) { split(pv[i], w, / /); p = w[1]; sub(/:.*/, "", p)
    if (p != "") prov[p] = prov[p] " " $1 } }
END {
  want["mariadb-server"] = 1; changed = 1
  while (changed) { changed = 0
    for (pkg in want) { if (pkg in seen) continue; seen[pkg] = 1
      n = split(deps[pkg], d, /, */)
      for (i = 1; i <= n; i++) { m = split(d[i], alt, / *[|] */)
        for (j = 1; j <= m; j++) { split(alt[j], w, / /); q = w[1]; sub(/:.*/, "", q); if (q == "") continue
          if ((q in inst) && !(q in want)) { want[q] = 1; changed = 1 }
          k = split(prov[q], pp, / /)
          for (l = 1; l <= k; l++) if (pp[l] != "" && !(pp[l] in want)) { want[pp[l]] = 1; changed = 1 } } } } }
  for (pkg in want) if (pkg in inst) print pkg }'"""
# A merged-/usr host's /bin, /sbin, /lib... are links into /usr, while its older packages still list /bin/bash: each
# listed path is written through the link (/usr/bin/bash), as the daemon's import will not extract a file through a
# link of the same archive.
MERGED_USR = ("links=$(for d in /bin /sbin /lib /lib32 /lib64 /libx32; do [ -L \"$d\" ] && "
              "printf '%s=%s ' \"$d\" \"$(readlink -f \"$d\")\"; done);")
THROUGH_LINKS = ("awk -v links=\"$links\" 'BEGIN { n = split(links, l, \" \"); for (i = 1; i <= n; i++) "
                 "{ split(l[i], kv, \"=\"); to[kv[1]] = kv[2] } } "
                 "{ for (k in to) if (index($0, k \"/\") == 1) { $0 = to[k] substr($0, length(k) + 1); break } "
                 "print }'")
# files of the host that no package lists but a program needs: users, the loader's cache, merged-/usr links
GENERATED = ("/etc/passwd", "/etc/group", "/etc/ld.so.cache", "/bin", "/sbin", "/lib", "/lib64")


def import_script(tag: str, work_dir: str, host_name: str) -> str:
    """The files of the host's packages that its MariaDB server needs (CLOSURE_SCRIPT) and GENERATED, less
    EXCLUDED and the work_dir, as a tar stream into its daemon's import."""
    excludes = " ".join(f"--exclude={shlex.quote(p)}" for p in (*EXCLUDED, f".{work_dir}"))
    changes = ["LABEL layerbench=1", f"LABEL layerbench.built-from=host:{host_name}", 'CMD ["/usr/sbin/mariadbd"]']
    change = " ".join(f"--change {shlex.quote(c)}" for c in changes)
    extra = " ".join(GENERATED)
    return (f"cd / && {MERGED_USR} {{ dpkg-query -L $({CLOSURE_SCRIPT}) 2>/dev/null; printf '%s\\n' {extra}; }} | "
            f"{THROUGH_LINKS} | sort -u | "
            "while IFS= read -r f; do if [ -e \"$f\" ] || [ -L \"$f\" ]; then printf '.%s\\n' \"$f\"; fi; done | "
            f"tar --numeric-owner --no-recursion -cf - {excludes} -T - | docker import {change} - {shlex.quote(tag)} "
            f">/dev/null && docker image inspect --format ok {shlex.quote(tag)}")


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
