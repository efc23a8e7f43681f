"""The isolated lab of `scripts/lab-hosts up --isolated` (scripts/lab.d/toolkit.sh): two hosts that are separate
machines in all but the kernel. The session's one isolated lab (tests/conftest.py `isolated_lab`, a prefix and
subnet of its own, so the shared lab of the other tests is untouched), which test_reach, test_busy_hosts and
test_clean_anywhere run campaigns on; each test here checks one thing the lab promises (docs/topology.md, "The
isolated lab")."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
LAB_SCRIPT = ROOT / "scripts" / "lab-hosts"
PREFIX = os.environ.get("LAYERBENCH_TEST_LAB_PREFIX", "lbdevi")  # as tests/conftest.py's isolated_lab
NET = os.environ.get("LAYERBENCH_TEST_LAB_NET", "10.231.79")
LAB_DIR = Path(f"/run/{PREFIX}")
DB, APP, HARNESS = f"{NET}.2", f"{NET}.3", f"{NET}.1"
FW_PORT = 41599  # opened by this firewall test only (the other modules open 41500-41519, 41520-41539, 41580-41589)


@pytest.fixture
def lab(isolated_lab: dict) -> dict:
    assert isolated_lab["dir"] == LAB_DIR
    return isolated_lab


def ssh(address: str, command: str, known_hosts: Path = LAB_DIR / "known_hosts",
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o",
            f"UserKnownHostsFile={known_hosts}", "-o", "ConnectTimeout=10", "-i", str(LAB_DIR / "id_ed25519"),
            f"root@{address}", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def out(address: str, command: str) -> str:
    done = ssh(address, command)
    assert done.returncode == 0, f"{command} on {address}: {done.stderr}"
    return done.stdout


def major(version_line: str) -> str:
    found = re.search(r"Ver (\d+)\.(\d+)\.\d+-MariaDB", version_line)
    assert found, version_line
    return found.group(1)


def cpu_ns(host: str) -> int:
    return int(Path(f"/sys/fs/cgroup/cpuacct/{PREFIX}-{host}/cpuacct.usage").read_text())


def test_db_runs_a_mariadb_of_another_major_than_the_harness(lab: dict) -> None:
    theirs = out(DB, "mariadbd --version")
    ours = subprocess.run(["mariadbd", "--version"], capture_output=True, text=True, timeout=30, check=True).stdout
    assert major(theirs) != major(ours), (theirs, ours)


def test_ssh_checks_the_hosts_keys(lab: dict, tmp_path: Path) -> None:
    assert out(DB, "cat /etc/debian_version") != "" and out(APP, "sysbench --version").startswith("sysbench")
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    refused = ssh(DB, "true", known_hosts=empty)
    assert refused.returncode != 0 and "Host key verification failed" in refused.stderr
    assert lab["hosts"]["db"]["known_hosts"] == str(LAB_DIR / "known_hosts")


def connects(address: str, port: int) -> bytes | None:
    """The server's first bytes, or None when the connection is refused or dropped."""
    try:
        with socket.create_connection((address, port), timeout=3) as conn:
            conn.settimeout(10)
            return conn.recv(200)
    except OSError:
        return None


def test_the_firewall_admits_only_ssh_until_a_port_is_opened(lab: dict) -> None:
    out(DB, "mariadb-install-db --user=root --datadir=/var/tmp/lbdevi-fw >/dev/null && "
            "(setsid mariadbd --user=root --datadir=/var/tmp/lbdevi-fw --port=41599 --bind-address=0.0.0.0 "
            "--socket=/run/lbdevi-fw.sock --pid-file=/run/lbdevi-fw.pid >/var/tmp/lbdevi-fw.log 2>&1 < /dev/null &)")
    try:
        for _ in range(120):
            if f":{FW_PORT} " in out(DB, "ss -Htln"):
                break
            time.sleep(0.5)
        assert f":{FW_PORT} " in out(DB, "ss -Htln")
        assert connects(DB, FW_PORT) is None  # listening, but not admitted
        subprocess.run([str(LAB_SCRIPT), "open", str(FW_PORT)], env=lab["env"], check=True, timeout=60)
        greeting = connects(DB, FW_PORT)
        assert greeting is not None and b"MariaDB" in greeting, greeting  # the db's own server answers
        assert out(DB, "true") == ""  # SSH still passes
    finally:
        ssh(DB, "kill $(cat /run/lbdevi-fw.pid) 2>/dev/null; sleep 1; rm -rf /var/tmp/lbdevi-fw /var/tmp/lbdevi-fw.log")


def test_a_load_on_db_shows_in_db_cgroup_and_not_in_app(lab: dict) -> None:
    db_before, app_before = cpu_ns("db"), cpu_ns("app")
    out(DB, "stress-ng --cpu 1 --cpu-method int64 --cpu-ops 3000 --quiet")
    db_used, app_used = cpu_ns("db") - db_before, cpu_ns("app") - app_before
    assert db_used > 500_000_000, db_used  # stress-ng's work, whatever the machine's load
    assert app_used < db_used / 10, (db_used, app_used)


def test_db_sees_its_own_processes_only(lab: dict) -> None:
    listed = out(DB, "ps -eo pid=,args=").splitlines()
    init = [line for line in listed if line.split()[0] == "1"]
    assert init and "/lbhost/init" in init[0], listed
    assert not any("pytest" in line or "kubelet" in line for line in listed), listed
    assert len(listed) < 40, listed
    assert str(os.getpid()) not in [line.split()[0] for line in listed if "pytest" in line]


def test_db_docker_daemon_is_its_own(lab: dict) -> None:
    theirs = ""
    for _ in range(60):
        done = ssh(DB, "docker -H unix:///run/docker.sock info --format '{{.ID}} {{.DockerRootDir}}'")
        if done.returncode == 0:
            theirs = done.stdout.strip()
            break
        time.sleep(1)
    assert theirs.endswith(" /var/lib/docker"), theirs
    ours = subprocess.run(["docker", "info", "--format", "{{.ID}}"], capture_output=True, text=True, timeout=60)
    assert ours.returncode == 0 and ours.stdout.strip() != theirs.split()[0]
    assert not (LAB_DIR / "db" / "root" / "run" / "docker.sock").exists()  # its /run is the host's own
    # the inventory's alias (the Include line lab-hosts wrote) reaches that daemon as the Docker SDK does
    alias = lab["hosts"]["dbalias"]["ssh"]
    via = subprocess.run(["ssh", alias, "docker", "info", "--format", "{{.ID}}"],
                         capture_output=True, text=True, timeout=120)
    assert via.returncode == 0 and via.stdout.strip() == theirs.split()[0], via.stderr
