"""PostgreSQL on an ssh: host (issue #46, backends/host/remote_pg.py) on the isolated lab (the session's
`isolated_lab`: db is a trixie host of its own whose package list carries `postgresql`, so its PostgreSQL is 17
while this machine's is 15). The host's own PostgreSQL prepares and keeps the dataset there, runs as db's `postgres`
user with layerbench's postgresql.conf and pg_hba.conf, is restored per run from db's snapshot against db's own
manifest, and serves sysbench's pgsql driver from app and pgbench from this machine through a port range of its own
that the test opens in db's firewall; a server that cannot start leaves nothing there. validate's refusals ask db's
own postgres. Names carry a random tag."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import pytest

from helpers import stored_rows
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.run import orchestrator
from layerbench.run.preflight import preflight
from layerbench.store import Store

pytestmark = pytest.mark.integration
SMALL = {"tables": 1, "table_size": 1000, "threads": 2, "duration": 2, "warmup": 1}
LAB_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lab-hosts"
PORTS = "41620-41639"  # this test's own range on db (test_reach's are 41500-41579)


@pytest.fixture(scope="module")
def pg_hosts(isolated_lab: dict) -> dict:
    subprocess.run([str(LAB_SCRIPT), "open", PORTS], env=isolated_lab["env"], check=True, capture_output=True,
                   timeout=60)
    hosts = isolated_lab["hosts"]
    return {"db": {**hosts["db"], "ports": PORTS}, "app": hosts["app"]}


def campaign(hosts: dict, variants: list[dict], tag: str) -> dict:
    return {"name": f"it-pgssh-{tag}", "baseline": variants[0]["name"], "hosts": hosts, "variants": variants,
            "workload": SMALL, "repetitions": 1, "estimates_only": True, "order": "sequential", "busy": "keep",
            "formats": ["md"]}


def pg(name: str, **fields: object) -> dict:
    return {"name": name, "backend": "host", "server_host": "db", "server": {"flavour": "postgresql"}, **fields}


def refusal(hosts: dict, variant: dict) -> str:
    with pytest.raises(BadInput) as refused:
        preflight(parse_campaign(campaign(hosts, [variant], secrets.token_hex(3))))
    assert "\n" not in str(refused.value)
    return str(refused.value)


def test_validate_asks_the_host_s_own_postgresql(pg_hosts: dict) -> None:
    said = refusal(pg_hosts, pg("old", server={"flavour": "postgresql", "version": "15"}))
    assert said.startswith("variants.old.server.version: host db has PostgreSQL 17.") and "not PostgreSQL 15" in said
    said = refusal(pg_hosts, pg("typo", server={"flavour": "postgresql", "config": {"shared_bufers": "64MB"}}))
    assert said.startswith("variants.typo.server.config.shared_bufers:") and "shared_buffers" in said
    said = refusal(pg_hosts, pg("lots", server={"flavour": "postgresql", "config": {"shared_buffers": "lots"}}))
    assert said.startswith("variants.lots.server.config.shared_buffers: PostgreSQL 17.") and "on host db" in said


def leftovers(db: Host, tag: str) -> str:
    """This test's run folders, owner records and servers on db, asked there."""
    return db.shell(f"ls -d {db.work_dir}/runs/*{tag}* {db.work_dir}/owners/*{tag}* 2>/dev/null; "
                    f"pgrep -af postgres | grep -F -- '{tag}' | grep -v grep; true", timeout=60).output.strip()


def test_the_host_s_postgresql_prepares_restores_and_serves_sysbench_from_app(pg_hosts: dict, tmp_path: Path) -> None:
    tag = secrets.token_hex(3)
    variants = [pg(f"pgapp-{tag}", client_host="app",
                   server={"flavour": "postgresql", "config": {"shared_buffers": "64MB"}})]
    data = campaign(pg_hosts, variants, tag) | {"output": str(tmp_path / "out")}
    with Store(tmp_path / "out" / "layerbench.db") as store:
        runs = stored_rows(store, orchestrator.run_campaign(parse_campaign(data), store).campaign_id)
    assert [r["status"] for r in runs] == ["ok"], [r["error"] for r in runs]
    details = json.loads(runs[0]["details"])
    backend = details["environment"]["backend"]
    assert backend["server_flavour"] == "postgresql" and backend["server_version"].startswith("17.")
    assert backend["server_binary"] == "/usr/lib/postgresql/17/bin/postgres"
    assert details["reset"]["dataset_prepared"]["host"] == "db"  # db's own postgres made it, there
    restore = details["reset"]["restore"]
    assert restore["verified"] == "xxh3-128 of every byte of the copy on host db" and not restore["problems"]
    cpu = details["resources"]["cpu_seconds"]  # the postmaster and its backends (ended ones too), read on db
    assert cpu["server@db"] > cpu["other@db"] and cpu["sysbench@app"] > 0, cpu
    assert details["io"]["processes"]["server@db"]["wchar"] > 0
    conf = next((tmp_path / "out").rglob("postgresql.conf")).read_text()  # the copy of what ran
    assert "shared_buffers = '64MB'" in conf and "password" not in conf.replace("password_encryption", "")
    assert leftovers(Host("db", HostEntry(**pg_hosts["db"])), tag) == ""


def test_a_server_that_cannot_start_fails_its_run_in_one_line_and_leaves_nothing(pg_hosts: dict,
                                                                               tmp_path: Path) -> None:
    """huge_pages: on passes the server's own -C but not a start on a host without huge pages (the lab's)."""
    db = Host("db", HostEntry(**pg_hosts["db"]))
    if db.shell("cat /proc/sys/vm/nr_hugepages", timeout=30).output.strip() != "0":
        pytest.skip("db has huge pages: the start would succeed")
    tag = secrets.token_hex(3)
    variants = [pg(f"pghuge-{tag}", server={"flavour": "postgresql", "config": {"huge_pages": "on"}})]
    data = campaign(pg_hosts, variants, tag) | {"output": str(tmp_path / "out")}
    with Store(tmp_path / "out" / "layerbench.db") as store:
        runs = stored_rows(store, orchestrator.run_campaign(parse_campaign(data), store).campaign_id)
    assert runs[0]["status"] == "failed"
    assert runs[0]["error"] == ("server exited during start-up: could not map anonymous shared memory: Cannot "
                                "allocate memory")
    assert leftovers(db, tag) == ""


def test_pgbench_here_drives_the_host_s_postgresql(pg_hosts: dict, tmp_path: Path) -> None:
    """pgbench (this machine's) against db's PostgreSQL 17: its dataset `pgbench -i` made into db's server, kept and
    restored there; its run's CPU read on db. Its passfile reaches pgbench in its client folder as PGPASSFILE."""
    tag = secrets.token_hex(3)
    data = campaign({"db": pg_hosts["db"]}, [pg(f"pgb-{tag}")], tag) | {
        "output": str(tmp_path / "out"),
        "workload": {"tool": "pgbench", "test": "select-only", "scale": 1, "threads": 1, "duration": 2, "warmup": 1}}
    with Store(tmp_path / "out" / "layerbench.db") as store:
        runs = stored_rows(store, orchestrator.run_campaign(parse_campaign(data), store).campaign_id)
    assert [r["status"] for r in runs] == ["ok"], [r["error"] for r in runs]
    details = json.loads(runs[0]["details"])
    assert details["reset"]["dataset_prepared"]["binary"] == "/usr/lib/postgresql/17/bin/postgres"
    assert details["resources"]["cpu_seconds"]["server@db"] > 0
    assert details["io"]["server_status"]["pg_blks_hit"] > 0
