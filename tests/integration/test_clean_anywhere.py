"""`layerbench clean --inventory` from another harness (issue #42's done-when), on the isolated lab (the session's
`isolated_lab`): a campaign with a Docker server on lab host db (its own daemon, reached through the SDK's ssh://,
alias dbalias; db's own image and MariaDB) and a CPU neighbour beside it there (placement: ssh), sysbench on app.
While it runs, a clean from another harness keeps all of it (its leases are held); after a SIGKILL of the harness,
a clean from a harness with empty state (another work dir and HOME, another hostname in a UTS namespace of its own,
and no Docker socket, so db's daemon is reached only over SSH) removes everything the campaign left: asserted on
db's own daemon (containers and volumes by the campaign's label) and on db's and app's own process lists and
folders. The last test keeps the shared lab (its app shares this machine's file system). Modules: hosts/lease.py,
hosts/host_owners.py, hosts/reclaim.py, backends/docker/cleanup.py, run/cleanup.py."""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from layerbench.hosts.inventory import Host, HostEntry

pytestmark = pytest.mark.integration
PREFIX = "sweep"


LAB_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lab-hosts"
PORTS = (41520, 41539)  # opened on db: the server's direct path (a forward would be this machine's, not db's)


def campaign_file(tmp_path: Path, hosts: dict, tag: str) -> Path:
    neighbour = {"name": "hog", "kind": "cpu", "load": 20, "placement": "ssh", "host": "dbalias"}
    variant = {"name": f"{PREFIX}-{tag}", "backend": "docker", "network": "bridge", "server_host": "dbalias",
               "client_host": "app", "neighbours": [neighbour]}
    data = {"name": f"{PREFIX}-it-{tag}", "baseline": variant["name"], "hosts": hosts, "variants": [variant],
            "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 300, "warmup": 1},
            "repetitions": 1, "order": "sequential", "output": str(tmp_path / "out"), "formats": ["md"],
            "busy": "keep"}
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def containers(hosts: dict, name: str) -> list[str]:
    """The campaign's containers and volumes on db's own daemon, asked there."""
    db = Host("dbalias", HostEntry(**hosts["dbalias"]))
    label = f"label=layerbench.campaign={name}"
    done = db.shell(f"docker ps -a --filter {label} --format '{{{{.Names}}}}'; "
                    f"docker volume ls --filter {label} --format '{{{{.Name}}}}'", timeout=120)
    assert done.returncode == 0, done.output
    return [line for line in done.output.splitlines() if line.strip()]


def on_hosts(hosts: dict, mark: str) -> list[str]:
    """What carries `mark` (the variant's tag, or the run's label, which its neighbour's folder starts with) on db
    (over SSH) and app: owner records, folders, processes."""
    found = []
    head, tail = mark[:3], mark[3:]  # split, so that the script's own command line does not match
    for name in ("dbalias", "app"):
        host = Host(name, HostEntry(**hosts[name]))
        script = (f"m={head}; ls -d {host.work_dir}/owners/*${{m}}{tail}* {host.work_dir}/runs/*${{m}}{tail}* "
                  f"/tmp/*${{m}}{tail}* 2>/dev/null; pgrep -af -- \"${{m}}{tail}\"; true")
        found += [f"{name}: {line}" for line in host.shell(script, timeout=60).output.splitlines() if line.strip()]
    return found


def run_label(hosts: dict, tag: str) -> str | None:
    """The run's label (lb<id>-<hex>-<n>-), read from its folder on db once it exists."""
    for line in on_hosts(hosts, tag):
        match = re.search(rf"/runs/(lb[0-9a-f-]+?-){PREFIX}-{tag}", line)
        if match:
            return match.group(1)
    return None


def cleaner(tmp_path: Path, inventory: Path) -> subprocess.CompletedProcess[str]:
    """`layerbench clean --inventory` as another harness: empty state, another hostname, no local Docker socket."""
    state = tmp_path / "other-harness"
    (state / "home").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "LAYERBENCH_WORK_DIR": str(state / "work"), "HOME": str(state / "home"),
           "LAYERBENCH_DB": str(state / "none.db"), "DOCKER_HOST": f"unix://{state}/no-docker.sock"}
    env.pop("KUBECONFIG", None)
    script = f'hostname {PREFIX}-other && exec "$@"'
    return subprocess.run(["unshare", "--uts", "sh", "-c", script, "sh", sys.executable, "-m", "layerbench", "clean",
                           "--inventory", str(inventory)], capture_output=True, text=True, env=env, timeout=600,
                          check=False)


def test_clean_from_another_harness_keeps_a_live_campaign_and_removes_a_killed_one(isolated_lab: dict,
                                                                                    tmp_path: Path) -> None:
    tag = secrets.token_hex(3)
    low, high = PORTS
    subprocess.run([str(LAB_SCRIPT), "open", f"{low}-{high}"], env=isolated_lab["env"], check=True, timeout=60)
    lab_hosts = {name: {**entry, "ports": f"{low}-{high}"} if name == "dbalias" else entry
                 for name, entry in isolated_lab["hosts"].items()}
    name = f"{PREFIX}-it-{tag}"
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump({"hosts": lab_hosts}))
    harness_env = {**os.environ, "LAYERBENCH_WORK_DIR": str(tmp_path / "harness-work")}
    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(campaign_file(tmp_path, lab_hosts, tag))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=harness_env)
    try:
        deadline, label = time.monotonic() + 600, None
        while label is None or not (containers(lab_hosts, name)
                                    and any("sysbench" in line for line in on_hosts(lab_hosts, tag))
                                    and any("-nb-hog" in line for line in on_hosts(lab_hosts, label))):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(1)
            label = label or run_label(lab_hosts, tag)
        assert label is not None
        live = cleaner(tmp_path, inventory)
        assert live.returncode == 0, live.stdout + live.stderr
        assert "kept" in live.stdout and "its campaign is running" in live.stdout, live.stdout
        assert containers(lab_hosts, name) and proc.poll() is None  # nothing of the live campaign was touched
        before = on_hosts(lab_hosts, label)
        assert sum(".rec" in line for line in before) == 3, before  # server, neighbour (db) and sysbench (app)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert containers(lab_hosts, name), "a killed harness leaves its server's container"
    said = ""
    deadline = time.monotonic() + 180  # the killed harness's SSH sessions let go of its leases as they end
    while (containers(lab_hosts, name) or on_hosts(lab_hosts, label)) and time.monotonic() < deadline:
        done = cleaner(tmp_path, inventory)
        assert done.returncode == 0, done.stdout + done.stderr
        said += done.stdout
        time.sleep(2)
    print(said)
    assert containers(lab_hosts, name) == [] and on_hosts(lab_hosts, label) == [], said
    assert on_hosts(lab_hosts, tag) == [], said
    assert "removed container" in said and "on host dbalias" in said
    # db's records are swept under the first inventory name of that machine (db, or its alias dbalias)
    assert re.search(r"\(and stopped what ran from it\) on host db(alias)?\n", said) and "on host app" in said
    # what the killed harness left on its own machine (this one): its run's private folder (sysbench.cfg holds the
    # run's password), removed by a clean there, as after any SIGKILL (test_faults.py)
    here = subprocess.run([sys.executable, "-m", "layerbench", "clean"], capture_output=True, text=True,
                          env=harness_env, timeout=600)
    assert here.returncode == 0 and "lb-private-" in here.stdout, here.stdout + here.stderr


def test_leases_here_and_on_a_host_sharing_its_file_system_are_apart(lab_hosts: dict,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab's app shares this machine's file system: the harness's lease here and its lease on app (both under
    /var/tmp/layerbench) are two files, both held, read as live on app, and dead once let go."""
    from layerbench.hosts import lease
    from layerbench.hosts.inventory import REMOTE_WORK_DIR

    monkeypatch.setenv("LAYERBENCH_WORK_DIR", REMOTE_WORK_DIR)
    app = Host("app", HostEntry(**lab_hosts["app"]))
    try:
        here, there = lease.local_lease(), lease.host_lease(app)
        assert here != there and Path(here).parent == Path(there).parent
        assert lease.host_lease(app) == there  # held once per host
        probe = app.shell(lease.probe_script({here, there}), timeout=60).output
        assert lease.parse_probe(probe) == {here: lease.State.LIVE, there: lease.State.LIVE}
    finally:
        lease.release_all()
    app.close()
    deadline = time.monotonic() + 60  # the SSH session ends as its stdin closes
    while Path(there).exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not Path(here).exists() and not Path(there).exists()
