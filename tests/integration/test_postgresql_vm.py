"""PostgreSQL 15 in the VM backend, for real (issue #46; under TCG here: the nested KVM of these machines hangs in
early boot): the guest's root disk is the server image's rootfs with Debian's postgresql-15 at this machine's version
(server/vmimage.py, built once: about a minute here), its data disk the qcow2 overlay of the base image of the
snapshot this machine's PostgreSQL made, its server run as the guest's user postgres with layerbench's
postgresql.conf and pg_hba.conf (backends/vm/guestpg.py). One campaign, one round: sysbench's oltp_read_write with
--db-driver=pgsql (1 x 1,000 rows, 2 s, the restored copy checked first) and pgbench's select-only (scale 1, 2 s),
each run in a guest of its own; the server's settings, its pg_stat_database counters and QEMU's CPU recorded; no
password in what the runs wrote, and no QEMU nor VM folder left; and a guest whose server cannot start (huge_pages:
on, which validate's postgres -C takes) fails its run with the server's own line and leaves nothing."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import folders_postgres_enters, processes_naming, run_for_real

pytestmark = [pytest.mark.integration, pytest.mark.vm, pytest.mark.slow, pytest.mark.k8s_lane]


@pytest.fixture(scope="module")
def folders() -> Iterator[Path]:
    """Work and dataset folders that the server's user can enter (the snapshot is made by this machine's postgres)."""
    with folders_postgres_enters("lb-it-pgvm-") as base:
        yield base


@pytest.fixture(scope="module")
def campaign(folders: Path) -> dict:
    tag = secrets.token_hex(3)
    out = folders / "out"
    data = {
        "name": f"it-pgvm-{os.getpid()}", "baseline": f"pgvm-{tag}",
        "variants": [{"name": f"pgvm-{tag}", "backend": "vm", "network": "user", "accel": "auto",
                      "server": {"flavour": "postgresql", "version": "15", "config": {"work_mem": "8MB"}}}],
        "workloads": [
            {"name": "rw", "test": "oltp_read_write", "tables": 1, "table_size": 1000, "threads": 1, "duration": 2,
             "warmup": 0, "verify": "checksum"},
            {"name": "ro", "tool": "pgbench", "test": "select-only", "scale": 1, "threads": 1, "duration": 2,
             "warmup": 0},
        ],
        "repetitions": 1, "estimates_only": True, "output": str(out),
    }
    outcome, rows = run_for_real(data)
    return {"outcome": outcome, "rows": rows, "out": out, "tag": tag, "folders": folders}


def test_sysbench_and_pgbench_run_against_postgresql_in_the_guest_on_restored_snapshots(campaign: dict) -> None:
    rows = campaign["rows"]
    assert [r[1] for r in rows] == ["ok", "ok"], [r[4] for r in rows]
    for _variant, _status, tps, details, _error in rows:
        facts = json.loads(details)
        assert tps > 0
        reset = facts["reset"]
        assert reset["method"] == "snapshot"
        assert reset["restore"]["method"] == "copy-on-write overlay of a prepared base image"
        backend = facts["environment"]["backend"]
        assert backend["accel"] in ("kvm", "tcg") and backend["data_disk"].startswith("copy-on-write overlay")
        assert backend["server_flavour"] == "postgresql" and backend["server_version"].startswith("15.")
        assert backend["guest_packages"]["postgresql-15"].startswith("15.")
        variables = facts["environment"]["server_variables"]
        assert variables["version"].startswith("15.") and variables["work_mem"] == str(8 * 1024)
        assert variables["password_encryption"] == "scram-sha-256" and variables["listen_addresses"] == "*"
        assert facts["io"]["server_status"]["pg_blks_hit"] > 0  # pg_stat_database over the measured window
        assert facts["resources"]["cpu_seconds"].get("qemu", 0) > 0
    sysbench = [json.loads(r[3]) for r in rows if "pgbench" not in json.loads(r[3])]
    assert len(sysbench) == 1 and sysbench[0]["reset"]["checksum_tables"] == 1
    pgbench = [json.loads(r[3]) for r in rows if "pgbench" in json.loads(r[3])]
    assert len(pgbench) == 1 and pgbench[0]["reset"]["snapshot"].startswith("pgbench-s1-")


def test_the_guest_ran_layerbench_postgresql_conf_as_user_postgres(campaign: dict) -> None:
    run_dirs = sorted(campaign["out"].glob("*/runs/*/console.log"))
    assert len(run_dirs) == 2
    for console in run_dirs:
        text = console.read_text(errors="replace")
        assert "LAYERBENCH-READY" in text
        conf = (console.parent / "postgresql.conf").read_text().splitlines()
        assert "work_mem = '8MB'" in conf and "port = 5432" in conf and "listen_addresses = '*'" in conf


def test_no_password_is_written_and_nothing_is_left(campaign: dict) -> None:
    for path in campaign["out"].rglob("*"):
        if path.is_file() and path.suffix in (".log", ".json", ".conf", ".txt", ".sql"):
            text = path.read_text(errors="replace")
            assert "pgsql-password=" not in text and "PASSWORD '" not in text, path
    assert [c for c in processes_naming(campaign["tag"]) if "qemu" in c] == []
    assert not list((campaign["folders"] / "work").rglob(f"vm/*{campaign['tag']}*"))


def test_a_guest_whose_server_cannot_start_fails_in_one_line_and_leaves_nothing(campaign: dict) -> None:
    """The same dataset (cached by the campaign above), a setting only a start refuses: the run fails with the
    server's own line, without waiting for the boot timeout, and its QEMU and folder are gone."""
    out, tag = campaign["folders"] / "out-refused", campaign["tag"]
    data = {"name": f"it-pgvm-refused-{os.getpid()}", "baseline": f"pgvm-{tag}",
            "variants": [{"name": f"pgvm-{tag}", "backend": "vm", "network": "user",
                          "server": {"flavour": "postgresql", "config": {"huge_pages": "on"}}}],
            "workload": {"test": "oltp_read_write", "tables": 1, "table_size": 1000, "threads": 1, "duration": 2,
                         "warmup": 0},
            "repetitions": 1, "estimates_only": True, "output": str(out)}
    _outcome, rows = run_for_real(data)
    [(_variant, status, _tps, _details, error)] = rows
    assert status == "failed" and "\n" not in error
    assert error.startswith("server exited during start-up in the VM: could not map anonymous shared memory"), error
    assert [c for c in processes_naming(tag) if "qemu" in c] == []
    assert not list((campaign["folders"] / "work").rglob(f"vm/*{tag}*"))
