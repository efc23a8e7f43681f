"""A `mysqld:` inside a root filesystem (server/binary_root.py) for the docker backend: the root found above it,
the binary run through that root's own loader, and every way it is refused in one line (not in a root, a library
the root lacks, a version layerbench does not know, a root without the container's programs, together with
`image:` or `server_host:`, hostile values). The roots are real: a small C program compiled here with gcc, beside
a copy of this machine's loader and libc, answering `--version` as the server it plays."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.server.binary_root import content_key, find_root, libraries_outside, require_root
from layerbench.server.servers import resolve_server, rooted_image_server

PERCONA = "mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28, Revision 47601f19)"
MYSQL57 = "mysqld  Ver 5.7.44 for Linux on x86_64 (MySQL Community Server (GPL))"
SOURCE = '#include <stdio.h>\n#include <string.h>\nint main(int c, char **v) {\n' \
         '  if (c > 1 && !strcmp(v[1], "--version")) puts(VERSION);\n  return 0;\n}\n'

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to compile the server it plays")


def host_library(name: str) -> Path:
    done = subprocess.run(["ldd", "/bin/true"], capture_output=True, text=True, check=True)
    path = next(line.split()[2] for line in done.stdout.splitlines() if line.strip().startswith(name))
    return Path(os.path.realpath(path))


def make_root(folder: Path, said: str, libc: bool = True, programs: tuple[str, ...] = ("sh", "mkdir", "cp")) -> Path:
    """folder/ as a root: lib64/ld-linux-x86-64.so.2, usr/lib/x86_64-linux-gnu/libc.so.6, etc/, usr/bin/<programs>
    (copies of this machine's) and usr/sbin/mysqld printing `said` for --version; returns the binary's path."""
    for sub in ("etc", "lib64", "usr/lib/x86_64-linux-gnu", "usr/bin", "usr/sbin", "usr/share/mysql/english",
                "usr/share/mysql/charsets", "usr/lib/mysql/plugin"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy2(os.path.realpath("/lib64/ld-linux-x86-64.so.2"), folder / "lib64/ld-linux-x86-64.so.2")
    if libc:
        shutil.copy2(host_library("libc.so.6"), folder / "usr/lib/x86_64-linux-gnu/libc.so.6")
    for program in programs:
        shutil.copy2(os.path.realpath(shutil.which(program) or ""), folder / "usr/bin" / program)
    source = folder / "mysqld.c"
    source.write_text(SOURCE)
    binary = folder / "usr/sbin/mysqld"
    subprocess.run(["gcc", "-O0", f"-DVERSION={said!r}".replace("'", '"'), "-o", str(binary), str(source)],
                   check=True, capture_output=True)
    source.unlink()
    return binary


def campaign(mysqld: object, **extra: object) -> dict:
    return {"name": "c", "baseline": "d", "workloads": [{"name": "w", "tables": 1, "table_size": 10}],
            "variants": [{"name": "d", "backend": "docker", "mysqld": mysqld, **extra}]}


@pytest.fixture(scope="module")
def percona(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_root(tmp_path_factory.mktemp("percona-root"), PERCONA)


def test_a_binary_in_a_root_runs_through_that_roots_loader_and_names_its_flavour(percona: Path) -> None:
    root = percona.parent.parent.parent
    found = find_root(str(percona))
    assert found is not None and found.root == root and found.inside == "/usr/sbin/mysqld"
    assert found.missing_libraries() == []  # libc and the loader are the root's, none of this machine's
    assert found.command()[0] == str(root / "lib64/ld-linux-x86-64.so.2")
    variant = parse_campaign(campaign(str(percona))).variant("d")
    variant.check_server_here()
    inside = rooted_image_server(variant)
    assert (inside.flavour.name, inside.flavour.version, inside.command) == ("percona", "8.0.36", ("/usr/sbin/mysqld",))
    assert inside.flavour.defaults["secure-file-priv"] == "NULL"
    assert inside.paths == {"basedir": "/usr", "lc-messages-dir": "/usr/share/mysql", "character-sets-dir":
                            "/usr/share/mysql/charsets", "plugin-dir": "/usr/lib/mysql/plugin"}
    here = resolve_server(variant.snapshot_server())  # the snapshot's server: the same bytes, here
    assert here.command == found.command() and here.paths["basedir"] == str(root / "usr")
    assert variant.server_command_here() == found.command()


def test_the_image_key_follows_the_roots_content(tmp_path: Path) -> None:
    binary = make_root(tmp_path / "root", PERCONA)
    root = binary.parent.parent.parent
    before = content_key.__wrapped__(root)
    assert content_key.__wrapped__(root) == before
    (root / "etc/hostname").write_text("another")
    assert content_key.__wrapped__(root) != before


def refusal(data: dict) -> str:
    with pytest.raises(BadInput) as refused:
        parse_campaign(data).variant("d").check_server_here()
    text = str(refused.value)
    assert "\n" not in text and len(text) < 600
    return text


def test_a_binary_outside_any_root_is_refused_in_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "bin/mysqld"  # an unpacked tarball's bin/mysqld: this machine's libraries, no root
    binary.parent.mkdir()
    shutil.copy2("/bin/true", binary)
    assert "is not inside a root filesystem" in refusal(campaign(str(binary)))
    assert "is not inside a root filesystem" in refusal(campaign("/usr/sbin/mariadbd"))  # / itself is no root


def test_a_library_the_root_does_not_hold_is_refused_in_one_line(tmp_path: Path) -> None:
    binary = make_root(tmp_path / "root", PERCONA, libc=False)
    text = refusal(campaign(str(binary)))
    assert "needs libraries its root" in text and "libc.so.6" in text


def test_a_version_layerbench_does_not_know_is_refused_in_one_line(tmp_path: Path) -> None:
    binary = make_root(tmp_path / "root", MYSQL57)
    assert "is not a server layerbench can start (--version says 'mysqld  Ver 5.7.44" in refusal(campaign(str(binary)))


def test_a_root_without_the_containers_programs_is_refused(tmp_path: Path) -> None:
    binary = make_root(tmp_path / "root", PERCONA, programs=("sh",))
    assert "has no mkdir, cp, which the container's command runs" in refusal(campaign(str(binary)))


@pytest.mark.parametrize(("extra", "says"), [
    ({"image": "mysql:8.4"}, "remove mysqld: or image:"),
    ({"server_host": "db"}, "in Docker on another host (server_host): not yet"),
    ({"server": {"flavour": "mysql"}}, "give server.flavour: mysql or mysqld:, not both"),
    ({"client": "container"}, "sysbench in a container beside a mysqld: binary: not yet"),
    ({"server": {"flavour": "mariadb"}}, "mariadb asked, but the server binary is Percona Server 8.0.36"),
])
def test_what_cannot_go_with_a_binary_is_refused_in_one_line(percona: Path, extra: dict, says: str) -> None:
    data = campaign(str(percona), **extra)
    if "server_host" in extra:
        data["hosts"] = [{"name": "db", "ssh": "root@192.0.2.1"}]
    assert says in refusal(data)


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.text(max_size=300), st.lists(st.text(max_size=5), max_size=3), st.integers(min_value=-10**400,
                 max_value=10**400), st.sampled_from(["x" * 5000, "/x\n[/b]", "", "/bin/\x00sh", "/"])))
def test_any_mysqld_value_is_refused_in_one_line_or_checked(value: object) -> None:
    try:
        parse_campaign(campaign(value)).variant("d").check_server_here()
    except BadInput as error:
        assert "\n" not in str(error) and len(str(error)) < 600
    else:
        raise AssertionError(f"{value!r} was accepted as a server binary")


@given(st.text(max_size=400))
def test_the_loader_listing_parser_takes_any_text(text: str) -> None:
    problems = libraries_outside(text, Path("/root/of/it"))
    assert all(isinstance(p, str) for p in problems)


def test_the_loader_listing_names_what_is_missing_or_this_machines() -> None:
    listing = ("\tlinux-vdso.so.1 (0x00007ffd)\n\tlibicuuc.so.78 => not found\n"
               "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f40)\n"
               "\tlibz.so.1 => /r/usr/lib/x86_64-linux-gnu/libz.so.1 (0x00007f41)\n"
               "\t/lib64/ld-linux-x86-64.so.2 => /r/lib64/ld-linux-x86-64.so.2 (0x00007f42)\n")
    assert libraries_outside(listing, Path("/r")) == ["libicuuc.so.78 not found",
                                                       "libc.so.6 from /lib/x86_64-linux-gnu/libc.so.6"]


def test_require_root_says_the_field_it_was_given(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"^variants\.v\.mysqld: "):
        require_root(str(tmp_path / "nothing"), "variants.v.mysqld")


GUEST = ("sh", "mount", "mkdir", "cat", "ls", "grep", "head", "test", "cp")


def test_a_vm_variant_runs_the_binary_of_its_root_disk(tmp_path: Path) -> None:
    from layerbench.backends.vm.local import guest_root, server_script

    binary = make_root(tmp_path / "root", PERCONA, programs=GUEST)
    variant = parse_campaign(campaign(str(binary), backend="vm")).variant("d")
    variant.check_server_here()
    assert guest_root(variant) == (None, tmp_path / "root")  # no cached MySQL rootfs is this root
    script = server_script(rooted_image_server(variant))
    assert "/usr/sbin/mysqld --no-defaults --initialize-insecure --datadir=/var/lib/mysql --user=root --basedir=/usr" \
        in script and "exec /usr/sbin/mysqld" in script
    assert variant.snapshot_server().mysqld == str(binary)


def test_a_vm_root_without_what_the_guest_init_runs_is_refused(tmp_path: Path) -> None:
    binary = make_root(tmp_path / "root", PERCONA)  # sh, mkdir, cp only
    assert "has no mount, cat, ls, grep, head, test, which the guest's init runs" in \
        refusal(campaign(str(binary), backend="vm"))


def test_a_vm_binary_on_another_host_is_not_yet(percona: Path) -> None:
    data = campaign(str(percona), backend="vm", server_host="db")
    data["hosts"] = [{"name": "db", "ssh": "root@192.0.2.1"}]
    assert "in a VM on another host (server_host): not yet" in refusal(data)


def test_a_host_variant_runs_a_binary_in_a_root_through_that_roots_loader(percona: Path) -> None:
    variant = parse_campaign(campaign(str(percona), backend="host")).variant("d")
    variant.check_server_here()
    server = resolve_server(variant)
    assert server.command[0].endswith("/lib64/ld-linux-x86-64.so.2") and server.program == str(percona)
    assert server.flavour.name == "percona" and server.paths["plugin-dir"].endswith("/usr/lib/mysql/plugin")
    assert variant.server_command_here() == server.command  # option names are checked against those bytes


def test_a_mariadb_inside_a_root_is_not_yet_and_says_so(tmp_path: Path) -> None:
    binary = make_root(tmp_path / "root", "mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64")
    assert "MariaDB 10.11.6 inside a root filesystem" in refusal(campaign(str(binary)))
    assert "not yet" in refusal(campaign(str(binary), backend="host"))


def test_a_kubernetes_variant_runs_the_binary_in_an_image_of_its_root(percona: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The pod's server is the binary at its path inside the root's image, with that root's files in the my.cnf; the
    snapshot is made here by the same bytes; a sysbench Job runs layerbench's MariaDB image (the root need not
    hold sysbench)."""
    from layerbench.backends.kubernetes import manifests, pod
    from layerbench.server.image import image_tag
    from layerbench.server.mysql_image import root_image_tag

    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = percona.parent.parent.parent
    variant = parse_campaign(campaign(str(percona), backend="kubernetes", client="job")).variant("d")
    variant.check_server_here()
    server = rooted_image_server(variant)
    assert server.command == ("/usr/sbin/mysqld",) and server.flavour.name == "percona"
    settings = manifests.server_settings(server)
    assert settings["basedir"] == "/usr" and settings["datadir"] == manifests.DATADIR
    assert pod.local_image_tag(variant) == root_image_tag(root)
    assert manifests.client_image(variant, root_image_tag(root)) == image_tag()
    assert variant.snapshot_server().mysqld == str(percona) and variant.server_command_here() == \
        find_root(str(percona)).command()
    whats = [c.what for c in variant.first_time_costs()]
    assert whats[0].startswith(f"an image of {root}") and any("MariaDB" in w for w in whats[1:]), whats
    assert f"an image of the root filesystem of {percona}" in variant.describe_plan()


def test_a_kubernetes_binary_needs_what_its_pod_runs_and_no_image(percona: Path, tmp_path: Path) -> None:
    bare = make_root(tmp_path / "root", PERCONA)  # sh, mkdir, cp: enough for a pod, not for the snapshot check
    assert "has no find, sort, xargs, sha256sum, which the pod runs" in refusal(campaign(
        str(bare), backend="kubernetes", storage="pvc", snapshot_class="snap"))
    with pytest.raises(BadInput, match="remove mysqld: or image:"):
        parse_campaign(campaign(str(percona), backend="kubernetes", image="mysql:8.4"))
