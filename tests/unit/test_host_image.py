"""backends/docker/host_image.py: the facts of a host's release, the tag they key, and the import script that
builds the image there from the host's own system."""

from __future__ import annotations

import os
import shlex
import subprocess

from hypothesis import given
from hypothesis import strategies as st

from layerbench.backends.docker.host_image import (
    CLOSURE_SCRIPT,
    EXCLUDED,
    HOST_IMAGE_REPO,
    MERGED_USR,
    THROUGH_LINKS,
    host_image_tag,
    image_facts,
    import_script,
    parse_facts,
)
from layerbench.hosts.inventory import Host, HostEntry

SAID = """os=debian 13 trixie
package=1:11.8.9+ds-0+deb13u1
server=mariadbd  Ver 11.8.9-MariaDB-0+deb13u1 from Debian for debian-linux-gnu on x86_64
arch=x86_64
"""


def test_the_facts_of_a_trixie_host() -> None:
    facts = parse_facts(SAID)
    assert facts == {"os": "debian 13 trixie", "package": "1:11.8.9+ds-0+deb13u1",
                     "server": "mariadbd  Ver 11.8.9-MariaDB-0+deb13u1 from Debian for debian-linux-gnu on x86_64",
                     "arch": "x86_64"}


def test_another_mariadb_or_release_is_another_image_and_the_same_is_the_same() -> None:
    facts = parse_facts(SAID)
    tag = host_image_tag(facts)
    assert tag.startswith(f"{HOST_IMAGE_REPO}:") and len(tag.split(":")[1]) == 12
    assert host_image_tag(dict(facts)) == tag
    assert host_image_tag({**facts, "package": "1:10.11.14-0+deb12u2"}) != tag
    assert host_image_tag({**facts, "os": "debian 12 bookworm"}) != tag
    assert host_image_tag({**facts, "arch": "aarch64"}) != tag


@given(st.text(max_size=400))
def test_hostile_output_gives_only_known_keys_and_a_valid_tag(text: str) -> None:
    facts = parse_facts(text)
    assert set(facts) <= {"os", "package", "server", "arch"}
    tag = host_image_tag(facts)
    assert tag.split(":")[1].isalnum() and tag.split(":")[1] == tag.split(":")[1].lower()


def test_the_import_script_leaves_out_state_data_secrets_and_the_work_dir() -> None:
    script = import_script("layerbench/mariadb-host:0123456789ab", "/var/tmp/layer bench", "db")
    words = shlex.split(script)
    excluded = [w.removeprefix("--exclude=") for w in words if w.startswith("--exclude=")]
    assert excluded == [*EXCLUDED, "./var/tmp/layer bench"]
    assert {"./etc/shadow*", "./etc/ssh/ssh_host_*", "./var/lib/mysql/*", "./tmp/*"} <= set(excluded)
    pipe = len(words) - 1 - words[::-1].index("|")  # the last: tar into the import
    assert words[pipe - 2:pipe + 1] == ["-T", "-", "|"] and words[pipe + 1:pipe + 3] == ["docker", "import"]
    assert 'CMD ["/usr/sbin/mariadbd"]' in words and "LABEL layerbench.built-from=host:db" in words
    assert subprocess.run(["sh", "-n", "-c", script], timeout=30).returncode == 0  # valid POSIX sh


def test_the_record_names_the_host_and_its_package() -> None:
    host = Host("db", HostEntry(ssh="root@10.0.0.2"))
    assert image_facts(host, parse_facts(SAID)) == {
        "image_built_on": "db",
        "image_from": "rootfs of host db (debian 13 trixie, mariadb-server 1:11.8.9+ds-0+deb13u1)"}


def test_the_package_closure_of_this_machine_s_mariadb_server_is_what_it_needs_and_no_more() -> None:
    """Run on this machine's real dpkg database (scripts/setup installs mariadb-server and docker.io here)."""
    done = subprocess.run(["sh", "-c", CLOSURE_SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    packages = set(done.stdout.split())
    assert {"mariadb-server", "libc6", "dash", "coreutils", "mariadb-client"} <= packages, sorted(packages)
    assert not {"docker.io", "openssh-server", "sysbench"} & packages, sorted(packages)


def test_a_path_listed_under_a_merged_usr_link_is_written_through_it() -> None:
    """On this machine (bookworm, merged /usr) bash's package lists /bin/bash; the archive gets /usr/bin/bash, and
    /bin itself stays the link (the daemon's import refuses a file through a link of the same archive)."""
    script = f"{MERGED_USR} printf '%s\\n' /bin /bin/bash /usr/sbin/mariadbd /binary/x | {THROUGH_LINKS}"
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60, check=True)
    merged = os.path.islink("/bin")
    expected = ["/bin", "/usr/bin/bash" if merged else "/bin/bash", "/usr/sbin/mariadbd", "/binary/x"]
    assert done.stdout.split("\n")[:-1] == expected, done.stdout
