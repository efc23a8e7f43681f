"""MySQL 9.7 in the VM backend, for real (under TCG here: no usable KVM): the guest's root disk is copied from the
cached MySQL rootfs (the same mysqld the host and Docker backends run), its data disk is the qcow2 overlay of the
base image of the snapshot that rootfs's mysqld made on this machine, and sysbench runs against it once (1 x 1,000
rows, 2 s) after CHECKSUM TABLE checked the restored copy; beside it a variant whose `mysqld:` is that rootfs's
mysqld (its root disk the same). One campaign shared by the file's tests: VM runs are slow. The rootfs is built
here when missing (about 80 s, cached after), the root disk once per rootfs."""

from __future__ import annotations

import json
import secrets
import sqlite3
from pathlib import Path

import pytest

from layerbench.campaign.models import parse_campaign
from layerbench.hosts.owners import cmdline
from layerbench.run import orchestrator
from layerbench.server.mysql_rootfs import ensure_rootfs
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.vm, pytest.mark.slow, pytest.mark.k8s_lane]


def qemus(tag: str) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and
            cmdline(int(p.name)).startswith("qemu-system-x86_64") and tag in cmdline(int(p.name))]


@pytest.fixture(scope="module")
def mysql_vm(tmp_path_factory: pytest.TempPathFactory) -> dict:
    rootfs = ensure_rootfs("9.7")
    out, tag = tmp_path_factory.mktemp("mysql-vm"), secrets.token_hex(3)
    data = {
        "name": f"it-mysqlvm-{tag}", "baseline": f"vm-{tag}",
        "variants": [{"name": f"vm-{tag}", "backend": "vm", "network": "user", "accel": "auto",
                      "server": {"flavour": "mysql", "version": "9.7"}},
                     {"name": f"binary-{tag}", "backend": "vm", "network": "user", "accel": "auto",
                      "mysqld": str(rootfs.root / "usr/sbin/mysqld")}],
        "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 2, "warmup": 0,
                     "verify": "checksum"},
        "repetitions": 1, "estimates_only": True, "output": str(out),
    }
    db = out / "layerbench.db"
    with Store(db) as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store, source_path=None)
    rows = sqlite3.connect(db).execute("SELECT status, tps, details, error, run_dir FROM runs WHERE variant = ?",
                                       (f"vm-{tag}",)).fetchall()
    binary = sqlite3.connect(db).execute("SELECT status, tps, details, error FROM runs WHERE variant = ?",
                                         (f"binary-{tag}",)).fetchall()
    return {"outcome": outcome, "runs": rows, "binary": binary, "tag": tag}


def test_mysql_97_runs_in_the_vm_on_its_restored_snapshot(mysql_vm: dict) -> None:
    runs = mysql_vm["runs"]
    assert (mysql_vm["outcome"].ok, mysql_vm["outcome"].failed) == (2, 0), (runs, mysql_vm["binary"])
    status, tps, details, error, run_dir = runs[0]
    assert status == "ok" and tps > 0, error
    facts = json.loads(details)
    variables = facts["environment"]["server_variables"]
    assert variables["version"].startswith("9.7.") and variables["log_bin"] == "ON"
    assert facts["reset"]["method"] == "snapshot" and facts["reset"]["checksum_tables"] == 1
    assert facts["reset"]["restore"]["method"] == "copy-on-write overlay of a prepared base image"
    backend = facts["environment"]["backend"]
    assert backend["accel"] in ("kvm", "tcg") and backend["data_disk"].startswith("copy-on-write overlay")
    assert "LAYERBENCH-READY" in (Path(run_dir) / "console.log").read_text(errors="replace")


def test_a_mysqld_binary_runs_in_a_vm_whose_root_disk_is_its_root(mysql_vm: dict) -> None:
    """`mysqld:` naming the rootfs's own mysqld: the guest boots a copy of that root, restores the same snapshot
    (its identity is the binary's --version line) and runs sysbench against MySQL 9.7."""
    [(status, tps, details, error)] = mysql_vm["binary"]
    assert status == "ok" and tps > 0, error
    facts = json.loads(details)
    assert facts["environment"]["server_variables"]["version"].startswith("9.7.")
    assert facts["reset"]["method"] == "snapshot" and facts["reset"]["checksum_tables"] == 1
    flavoured = json.loads(mysql_vm["runs"][0][2])
    assert facts["reset"]["snapshot"] == flavoured["reset"]["snapshot"]
    assert facts["environment"]["backend"]["root_disk"] == flavoured["environment"]["backend"]["root_disk"]


def test_the_mysql_vm_leaves_no_qemu(mysql_vm: dict) -> None:
    assert qemus(mysql_vm["tag"]) == []


@pytest.mark.parametrize("backend", ["vm", "docker"])
def test_validate_checks_option_names_against_the_rootfs_mysqld(tmp_path: Path, backend: str) -> None:
    """A MySQL guest's or container's server.config is checked against the rootfs's own mysqld (the same bytes),
    in one line, before anything starts."""
    import os
    import subprocess
    import sys

    import yaml

    ensure_rootfs("9.7")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({
        "name": f"it-mysqlopt-{backend}", "baseline": "m",
        "variants": [{"name": "m", "backend": backend,
                      "server": {"flavour": "mysql", "version": "9.7", "config": {"no_such_option": 1}}}],
        "workloads": [{"name": "w", "test": "oltp_read_only", "tables": 1, "table_size": 10}]}))
    done = subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                          text=True, env=dict(os.environ), timeout=300, check=False)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "variants.m.server.config.no_such_option" in lines[0] and "(mysqld)" in lines[0]
