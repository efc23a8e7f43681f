"""A server on an ssh: host, on the lab of scripts/lab-hosts: `dbssh` is the db host reached over SSH (real sshd,
real MariaDB started over SSH under the host's work_dir), sysbench on `app` (a real namespace behind a veth and
bridge) or on dbssh itself. Every test checks only what it created: its variant names carry a random tag."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers import stored_rows
from layerbench.campaign.models import parse_campaign
from layerbench.hosts import owners
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = pytest.mark.integration
SMALL = {"tables": 1, "table_size": 1000, "threads": 2, "duration": 3, "warmup": 1}


def campaign_data(tmp_path: Path, hosts: dict, variants: list[dict], **changes: object) -> dict:
    data = {"name": f"it-rserver-{variants[0]['name']}", "baseline": variants[0]["name"], "hosts": hosts,
            "variants": variants, "workload": SMALL, "repetitions": 1, "estimates_only": True, "order": "sequential",
            "output": str(tmp_path / "out"), "formats": ["md"], "busy": "keep"}  # counts its runs
    return {**data, **changes}


def db_host(hosts: dict) -> Host:
    return Host("dbssh", HostEntry(**hosts["dbssh"]))


def leftovers(hosts: dict, tag: str) -> list[str]:
    """This test's run folders and servers on the db host, and sysbench on app, asked over SSH."""
    work = hosts["dbssh"]["work_dir"]
    script = (f"ls -d {work}/runs/*{tag}* 2>/dev/null; pgrep -af mariadbd | grep -F -- '{tag}' | grep -v pgrep; "
              "true")
    found = db_host(hosts).shell(script, timeout=60).output.splitlines()
    app = Host("app", HostEntry(**hosts["app"])).shell(
        f"ls -d /tmp/*{tag}*-client 2>/dev/null; pgrep -af sysbench | grep -F -- '{tag}' | grep -v pgrep; true",
        timeout=60).output.splitlines()
    return [line for line in found + app if line.strip() and "grep -F" not in line]


def owner_records(tag: str) -> list[str]:
    return [o.label for o in owners.recorded() if tag in o.label]


def run_campaign(data: dict, tmp_path: Path) -> list[dict]:
    campaign = parse_campaign(data)
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store)
        return stored_rows(store, outcome.campaign_id)


def test_a_host_server_on_an_ssh_host_with_sysbench_there_and_on_app(lab_hosts: dict, tmp_path: Path) -> None:
    tag = secrets.token_hex(3)
    variants = [{"name": f"far-{tag}", "backend": "host", "server_host": "dbssh", "client_host": "app"},
                {"name": f"near-{tag}", "backend": "host", "server_host": "dbssh", "client_host": "dbssh"}]
    runs = run_campaign(campaign_data(tmp_path, lab_hosts, variants), tmp_path)
    assert [r["status"] for r in runs] == ["ok", "ok"], [r["error"] for r in runs]
    far, near = (json.loads(r["details"]) for r in runs)
    for details, client in ((far, "app"), (near, "dbssh")):
        place = details["environment"]["placement"]
        assert (place["server_host"], place["client_host"]) == ("dbssh", client)
        assert place["endpoint"].startswith("10.231.77.1:")
        cpu = details["resources"]["cpu_seconds"]
        assert cpu["server@dbssh"] > 0 and cpu[f"sysbench@{client}"] > 0, cpu
        assert not any(key.endswith("@local") or key == "server" for key in cpu), cpu
        restore = details["reset"]["restore"]
        assert restore["method"] == "copy on host dbssh (cp --reflink=auto)"
        assert restore["verified"] == "xxh3-128 of every byte of the copy on host dbssh" and not restore["problems"]
        assert details["environment"]["backend"]["server_host"] == "dbssh"
        io = details["io"]  # the server's /proc/PID/io read on its host at the window's two marks
        assert io["processes"]["server@dbssh"]["wchar"] > 0 and io["server_status"], io
        assert not [e for e in io["errors"] if "server host" in e], io["errors"]
    assert "over the network" in far["environment"]["placement"]["path"]
    assert "own address 10.231.77.1" in near["environment"]["placement"]["path"]
    kept = far["environment"]["backend"]["dataset_on_host"]["path"]  # prepared there by its own server
    meta = db_host(lab_hosts).shell(f"cat {kept}/meta.json", timeout=30).output
    assert json.loads(meta)["data_bytes"] > 0 and json.loads(meta)["prepared"]["host"] == "dbssh"
    assert leftovers(lab_hosts, tag) == [] and owner_records(tag) == []


def test_a_second_shipper_waits_for_the_host_lock_and_a_killed_holder_lets_go(lab_hosts: dict) -> None:
    """Two campaigns shipping one snapshot to one host take turns; a holder that dies releases the lock there."""
    import threading

    from layerbench.server.remote_files import host_lock

    host, tag = db_host(lab_hosts), secrets.token_hex(3)
    lock = f"{host.work_dir}/datasets/it-lock-{tag}.lock"
    got_second = threading.Event()

    def second() -> None:
        with host_lock(host, lock, "test"):
            got_second.set()

    with host_lock(host, lock, "test"):
        waiter = threading.Thread(target=second, daemon=True)
        waiter.start()
        assert not got_second.wait(3)  # held here: the second one is still waiting (true however slow the machine)
    assert got_second.wait(120)  # released: the second one got it
    waiter.join(120)
    killed = subprocess.Popen([sys.executable, "-c", f"""
import sys, time
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.server.remote_files import host_lock
with host_lock(Host("dbssh", HostEntry(**{lab_hosts['dbssh']!r})), {lock!r}, "test"):
    print("held", flush=True)
    time.sleep(600)
"""], stdout=subprocess.PIPE, text=True)
    assert killed.stdout is not None and killed.stdout.readline().strip() == "held"
    killed.kill()
    killed.wait()
    with host_lock(host, lock, "test"):  # the dead holder's lock went with its SSH session
        pass
    host.shell(f"rm -f {lock}", timeout=30)


def start_in_background(tmp_path: Path, data: dict) -> subprocess.Popen:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ})


def wait_for_sysbench(proc: subprocess.Popen, hosts: dict, tag: str) -> None:
    deadline = time.monotonic() + 240
    while not any("sysbench" in line for line in leftovers(hosts, tag)):
        assert time.monotonic() < deadline and proc.poll() is None, "sysbench never started on app"
        time.sleep(0.5)
    time.sleep(1)


@pytest.mark.parametrize("how", ["sigint", "sigkill-then-clean"])
def test_a_stopped_remote_server_run_leaves_nothing_on_either_host(lab_hosts: dict, tmp_path: Path,
                                                                    how: str) -> None:
    tag = secrets.token_hex(3)
    variants = [{"name": f"stop-{tag}", "backend": "host", "server_host": "dbssh", "client_host": "app"}]
    proc = start_in_background(tmp_path, campaign_data(tmp_path, lab_hosts, variants,
                                                       workload={**SMALL, "duration": 60}))
    try:
        wait_for_sysbench(proc, lab_hosts, tag)
        assert any("mariadbd" in line for line in leftovers(lab_hosts, tag))
        proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    if how == "sigint":
        assert proc.returncode == 130
    else:
        assert owner_records(tag), "a killed harness leaves its owner records for clean"
        from layerbench.run.cleanup import clean_recorded

        said = clean_recorded()
        assert any("on host dbssh" in line for line in said), said
    deadline = time.monotonic() + 30  # a SIGKILLed sysbench on app ends when its server is gone
    while leftovers(lab_hosts, tag) and time.monotonic() < deadline:
        time.sleep(1)
    assert leftovers(lab_hosts, tag) == [] and owner_records(tag) == []


def test_no_room_on_the_server_host_is_refused_before_anything_starts(lab_hosts: dict, tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "lbtest-room", str(small)], check=True)
    try:
        hosts = {**lab_hosts, "dbssh": {**lab_hosts["dbssh"], "work_dir": str(small)}}
        variants = [{"name": f"room-{secrets.token_hex(3)}", "backend": "host", "server_host": "dbssh",
                     "client_host": "app"}]
        campaign = parse_campaign(campaign_data(tmp_path, hosts, variants,
                                                workload={**SMALL, "table_size": 100_000}))
        from layerbench.errors import BadInput
        from layerbench.run.preflight import preflight

        with pytest.raises(BadInput) as error:
            preflight(campaign)
        message = str(error.value)
        # the snapshot dbssh prepares in its work_dir's datasets folder and the run's copy in its work_dir, measured
        # with df there as one filesystem (run/diskspace.py check_remote_disk_space)
        assert f"needed on host dbssh at {small}/datasets and {small} (one filesystem), which has 0.01 GiB free" \
            in message and "\n" not in message, message
        assert list(small.iterdir()) == []
    finally:
        subprocess.run(["umount", str(small)], check=False)


def test_my_cnf_option_names_are_checked_against_the_server_host_s_own_server(lab_hosts: dict,
                                                                               tmp_path: Path) -> None:
    from layerbench.errors import BadInput
    from layerbench.run.preflight import preflight

    name = f"opts-{secrets.token_hex(3)}"
    good = {"name": name, "backend": "host", "server_host": "dbssh", "client_host": "app",
            "server": {"config": {"innodb_buffer_pool_size": "64M", "innodb-flush-log-at-trx": 2}}}
    preflight(parse_campaign(campaign_data(tmp_path, lab_hosts, [good])))  # a full name and a prefix: accepted
    bad = {**good, "server": {"config": {"innodb_bufer_pool_size": "64M"}}}
    with pytest.raises(BadInput) as error:
        preflight(parse_campaign(campaign_data(tmp_path, lab_hosts, [bad])))
    assert str(error.value) == (f"variants.{name}.server.config.innodb_bufer_pool_size: the server (mariadbd on host "
                                "dbssh) has no such option; check its spelling (mariadbd --verbose --help lists them)")


def our_containers(tag: str) -> list[str]:
    import docker

    client = docker.from_env()  # the lab's db host runs this machine's daemon
    return [c.name for c in client.containers.list(all=True, filters={"label": "layerbench=1"}) if tag in c.name]


def test_a_docker_server_on_an_ssh_host_through_the_sdks_ssh(lab_hosts: dict, tmp_path: Path) -> None:
    tag = secrets.token_hex(3)
    variants = [{"name": f"dnat-{tag}", "backend": "docker", "network": "bridge", "server_host": "dbalias",
                 "client_host": "app"},
                {"name": f"dbind-{tag}", "backend": "docker", "network": "host", "storage": "bind",
                 "server_host": "dbalias", "client_host": "app"}]
    runs = run_campaign(campaign_data(tmp_path, lab_hosts, variants), tmp_path)
    assert [r["status"] for r in runs] == ["ok", "ok"], [r["error"] for r in runs]
    nat, bind = (json.loads(r["details"]) for r in runs)
    for details in (nat, bind):
        assert details["environment"]["placement"]["endpoint"].startswith("10.231.77.1:")
        cpu = details["resources"]["cpu_seconds"]
        assert cpu["server@dbalias"] > 0 and cpu["sysbench@app"] > 0 and "containerd-shim@dbalias" in cpu, cpu
        assert details["environment"]["backend"]["server_host"] == "dbalias"
        assert details["environment"]["storage"]["path"] == "/var/tmp/lblab-db/runs"
    assert "docker-proxy@dbalias" in nat["resources"]["cpu_seconds"]
    assert "kernel NAT" in nat["environment"]["placement"]["path"]
    assert bind["reset"]["restore"]["method"] == "copy on host dbalias (cp --reflink=auto)"
    assert our_containers(tag) == [] and leftovers(lab_hosts, tag) == [] and owner_records(tag) == []


def test_a_docker_server_on_a_host_with_ssh_options_is_refused_in_one_line(lab_hosts: dict, tmp_path: Path) -> None:
    variants = [{"name": f"dopt-{secrets.token_hex(3)}", "backend": "docker", "server_host": "dbssh",
                 "client_host": "app"}]
    from layerbench.errors import BadInput
    from layerbench.run.preflight import preflight

    with pytest.raises(BadInput) as error:
        preflight(parse_campaign(campaign_data(tmp_path, lab_hosts, variants)))
    message = str(error.value)
    assert "Docker SDK's ssh://" in message and "~/.ssh/config" in message and "\n" not in message


def test_a_vm_server_on_an_ssh_host(lab_hosts: dict, tmp_path: Path) -> None:
    tag = secrets.token_hex(3)
    variants = [{"name": f"vm-{tag}", "backend": "vm", "vcpus": 1, "memory": "1G", "server_host": "dbssh",
                 "client_host": "app"}]
    runs = run_campaign(campaign_data(tmp_path, lab_hosts, variants), tmp_path)
    assert runs[0]["status"] == "ok", runs[0]["error"]
    details = json.loads(runs[0]["details"])
    assert details["environment"]["placement"]["endpoint"].startswith("10.231.77.1:")
    backend = details["environment"]["backend"]
    assert backend["server_host"] == "dbssh" and backend["accel"] in ("kvm", "tcg")
    assert "QEMU user networking on host dbssh" in backend["network_path"]
    cpu = details["resources"]["cpu_seconds"]
    assert cpu["qemu@dbssh"] > 0 and cpu["sysbench@app"] > 0, cpu
    assert "LAYERBENCH-READY" in (Path(runs[0]["run_dir"]) / "console.log").read_text()
    found = db_host(lab_hosts).shell(f"pgrep -af qemu-system | grep -F -- '{tag}' | grep -v grep; true").output
    assert found.strip() == "" and leftovers(lab_hosts, tag) == [] and owner_records(tag) == []


def test_mysql_97_on_an_ssh_host_runs_the_rootfs_in_place(lab_hosts: dict, tmp_path: Path) -> None:
    """MySQL 9.7 of the cached rootfs on dbssh, sysbench on app. The lab's dbssh is this machine reached over SSH
    (it shares the file system), so this shows the rootfs used in place, not shipped: the shipping path runs in
    test_a_mysql_rootfs_is_shipped_to_a_host_once."""
    from layerbench.server.mysql_rootfs import ensure_rootfs

    ensure_rootfs("9.7")
    tag = secrets.token_hex(3)
    variants = [{"name": f"my-{tag}", "backend": "host", "server_host": "dbssh", "client_host": "app",
                 "server": {"flavour": "mysql", "version": "9.7"}}]
    runs = run_campaign(campaign_data(tmp_path, lab_hosts, variants, workload={**SMALL, "duration": 2,
                                                                             "verify": "checksum"}), tmp_path)
    assert [r["status"] for r in runs] == ["ok"], [r["error"] for r in runs]
    details = json.loads(runs[0]["details"])
    backend = details["environment"]["backend"]
    assert backend["server_host"] == "dbssh" and backend["server_flavour"] == "mysql"
    assert backend["rootfs_how"].startswith("in place") and backend["server_version"].startswith("9.7.")
    assert details["environment"]["server_variables"]["log_bin"] == "ON"
    assert details["reset"]["method"] == "snapshot" and details["reset"]["checksum_tables"] == 1
    assert details["reset"]["restore"]["method"] == "copy on host dbssh (cp --reflink=auto)"
    assert leftovers(lab_hosts, tag) == [] and owner_records(tag) == []
    mysqlds = db_host(lab_hosts).shell(f"pgrep -af mysqld | grep -F -- '{tag}' | grep -v grep; true", timeout=30)
    assert mysqlds.output.strip() == ""


def test_a_mysql_rootfs_is_shipped_to_a_host_once(lab_hosts: dict, tmp_path: Path) -> None:
    """The shipping path of server/remote_rootfs.py, which the lab's shared file system never takes by itself:
    sent with rsync into a folder of this test's own on dbssh, checked, marked, reused the second time, and its
    mysqld answers through the shipped loader there. The folder is removed at the end."""
    from layerbench.server.mysql_rootfs import MysqlRootfs, ensure_rootfs
    from layerbench.server.remote_rootfs import identity, ship_locked

    rootfs, host, tag = ensure_rootfs("9.7"), db_host(lab_hosts), secrets.token_hex(3)
    target = f"{host.work_dir}/servers/it-ship-{tag}"
    try:
        first = ship_locked(host, rootfs, target, identity(rootfs.folder), tmp_path, lambda _t: None)
        again = ship_locked(host, rootfs, target, identity(rootfs.folder), tmp_path, lambda _t: None)
        assert first.startswith("shipped now") and again == "shipped earlier"
        said = host.run([*MysqlRootfs(Path(target)).command(), "--version"], timeout=60).output
        assert "Ver 9.7.4" in said, said
    finally:
        host.shell(f"rm -rf {target}", timeout=120)
    assert host.shell(f"ls -d {target} 2>/dev/null; true", timeout=30).output.strip() == ""


def test_the_db_host_prepares_the_dataset_with_its_own_server(lab_hosts: dict, tmp_path: Path) -> None:
    """issue #42 item 2: the dataset of a host server on dbssh is prepared there by dbssh's own mariadbd, keyed by
    that server's --version read over SSH, kept there, and the harness holds no dataset folder for its key (a table
    size of this test's own makes a key no other test uses). The run's records say where and by what; a second
    campaign finds the host's snapshot and prepares nothing. Then one byte of that snapshot is changed there: the
    third campaign's restore finds it against the host's manifest, the snapshot is removed there, prepared again
    there, and the run retried."""
    from layerbench.analysis.loading import analyze
    from layerbench.analysis.report_model import report_model
    from layerbench.hosts.workdirs import datasets_dir
    from layerbench.report import write_report
    from layerbench.server.snapshot import dataset_key

    tag, host = secrets.token_hex(3), db_host(lab_hosts)
    workload = {**SMALL, "table_size": 1000 + secrets.randbelow(900) + 1, "verify": "checksum"}
    variants = [{"name": f"own-{tag}", "backend": "host", "server_host": "dbssh", "client_host": "app"}]
    said = host.shell("b=$(command -v mariadbd || echo /usr/sbin/mariadbd); echo $b; $b --version", timeout=60)
    binary, version = said.output.strip().split("\n", 1)
    parsed = parse_campaign(campaign_data(tmp_path, lab_hosts, variants, workload=workload))
    key = dataset_key(parsed.workloads[0], version.strip(), None)[0]
    target = f"{host.work_dir}/datasets/{key}"
    try:
        first = run_campaign(campaign_data(tmp_path, lab_hosts, variants, workload=workload), tmp_path)
        again = run_campaign(campaign_data(tmp_path, lab_hosts, variants, workload=workload,
                                           name=f"it-rserver-again-{tag}"), tmp_path)
        assert [r["status"] for r in first + again] == ["ok", "ok"], [r["error"] for r in first + again]
        for row in first + again:
            reset = json.loads(row["details"])["reset"]
            assert reset["snapshot"] == key and reset["checksum_tables"] == 1, reset
            assert reset["dataset_prepared"] == {"where": f"host dbssh ({host.target})", "host": "dbssh",
                                                 "binary": binary, "version": version.strip()}, reset
            assert reset["restore"]["verified"] == "xxh3-128 of every byte of the copy on host dbssh"
        assert not (datasets_dir() / key).exists() and not (datasets_dir() / f".build-{key}").exists()
        meta = json.loads(host.shell(f"cat {target}/meta.json", timeout=30).output)
        assert meta["prepared"]["host"] == "dbssh" and meta["rows"] == {"sbtest1": workload["table_size"]}
        prepared_logs = sorted(p.parent.name for p in (tmp_path / "out").rglob("prepare.log"))
        assert len(prepared_logs) == 1, prepared_logs  # the second campaign restored the host's snapshot
        with Store(tmp_path / "out" / "layerbench.db") as store:
            analysis = analyze(store, int(first[0]["campaign_id"]))
        text = write_report(report_model(analysis), "md", tmp_path / "rep").read_text()
        assert f"prepared on host dbssh by {binary}" in text  # the report's data line
        assert json.loads(first[0]["details"])["environment"]["backend"]["dataset_on_host"]["path"] == target
        host.shell(f"printf X | dd of={target}/datadir/sbtest/sbtest1.ibd bs=1 seek=20000 conv=notrunc status=none",
                   timeout=30)
        third = run_campaign(campaign_data(tmp_path, lab_hosts, variants, workload=workload,
                                           name=f"it-rserver-third-{tag}"), tmp_path)
        assert third[-1]["status"] == "ok", third[-1]["error"]
        remade = json.loads(host.shell(f"cat {target}/meta.json", timeout=30).output)
        assert remade["created_at"] > meta["created_at"]  # prepared anew there
        assert leftovers(lab_hosts, tag) == [] and owner_records(tag) == []
    finally:
        host.shell(f"rm -rf {target} {target}.lock", timeout=120)
