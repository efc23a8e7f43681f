"""PostgreSQL 15 on the host backend, for real (issue #46's first slice), beside MariaDB in one campaign: this
machine's postgres run as user postgres, a dataset snapshot made by it (initdb, sysbench prepare with the pgsql
driver, a fast shutdown, files hashed), restored for every run and checked by the checksum of a restored copy,
sysbench's oltp_read_write with --db-driver=pgsql logging in with scram-sha-256 over TCP, the generated
postgresql.conf beside each run and the settings the server reports matching it, pg_stat_database's block counters
over the measured window, the fairness section naming both families' durability and memory settings, and nothing
left running or on disk after the campaign, after a signal, nor after a server that refuses to start."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from helpers import folders_postgres_enters, processes_naming, run_for_real
from layerbench.analysis.fairness import fairness_differences
from layerbench.analysis.io import io_rows
from layerbench.analysis.loading import analyze
from layerbench.campaign.models import campaign_as_dict, load_campaign, parse_campaign, smoke_version
from layerbench.errors import RunFailed
from layerbench.run import orchestrator
from layerbench.secrets import generate_password
from layerbench.server.mysql_rootfs import ensure_rootfs
from layerbench.server.postgresql_rootfs import ensure_rootfs as ensure_postgresql_rootfs
from layerbench.server.private import PrivateServer
from layerbench.server.servers import ServerChoice
from layerbench.server.spec import ServerSpec
from layerbench.store import Store

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def folders() -> Iterator[Path]:
    """Work and dataset folders of this module that the server's user can enter (pytest's own are 0700)."""
    with folders_postgres_enters("lb-it-pg-") as base:
        yield base


@pytest.fixture(scope="module")
def campaign(folders: Path) -> dict:
    """examples/database-families.yaml in smoke mode (one run each): MariaDB (the baseline), MySQL 9.7 out of the
    box and with its binary log off, and PostgreSQL 15 (here with a work_mem of its own), each on its own snapshot:
    issue #46's campaign of the three families on the host. MySQL's rootfs is built when missing."""
    ensure_rootfs("9.7")
    ensure_postgresql_rootfs("18")
    out = folders / "out"
    example = smoke_version(load_campaign(EXAMPLES / "database-families.yaml"))
    data = campaign_as_dict(example)
    for variant in data["variants"]:
        if variant["name"].startswith("postgresql"):  # 15 and 18
            variant["server"]["config"] = {"work_mem": "8MB"}
    # each run's restored copy checked by the server that made it
    data["workloads"][0] |= {"duration": 2, "verify": "checksum"}
    data |= {"name": f"it-pg-{os.getpid()}", "output": str(out)}
    outcome, rows = run_for_real(data)
    return {"outcome": outcome, "out": out, "runs": rows, "folders": folders}


def test_postgresql_runs_sysbench_on_a_restored_snapshot(campaign: dict) -> None:
    assert len([r for r in campaign["runs"] if r[1] == "ok"]) == 5, [r[4] for r in campaign["runs"]]
    runs = [r for r in campaign["runs"] if r[0] == "postgresql"]
    measured = [json.loads(details) for _v, status, tps, details, _e in runs if status == "ok" and tps > 0]
    assert len(measured) == 1, [r[4] for r in runs]
    for facts in measured:
        backend = facts["environment"]["backend"]
        assert backend["server_flavour"] == "postgresql" and backend["server_version"].startswith("15.")
        assert facts["environment"]["server_variables"]["version"].startswith("15.")
        reset = facts["reset"]
        assert reset["method"] == "snapshot" and reset["restore"]["files"] > 0
        assert reset["checksum_tables"] == 1
        status_counters = facts["io"]["server_status"]
        assert status_counters["pg_blks_hit"] > 0  # the measured window's reads of the benchmark's database
        # a smoke run is shorter than the sampler's full-scan period: its backends, born after the first scan and
        # ended before the last reading, count through the postmaster's reaped-children time
        assert facts["resources"]["cpu_seconds"]["server"] > 0.05, facts["resources"]["cpu_seconds"]
    assert len({json.loads(r[3])["reset"]["snapshot"] for r in campaign["runs"]}) == 4  # one per server
    key = json.loads(runs[0][3])["reset"]["snapshot"]
    meta = json.loads((campaign["folders"] / "datasets" / key / "meta.json").read_text())
    assert meta["server"]["flavour"] == "postgresql" and "PostgreSQL) 15." in meta["inputs"]["server"]
    assert meta["rows"] == {"sbtest1": 1000}



def test_mysql_97_runs_sysbench_and_restores_its_own_snapshot(campaign: dict) -> None:
    """MySQL 9.7 of the cached rootfs on the host (test_mysql_host.py's campaign before this example ran it): its
    own snapshot, checked after each restore, its binary log on out of the box and off in mysql-matched."""
    for name, log_bin in (("mysql", "ON"), ("mysql-matched", "OFF")):
        runs = [r for r in campaign["runs"] if r[0] == name]
        assert len(runs) == 1
        for _variant, status, tps, details, error in runs:
            assert status == "ok" and tps > 0, error
            facts = json.loads(details)
            variables = facts["environment"]["server_variables"]
            assert variables["version"].startswith("9.7.") and variables["log_bin"] == log_bin
            assert facts["environment"]["backend"]["server_flavour"] == "mysql"
            assert facts["reset"]["method"] == "snapshot" and facts["reset"]["restore"]["files"] > 0
            assert facts["reset"]["checksum_tables"] == 1
    key = json.loads(next(r for r in campaign["runs"] if r[0] == "mysql")[3])["reset"]["snapshot"]
    meta = json.loads((campaign["folders"] / "datasets" / key / "meta.json").read_text())
    assert meta["server"]["flavour"] == "mysql" and "9.7.4" in meta["inputs"]["server"]
    with Store(campaign["out"] / "layerbench.db") as store:
        analysis = analyze(store, campaign["outcome"].campaign_id)
    texts = [d.text(analysis.baseline) for d in analysis.differences if d.variant == "mysql"]
    assert any("binary log (log_bin), a flavour default: ON vs OFF" in t for t in texts), texts
    assert any("server flavour and version: mysql 9.7.4" in t for t in texts)
    assert len(texts) < 15  # the flavours' defaults, not every variable of two servers
    matched = [d.what for d in analysis.differences if d.variant == "mysql-matched"]
    assert not [w for w in matched if w.startswith("binary log (")], matched  # matched: no binary log either side


def test_postgresql_18_of_the_sid_rootfs_runs_its_own_server_on_its_own_snapshot(campaign: dict) -> None:
    """The newer major of #46: the rootfs's postgres through its loader, its own initdb, snapshot and restores."""
    runs = [r for r in campaign["runs"] if r[0] == "postgresql-18"]
    measured = [json.loads(details) for _v, status, tps, details, _e in runs if status == "ok" and tps > 0]
    assert len(measured) == 1, [r[4] for r in runs]
    for facts in measured:
        assert facts["environment"]["backend"]["server_version"].startswith("18.")
        assert facts["environment"]["server_variables"]["version"].startswith("18.")
        assert facts["reset"]["method"] == "snapshot" and facts["reset"]["checksum_tables"] == 1
        assert facts["io"]["server_status"]["pg_blks_hit"] > 0
    key = measured[0]["reset"]["snapshot"]
    meta = json.loads((campaign["folders"] / "datasets" / key / "meta.json").read_text())
    assert "PostgreSQL) 18." in meta["inputs"]["server"] and meta["rows"] == {"sbtest1": 1000}
    # docs/servers.md: 18 against 15 out of the box, the settings that differ (work_mem is the campaign's, on both)
    with Store(campaign["out"] / "layerbench.db") as store:
        analysis = analyze(store, campaign["outcome"].campaign_id)
    found = {d.what: (d.baseline_value, d.variant_value)
             for d in fairness_differences("postgresql", analysis.environments, {}) if d.variant == "postgresql-18"}
    assert found["server variable data_checksums"] == ("off", "on"), found  # 18's initdb turns page checksums on
    assert found["server variable effective_io_concurrency"] == ("1", "16"), found
    assert any(what.startswith("server variables that only one of the two servers has (") for what in found), found


def test_the_generated_postgresql_conf_is_what_the_server_ran_with(campaign: dict) -> None:
    for _variant, _status, _tps, details, _error in [r for r in campaign["runs"] if r[0].startswith("postgresql")]:
        variables = json.loads(details)["environment"]["server_variables"]
        assert variables["work_mem"] == str(8 * 1024)  # in kB
        assert variables["max_connections"] == "1000"  # layerbench's default, as for MariaDB and MySQL
        assert variables["password_encryption"] == "scram-sha-256"
    confs = sorted(campaign["out"].glob("*/runs/*/postgresql.conf"))  # each run's server (its verify/ has its own)
    assert len(confs) == 2  # PostgreSQL 15's and 18's
    for conf in confs:
        lines = conf.read_text().splitlines()
        assert "work_mem = '8MB'" in lines and "max_connections = 1000" in lines
        assert "listen_addresses = '127.0.0.1'" in lines


def test_fairness_names_durability_and_memory_of_the_three_families_and_io_reads_postgresql(campaign: dict) -> None:
    """MariaDB against MySQL and PostgreSQL: the fairness section names the flavours and, with each server's own values,
    what decides durability and memory on each side; the I/O table's hit ratio is each server's own."""
    with Store(campaign["out"] / "layerbench.db") as store:
        analysis = analyze(store, campaign["outcome"].campaign_id)
    found = {d.what.split(" (")[0]: (d.baseline_value, d.variant_value) for d in analysis.differences
             if d.variant == "postgresql"}
    assert found["server flavour and version"][0].startswith("mariadb 10.11.")
    assert found["server flavour and version"][1].startswith("postgresql 15.")
    assert found["commit durability"] == ("innodb_flush_log_at_trx_commit=1, sync_binlog=0",
                                          "synchronous_commit=on, fsync=on")
    assert found["torn-page protection"] == ("innodb_doublewrite=ON", "full_page_writes=on")
    assert found["page cache of the server"] == ("innodb_buffer_pool_size=134217728", "shared_buffers=134217728")
    assert found["change log"] == ("log_bin=OFF", "wal_level=replica")
    assert len(found) < 10  # the families' settings, not every variable of two servers
    mysql = {d.what.split(" (")[0]: (d.baseline_value, d.variant_value) for d in analysis.differences
             if d.variant == "mysql"}
    assert mysql["server flavour and version"][1].startswith("mysql 9.7."), mysql
    # MySQL 9.7 turns its binary log on by default and syncs it per commit; MariaDB 10.11 does neither (within the
    # MySQL family the fairness section names each variable; across families, the family's setting for the same job)
    assert mysql["binary log"] == ("OFF", "ON") and mysql["binary log sync"] == ("0", "1"), mysql
    rows = io_rows(analysis)  # 1 x 1,000 rows sit in each server's cache
    assert {r.variant for r in rows} == {"mariadb", "mysql", "mysql-matched", "postgresql", "postgresql-18"}
    assert all(r.hit_ratio is not None and r.hit_ratio > 0.9 for r in rows)


def test_no_password_is_written_and_nothing_is_left(campaign: dict) -> None:
    out, folders = campaign["out"], campaign["folders"]
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".log", ".json", ".conf", ".txt"):
            text = path.read_text(errors="replace")
            assert "pgsql-password=" not in text and "PASSWORD '" not in text, path
    assert processes_naming(str(folders)) == []
    datadirs = folders / "work" / "work" / "datadirs"
    assert not any(datadirs.glob(f"lb{campaign['outcome'].campaign_id}-*"))


def test_a_server_that_refuses_its_settings_fails_in_one_line_and_leaves_nothing(folders: Path) -> None:
    private = Path(tempfile.mkdtemp(prefix="lb-it-pg-private-"))
    run_dir = folders / "refused"
    run_dir.mkdir()
    server = PrivateServer(ServerChoice("refused", "postgresql", "15"))
    spec = ServerSpec("it-pg-refused", "it-pg-refused", run_dir, private, folders / "work-refused",
                      config={"shared_buffers": "lots"}, password=generate_password())
    try:
        with pytest.raises(RunFailed, match=r"^server exited during start-up: .*shared_buffers") as failed:
            server.up(spec)
        assert "\n" not in str(failed.value)
        socket_dir = server.socket_dir
    finally:
        server.down()
        shutil.rmtree(private, ignore_errors=True)
    assert processes_naming(str(folders / "work-refused")) == []
    assert not (folders / "work-refused" / "datadirs" / "it-pg-refused").exists()
    assert socket_dir is not None and not socket_dir.exists()


def postgres_of(folder: Path) -> list[str]:
    return [cmd for cmd in processes_naming(str(folder)) if "postgres" in cmd and "layerbench" not in cmd]


@pytest.mark.parametrize(("moment", "sig"), [(".build-", signal.SIGINT), ("/work/datadirs/", signal.SIGTERM)])
def test_a_signal_while_postgresql_runs_leaves_no_server_and_no_folder(moment: str, sig: int) -> None:
    """`layerbench run` signalled the moment its PostgreSQL is seen: the dataset build's server (SIGINT), then,
    in a dataset folder whose snapshot exists by then, a run's server (SIGTERM)."""
    base = Path(tempfile.mkdtemp(prefix="lb-it-pg-signal-", dir="/tmp"))
    base.chmod(0o711)
    try:
        env = {**os.environ, "LAYERBENCH_WORK_DIR": str(base / "work"), "LAYERBENCH_DATASET_DIR": str(base / "ds")}
        campaign = base / "campaign.yaml"
        campaign.write_text(yaml.safe_dump({
            "name": "it-pg-signal", "baseline": "pg", "output": str(base / "out"), "estimates_only": True,
            "variants": [{"name": "pg", "backend": "host", "server": {"flavour": "postgresql"}}],
            "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 3, "warmup": 0},
            "repetitions": 2}))
        cli = [sys.executable, "-m", "layerbench", "run", str(campaign)]
        if moment != ".build-":  # the snapshot first, so the signal lands on a run's server
            with Store(base / "first.db") as store, pytest.MonkeyPatch.context() as patch:
                patch.setenv("LAYERBENCH_WORK_DIR", env["LAYERBENCH_WORK_DIR"])
                patch.setenv("LAYERBENCH_DATASET_DIR", env["LAYERBENCH_DATASET_DIR"])
                data = yaml.safe_load(campaign.read_text()) | {"repetitions": 1, "output": str(base / "first")}
                orchestrator.run_campaign(parse_campaign(data), store, source_path=None)
        proc = subprocess.Popen(cli, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while not [c for c in postgres_of(base) if moment in c] and proc.poll() is None:
                assert time.monotonic() < deadline, "no PostgreSQL server seen"
                time.sleep(0.05)
            proc.send_signal(sig)
            _out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode != 0 and "Traceback" not in err, err
        assert postgres_of(base) == []
        assert not list((base / "work").glob("work/datadirs/*"))
        assert not list((base / "ds").glob(".build-*"))  # a build of under 64 MiB of tables is not kept to resume
    finally:
        shutil.rmtree(base, ignore_errors=True)
