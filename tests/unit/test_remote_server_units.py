"""The pure parts of a server on an ssh: host: the shipped snapshot's hashes against its manifest, the CPU
readings of that host, and the cleanup script (run here with sh on a folder of the test's own)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.errors import RunFailed
from layerbench.hosts.inventory import Host
from layerbench.hosts.remote import remove_remote_folder
from layerbench.measure.remote_cpu import (
    IO_SCRIPT,
    SCRIPT,
    component_io,
    component_seconds,
    parse_io_lines,
    parse_reading,
)
from layerbench.server.manifest import FileEntry, Manifest, build_manifest
from layerbench.server.remote_files import (
    HASH_MARK,
    hash_problems,
    hash_script,
    host_lock,
    manifest_digest,
    parse_hashes,
)

H1, H2 = "0" * 31 + "1", "ab" * 16


def manifest(**files: str) -> Manifest:
    return Manifest({name.replace("__", "/"): FileEntry(10, digest, "0" * 16, 0, 0) for name, digest in files.items()})


def test_hashes_are_read_from_marked_lines_only() -> None:
    text = (f"{HASH_MARK} {H1}  ./sbtest/sbtest1.ibd\nnoise {H2}  ./x\n{HASH_MARK} {H2}  ./ibdata1\n"
            f"{HASH_MARK} nothex{'0' * 26}  ./y\n{HASH_MARK} {H1} ./one-space\n")
    assert parse_hashes(text) == {"sbtest/sbtest1.ibd": H1, "ibdata1": H2}


def test_each_difference_from_the_manifest_is_named() -> None:
    expected = manifest(sbtest__sbtest1_ibd=H1, ibdata1=H2, gone=H1)
    found = {"sbtest/sbtest1_ibd": H1, "ibdata1": H1, "stray": H2, "ib_buffer_pool": H2}
    problems = hash_problems(expected, found, "host db")
    assert problems == ["gone: missing on host db", "ibdata1: its bytes on host db differ from the snapshot's",
                        "stray: on host db, not in the snapshot's manifest"]
    assert hash_problems(expected, {"sbtest/sbtest1_ibd": H1, "ibdata1": H2, "gone": H1}, "h") == []


@given(st.text(max_size=400))
def test_any_output_parses_without_a_crash(text: str) -> None:
    assert all(len(v) == 32 for v in parse_hashes(text).values())
    reading = parse_reading(text)
    assert reading.tick > 0
    component_seconds(reading, parse_reading(text[::-1]), {"server": [1, 2]})


def test_the_hash_script_hashes_like_the_manifest(tmp_path: Path) -> None:
    datadir = tmp_path / "data dir"
    (datadir / "sbtest").mkdir(parents=True)
    (datadir / "sbtest" / "t.ibd").write_bytes(b"x" * 40000)
    (datadir / "ibdata1").write_bytes(b"y" * 123)
    (datadir / "ib_buffer_pool").write_text("not part of a snapshot")
    done = subprocess.run(["sh", "-c", hash_script(str(datadir))], capture_output=True, text=True, check=True)
    built = build_manifest(datadir)
    assert hash_problems(built, parse_hashes(done.stdout), "here") == []
    assert manifest_digest(built) == manifest_digest(build_manifest(datadir))


def test_cpu_between_two_readings_per_component() -> None:
    first = parse_reading("TICK 100\nUPTIME 50.00\ncpu  100 0 100 1000 0 0 0 0 0 0\n"
                          "P 10 (mariadbd) S 1 10 10 0 -1 0 0 0 0 0 300 100 0 0 20 0 1 0 200 0 0\n"
                          "P 77 (other) S 1 77 77 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 100 0 0\n")
    last = parse_reading("TICK 100\nUPTIME 60.00\ncpu  400 0 400 1500 0 0 0 0 0 0\n"
                         "P 10 (mariadbd) S 1 10 10 0 -1 0 0 0 0 0 500 200 0 0 20 0 1 0 200 0 0\n"
                         "P 11 (child) S 10 10 10 0 -1 0 0 0 0 0 30 20 0 0 20 0 1 0 5500 0 0\n"
                         "P 77 (other) S 1 77 77 0 -1 0 0 0 0 0 50 5 0 0 20 0 1 0 100 0 0\n")
    cpu = component_seconds(first, last, {"server": [10]})
    assert cpu == {"server": 3.5, "other": 2.5, "idle": 5.0}  # 300 ticks + a child born inside (50)


def test_the_cpu_of_children_that_ended_inside_the_window_counts_through_their_parent() -> None:
    """The postmaster (10) reaped 130 ticks of children in the window: backend 12's whole 90 (20 of them before the
    window, subtracted) and 40 of one born and ended inside it."""
    first = parse_reading("TICK 100\nUPTIME 50.00\ncpu  100 0 100 1000 0 0 0 0 0 0\n"
                          "P 10 (postgres) S 1 10 10 0 -1 0 0 0 0 0 300 100 0 0 20 0 1 0 200 0 0\n"
                          "P 12 (postgres) S 10 10 10 0 -1 0 0 0 0 0 15 5 0 0 20 0 1 0 4000 0 0\n")
    last = parse_reading("TICK 100\nUPTIME 60.00\ncpu  400 0 400 1500 0 0 0 0 0 0\n"
                         "P 10 (postgres) S 1 10 10 0 -1 0 0 0 0 0 310 110 60 70 20 0 1 0 200 0 0\n")
    cpu = component_seconds(first, last, {"server": [10]})
    assert cpu["server"] == pytest.approx(0.2 + 1.1)  # its own 20 ticks, the ended ones' 130 - 20 before


def test_the_cpu_script_reads_this_machine() -> None:
    done = subprocess.run(["sh", "-c", SCRIPT], capture_output=True, text=True, check=True)
    reading = parse_reading(done.stdout)
    assert reading.machine[0] > 0 and len(reading.procs) > 1 and reading.uptime_ticks > 0


def test_cleanup_stops_what_runs_from_the_folder_and_removes_it(tmp_path: Path) -> None:
    folder = tmp_path / "lbtest-run"
    folder.mkdir()
    (folder / "my.cnf").write_text("")
    ours = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", f"--defaults-file={folder}/my.cnf"])
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (folder / "server.pid").write_text(f"{ours.pid}\n")
        (folder / "other.pid").write_text(f"{stranger.pid}\n")  # not started from the folder: never killed
        (folder / "junk.pid").write_text("1; rm -rf /\n")
        assert remove_remote_folder(Host("local"), str(folder))
        assert ours.wait(timeout=20) is not None and not folder.exists()
        time.sleep(0.2)
        assert stranger.poll() is None
    finally:
        ours.kill()
        stranger.kill()


def test_a_server_host_with_another_server_build_is_a_fairness_difference() -> None:
    from layerbench.analysis.fairness import fairness_differences
    from layerbench.records.run import Environment

    def env(server: dict) -> Environment:
        return Environment.from_json({"client_host": {"kernel": "6.1"}, "server_host": server})

    base = {"kernel": "6.1", "cpus": "2", "server_version": "mariadbd Ver 10.11.19"}
    found = fairness_differences("a", {"a": env(base), "b": env({**base, "server_version": "mariadbd Ver 11.4"}),
                                       "c": env(base), "d": env({})}, {})
    assert [(d.variant, d.what) for d in found] == [("b", "server host fact server_version")]
    assert Environment.from_json({}).server_host == {}  # a run stored before server hosts were recorded


def test_a_remote_containers_components_are_read_from_its_hosts_processes() -> None:
    from layerbench.backends.docker.remote import parse_components

    text = ("SHIM 900 /usr/bin/containerd-shim-runc-v2 -namespace moby -id abc\n"
            "PROXY 901 /usr/bin/docker-proxy -proto tcp -host-ip 10.0.0.5 -host-port 31000 -container-port 3306\n"
            "PROXY 902 /usr/bin/docker-proxy -proto tcp -host-ip 10.0.0.5 -host-port 310001 -container-port 3306\n"
            "PROXY x /usr/bin/docker-proxy -host-port 31000\n")
    assert parse_components(text, 42, 31000) == {"server": [42], "containerd-shim": [900], "docker-proxy": [901]}
    assert parse_components("SHIM 7 /sbin/init\n", 42, None) == {"server": [42]}  # not a shim: not counted


@given(st.text(max_size=300), st.integers(min_value=1, max_value=2**22), st.none() | st.integers(1, 65535))
def test_any_process_listing_parses_without_a_crash(text: str, pid: int, port: int | None) -> None:
    from layerbench.backends.docker.remote import parse_components

    found = parse_components(text, pid, port)
    assert found["server"] == [pid] and all(isinstance(p, int) for pids in found.values() for p in pids)


def test_the_image_is_sent_only_when_the_hosts_daemon_lacks_this_build() -> None:
    from layerbench.backends.docker.remote import needs_image

    assert needs_image("sha256:a", None) and needs_image("sha256:a", "sha256:b")
    assert not needs_image("sha256:a", "sha256:a") and not needs_image(None, None)


def test_boot_file_sums_are_read_from_sha256sum_lines_only() -> None:
    from layerbench.backends.vm.remote import parse_sums

    good = "a" * 64
    text = f"{good}  root.img\n{good}  ./dir/initrd.gz\n{'g' * 64}  kernel\nnoise\n{good} one-space\n"
    assert parse_sums(text) == {"root.img": good, "initrd.gz": good}


@given(st.text(max_size=300))
def test_any_sha256sum_output_parses_without_a_crash(text: str) -> None:
    from layerbench.backends.vm.remote import parse_sums

    assert all(len(v) == 64 for v in parse_sums(text).values())


def test_the_io_script_reads_this_machine_s_processes_and_keeps_a_component_s_tree() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; open('/dev/null','w').write('x'*4096); "
                              "time.sleep(30)"])
    try:
        time.sleep(0.5)
        out = subprocess.run(["sh", "-c", IO_SCRIPT], capture_output=True, text=True, check=True).stdout
        uptime, procs = component_io(out, {"server": [os.getpid()]}, "db1")
        assert uptime > 0 and child.pid in procs and os.getpid() in procs
        assert {name for name, _, _ in procs.values()} == {"server@db1"}
        assert procs[os.getpid()][2]["rchar"] > 0
    finally:
        child.kill()
        child.wait()


def test_io_lines_are_parsed_and_malformed_ones_skipped() -> None:
    full = "rchar:5 wchar:6 syscr:1 syscw:2 read_bytes:0 write_bytes:4096 cancelled_write_bytes:0"
    text = f"IO 12 {full}\nIO x {full}\nIO 13\nIO 14 rchar:abc\nP junk\nIO 15 wchar:7\nIO 16 {full} extra:1"
    parsed = parse_io_lines(text)
    assert set(parsed) == {12, 16} and parsed[12]["write_bytes"] == 4096 and parsed[12]["rchar"] == 5


@given(st.text(max_size=500))
def test_any_io_script_output_parses_without_raising(text: str) -> None:
    assert isinstance(parse_io_lines(text), dict)
    uptime, procs = component_io(text, {"server": [1, 2]}, "h")
    assert isinstance(uptime, int) and isinstance(procs, dict)


def test_the_host_lock_is_taken_when_ssh_speaks_first_and_a_failure_names_its_cause(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock's script run here with sh (a local host runs the same text); a Banner or an ssh warning printed
    before the lock's word does not count as a failure, and a lock that cannot be taken says why."""
    host = Host("db1")
    plain = host.command
    monkeypatch.setattr(host, "command", lambda argv: ["sh", "-c", 'echo "Authorized use only"; exec "$@"', "sh",
                                                       *plain(argv)])
    lock = tmp_path / "snap.lock"
    with host_lock(host, str(lock), "dataset d"):
        held = subprocess.run(["flock", "-n", str(lock), "true"], check=False)
        assert held.returncode != 0  # taken by the session
    assert subprocess.run(["flock", "-n", str(lock), "true"], check=False).returncode == 0  # and let go
    (tmp_path / "file").write_text("")
    with pytest.raises(RunFailed, match=r"hosts.db1: cannot lock dataset d there: .*"), \
            host_lock(host, str(tmp_path / "file" / "x.lock"), "dataset d"):
        pass


def test_a_process_started_detached_on_a_host_is_found_alive_and_stopped_by_its_folders_cleanup(
        tmp_path: Path) -> None:
    import contextlib
    import shlex
    import signal

    from layerbench.hosts.remote import detached_script, process_alive, start_detached

    folder, host = tmp_path / "lbtest-detached", Host("local")
    folder.mkdir()
    command = shlex.join([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)",
                          f"{folder}/marker"])
    pid = start_detached(host, detached_script(str(folder), command, "out.log", "tool.pid"), name="start",
                         failed="hosts.local: the tool did not start")
    try:
        assert (folder / "tool.pid").read_text().strip() == str(pid) and process_alive(host, pid)
        assert not process_alive(host, None)
        assert remove_remote_folder(host, str(folder)) and not folder.exists()
        deadline = time.monotonic() + 20
        while process_alive(host, pid) and not zombie(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not process_alive(host, pid) or zombie(pid)  # stopped (reaped, or waiting for its new parent to)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with pytest.raises(RunFailed, match=r"^hosts\.local: the tool did not start: no output$"):
        start_detached(host, "true", name="start", failed="hosts.local: the tool did not start")


def zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def test_a_stopped_prepare_server_s_datadir_is_published_without_the_files_no_snapshot_carries(tmp_path: Path) -> None:
    """backends/host/dataset.py: the datadir moves into the snapshot's folder (an older, unfinished one there is
    replaced), less the buffer-pool dump and pid file; its tables' bytes are counted from the host's manifest."""
    from layerbench.backends.host.dataset import data_bytes, publish_script
    from layerbench.hosts.procs import capture

    datadir, target = tmp_path / "run" / "datadir", tmp_path / "datasets" / "k"
    (datadir / "sbtest").mkdir(parents=True)
    (datadir / "sbtest" / "sbtest1.ibd").write_bytes(b"x" * 5000)
    (datadir / "sbtest" / "db.opt").write_bytes(b"y" * 10)
    (datadir / "ibdata1").write_bytes(b"z" * 300)
    (datadir / "ib_buffer_pool").write_text("dump")
    (target / "leftover").mkdir(parents=True)
    done = capture(["sh", "-c", publish_script(str(datadir), str(target))], timeout=60)
    assert done.returncode == 0, done.stderr
    assert not datadir.exists() and sorted(p.name for p in target.iterdir()) == ["datadir"]
    manifest = build_manifest(target / "datadir")
    assert sorted(manifest.files) == ["ibdata1", "sbtest/db.opt", "sbtest/sbtest1.ibd"]
    assert data_bytes(manifest) == 5000


def test_a_docker_servers_option_names_are_checked_here_only_for_a_server_here() -> None:
    """On an ssh: host RemoteDockerBackend checks them against the mariadbd its image runs (a host's or ours)."""
    from layerbench.backends.docker.variant import DockerVariant

    variant = DockerVariant(name="d", backend="docker", server={"config": {"innodb_buffer_pool_size": "1G"}})
    assert variant.checks_options_here(local=True) and not variant.checks_options_here(local=False)
    assert not DockerVariant(name="i", backend="docker", image="mariadb:11").checks_options_here(local=True)


def test_a_docker_server_runs_the_hosts_own_mariadb_unless_another_version_is_asked_for() -> None:
    """RemoteDockerBackend.release: the host's system's MariaDB builds the image there (the new route) unless the
    variant's server.version is another one; then the image built here is sent by save and load (the old route),
    which must be this machine's version (else one line naming both)."""
    from layerbench.backends.docker.remote import RemoteDockerBackend, check_version_here
    from layerbench.backends.docker.variant import DockerVariant
    from layerbench.errors import BadInput
    from layerbench.hosts.inventory import HostEntry
    from layerbench.server.flavour import detect_flavour

    def backend(server: dict, facts: dict) -> RemoteDockerBackend:
        made = RemoteDockerBackend(DockerVariant(name="d", backend="docker", server_host="db", server=server),
                                   Host("db", HostEntry(ssh="db")))
        made._release = facts
        return made

    host = {"os": "debian 13 trixie", "server": "mariadbd  Ver 11.8.3-MariaDB-0+deb13u1 for debian-linux-gnu"}
    assert backend({}, host).release() == host
    assert backend({"flavour": "mariadb", "version": "11.8"}, host).release() == host
    assert backend({"flavour": "mariadb", "version": "10.11"}, host).release() is None  # sent from here
    assert backend({}, {"os": "debian 13 trixie", "server": ""}).release() is None  # no mariadbd there
    command = DockerVariant(name="d", backend="docker").server_command_here()
    if command is None:
        pytest.skip("no mariadbd on this machine")
    ours = detect_flavour(command, "here").version
    mine = ".".join(ours.split(".")[:2])
    check_version_here(backend({"flavour": "mariadb", "version": mine}, host).variant, "db", host)
    if mine != "11.8":
        with pytest.raises(BadInput) as error:
            check_version_here(backend({"flavour": "mariadb", "version": "10.4"}, host).variant, "db", host)
        assert str(error.value) == (
            f"variants.d.server.version: MariaDB 10.4 is neither host db's (MariaDB 11.8.3) nor this machine's "
            f"(MariaDB {ours}), whose image would be sent there; use the version of one of them")


def test_the_sent_images_own_architecture_is_checked_against_the_hosts_daemon() -> None:
    """Once built, the image's own Architecture (not only this machine's) must be the daemon's."""
    from layerbench.backends.docker.remote import check_shipped_architecture
    from layerbench.errors import BadInput

    check_shipped_architecture("db", "x86_64", "variants.d.server_host", "amd64")
    with pytest.raises(BadInput, match=r"^variants.d.server_host: the image built here .* is built for arm64, but "
                                       r"the Docker daemon of host db \(amd64\) is not; "):
        check_shipped_architecture("db", "x86_64", "variants.d.server_host", "arm64")
