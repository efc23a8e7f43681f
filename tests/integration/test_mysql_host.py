"""MySQL 9.7 on the host backend, for real: the cached rootfs's mysqld started through its own loader, sysbench
1.0.20 (libmariadb) logging in to its caching_sha2_password account over TCP, the dataset snapshot made by
MySQL itself and restored for the second run, and a MariaDB variant beside it in the same campaign whose report
names the binary-log difference. The rootfs is built here when missing (about 80 s, cached after)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from layerbench.analysis.loading import analyze
from layerbench.campaign.models import parse_campaign
from layerbench.run import orchestrator
from layerbench.server.mysql_rootfs import ensure_rootfs
from layerbench.store import Store

pytestmark = pytest.mark.integration


def our_processes(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd:
                found.append(cmd)
    return found


@pytest.fixture(scope="module")
def two_flavours(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One campaign: MariaDB (the baseline) and MySQL 9.7, twice each, on a snapshot of 1 x 1,000 rows whose
restored copy is checked by CHECKSUM TABLE before each run."""
    ensure_rootfs("9.7")
    out = tmp_path_factory.mktemp("mysql-host")
    data = {
        "name": f"it-mysql-{out.name[-6:]}", "baseline": "mariadb",
        "variants": [
            {"name": "mariadb", "backend": "host", "cpus": "0", "client_cpus": "1"},
            {"name": "mysql", "extends": "mariadb", "server": {"flavour": "mysql", "version": "9.7"}},
        ],
        "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 2, "warmup": 0,
                     "verify": "checksum"},  # each run's restored copy checked by the server that made it
        "repetitions": 2, "estimates_only": True, "output": str(out),
    }
    db = out / "layerbench.db"
    with Store(db) as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store, source_path=None)
    rows = sqlite3.connect(db).execute("SELECT variant, status, tps, details, error FROM runs").fetchall()
    return {"outcome": outcome, "db": db, "out": out, "runs": rows}


def test_mysql_97_runs_sysbench_and_restores_its_own_snapshot(two_flavours: dict) -> None:
    mysql = [r for r in two_flavours["runs"] if r[0] == "mysql"]
    assert len(mysql) == 2
    for _variant, status, tps, details, error in mysql:
        assert status == "ok" and tps > 0, error
        facts = json.loads(details)
        variables = facts["environment"]["server_variables"]
        assert variables["version"].startswith("9.7.") and variables["log_bin"] == "ON"
        assert facts["environment"]["backend"]["server_flavour"] == "mysql"
        assert facts["reset"]["method"] == "snapshot" and facts["reset"]["restore"]["files"] > 0
        assert facts["reset"]["checksum_tables"] == 1
    keys = {json.loads(r[3])["reset"]["snapshot"] for r in two_flavours["runs"]}
    assert len(keys) == 2  # one snapshot per server: MySQL's datadir is not MariaDB's
    meta = json.loads((Path(os.environ["LAYERBENCH_DATASET_DIR"]) / json.loads(mysql[0][3])["reset"]["snapshot"]
                       / "meta.json").read_text())
    assert meta["server"]["flavour"] == "mysql" and "9.7.4" in meta["inputs"]["server"]
    assert our_processes(str(two_flavours["out"])) == []
    datadirs = Path(os.environ["LAYERBENCH_WORK_DIR"]) / "work" / "datadirs"
    assert not any(datadirs.glob(f"lb{two_flavours['outcome'].campaign_id}-*"))


def test_the_fairness_section_names_the_binary_log_difference(two_flavours: dict) -> None:
    assert (two_flavours["outcome"].ok, two_flavours["outcome"].failed) == (4, 0)
    with Store(two_flavours["db"]) as store:
        analysis = analyze(store, two_flavours["outcome"].campaign_id)
    texts = [d.text(analysis.baseline) for d in analysis.differences]
    assert any("binary log (log_bin), a flavour default: ON vs OFF" in t for t in texts), texts
    assert any("server flavour and version: mysql 9.7.4" in t for t in texts)
    assert len(texts) < 15  # the flavours' defaults, not every variable of two servers


def test_option_names_are_checked_against_the_rootfs_mysqld(tmp_path: Path) -> None:
    """A MariaDB-only option on a MySQL variant is refused by validate, naming mysqld; MySQL's own are accepted."""
    from layerbench.errors import BadInput
    from layerbench.run.preflight import check_option_names

    ensure_rootfs("9.7")
    data = {"name": "opts", "baseline": "m", "workloads": [{"name": "w", "tables": 1, "table_size": 10}],
            "variants": [{"name": "m", "backend": "host", "server": {"flavour": "mysql", "version": "9.7", "config": {
                "skip-log-bin": True, "innodb_redo_log_capacity": "1G"}}}]}
    check_option_names(parse_campaign(data).variant("m"))
    data["variants"][0]["server"]["config"] = {"aria_pagecache_buffer_size": "1M"}
    with pytest.raises(BadInput, match=r"server \(mysqld\) has no such option; check its spelling \(mysqld --verbose"):
        check_option_names(parse_campaign(data).variant("m"))


def test_a_build_stopped_by_a_signal_leaves_nothing_half_built(tmp_path: Path) -> None:
    """SIGTERM during a rebuild from the kept packages (offline): no rootfs, no build folder, no process left."""
    import shutil
    import signal
    import subprocess
    import sys
    import time

    from layerbench.server.mysql_rootfs import RELEASES, debs_folder

    ensure_rootfs("9.7")
    kept = debs_folder(RELEASES["9.7"])
    cache = tmp_path / "cache"
    shutil.copytree(kept, cache / "servers" / kept.name)
    env = {**os.environ, "LAYERBENCH_CACHE_DIR": str(cache)}
    build = subprocess.Popen([sys.executable, "-m", "layerbench", "server", "build", "mysql", "9.7"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while not any((cache / "servers").glob(".build-*/rootfs/usr")) and time.monotonic() < deadline:
        time.sleep(0.2)  # debootstrap is unpacking into the build folder
    build.send_signal(signal.SIGTERM)
    output, _ = build.communicate(timeout=120)
    assert build.returncode != 0, output
    assert sorted(p.name for p in (cache / "servers").iterdir()) == [".locks", kept.name], output
    assert our_processes(str(cache)) == []
