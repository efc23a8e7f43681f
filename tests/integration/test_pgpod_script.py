"""The PostgreSQL pod's script without a cluster (backends/kubernetes/pgpod.py), for real: this machine's postgresql-15
started by the very script a seed's server container runs, as PID 1 of its own PID, mount and network namespaces
(`unshare`: what a container is made of; its /tmp, /run and datadir are tmpfs of its own), on a datadir whose root
holds an empty lost+found (a fresh ext4 volume's).
Then what the harness does off a node through the exec API, done with `nsenter` into the same namespaces: the
server's SQL by psql as the superuser over the pod's socket (pg_stat_database's counters, pg_settings, values that
need CSV quoting), and the seed's stop (pgpod.stop_command): the account's password removed, SIGTERM to PID 1,
passed on as SIGINT; the script must then end with exit code 0 after PostgreSQL's own "database system is shut down".
About 3 s; needs root, unshare and nsenter (util-linux) and postgresql-15 (scripts/setup installs them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from layerbench.backends.kubernetes import pgpod
from layerbench.measure.io import PG_STATUS_SQL
from layerbench.secrets import Secret
from layerbench.server.spec import ServerSpec

pytestmark = pytest.mark.integration

SETTINGS_SQL = "SELECT name, setting FROM pg_settings UNION ALL SELECT 'version', current_setting('server_version')"


@pytest.fixture
def pod() -> Iterator[tuple[subprocess.Popen[bytes], list[str], Path]]:
    """The seed server's script as PID 1 of new namespaces; its datadir and socket folders are tmpfs there (the
    container's paths, none of this machine's); yields (the process, the nsenter prefix, its log)."""
    assert os.geteuid() == 0, "run as root: the script switches to user postgres with setpriv"
    tmp_path = Path(tempfile.mkdtemp(prefix="lb-pgpod-", dir="/var/tmp"))  # not pytest's (root's only, 0700): the
    tmp_path.chmod(0o755)  # server (user postgres) reads its conf here; and not in /tmp, a tmpfs of the pod's own
    spec = ServerSpec("c", "seed-x", tmp_path / "run", tmp_path / "private", tmp_path,
                      config={"shared_buffers": "256MB", "synchronous_commit": False}, password=Secret("pw'x"),
                      user="sbtest")
    conf, secret = pgpod.server_files(spec, str(tmp_path / "conf"))
    for folder, files in (("conf", conf), ("secret", secret)):
        (tmp_path / folder).mkdir(mode=0o755)
        for name, text in files.items():
            (tmp_path / folder / name).write_text(text, encoding="utf-8")
            (tmp_path / folder / name).chmod(0o644)
    script = pgpod.server_command(False, False, "/snapshot", str(tmp_path / "conf"), str(tmp_path / "secret"))[-1]
    setup = ("mount -t tmpfs tmpfs /var/lib/postgresql && mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /tmp && "
             f"mkdir -p {pgpod.DATADIR}/lost+found && ip link set lo up && exec sh -c \"$0\"")
    log = tmp_path / "pod.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["unshare", "--mount", "--pid", "--fork", "--net", "--mount-proc", "--propagation",
                                 "private", "sh", "-c", setup, script], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline, child = time.monotonic() + 30, ""
        while not child and time.monotonic() < deadline:
            child = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.strip()
            time.sleep(0.05)
        assert child, log.read_text()
        yield proc, ["nsenter", "-t", child.split()[0], "-m", "-p", "-n", "--"], log
    finally:
        if proc.poll() is None:
            proc.kill()  # unshare --fork: its child, PID 1 of the namespace, takes every process there with it
            proc.wait(timeout=30)
        shutil.rmtree(tmp_path, ignore_errors=True)


def sql(ns: list[str], database: str, text: str) -> list[tuple[str, ...]]:
    done = subprocess.run([*ns, *pgpod.sql_command(database, text)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return pgpod.parse_csv_rows(done.stdout)


def test_the_seed_servers_script_inits_answers_in_the_pod_and_stops_cleanly(pod) -> None:
    proc, ns, log = pod
    deadline = time.monotonic() + 120
    while subprocess.run([*ns, *pgpod.ready_command()]).returncode != 0:  # the readiness probe, as the kubelet runs it
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.2)
    status = dict(sql(ns, "sbtest", PG_STATUS_SQL))  # the benchmark's database: the account script made it
    assert set(status) == {"pg_blks_read", "pg_blks_hit"} and int(status["pg_blks_hit"]) > 0
    settings = dict(sql(ns, "sbtest", SETTINGS_SQL))
    assert settings["version"].startswith("15.") and settings["synchronous_commit"] == "off"
    assert settings["shared_buffers"] == str(256 * 1024 // 8) and len(settings) > 300
    assert sql(ns, "postgres", "SELECT 'a,b', 'q\"x', E'l1\\nl2'") == [("a,b", 'q"x', "l1\nl2")]
    assert sql(ns, "postgres", "SELECT rolpassword IS NOT NULL FROM pg_authid WHERE rolname = 'sbtest'") == [("t",)]
    stop = subprocess.run([*ns, *pgpod.stop_command("sbtest")], capture_output=True, text=True, timeout=60)
    assert stop.returncode == 0, stop.stderr
    assert proc.wait(timeout=60) == 0, log.read_text()[-2000:]  # the server's own exit status: a clean stop
    said = log.read_text()
    assert "received fast shutdown request" in said and "database system is shut down" in said
