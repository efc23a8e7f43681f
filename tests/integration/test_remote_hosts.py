"""Remote placement on the lab of scripts/lab-hosts: real sshd, a real network namespace and bridge, real Docker,
real MariaDB and sysbench. Every test checks only what it created (its variant names carry a random tag)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers import stored_rows
from layerbench.analysis.report_model import report_model
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = pytest.mark.integration
NS = "lblab-app"
SMALL = {"tables": 1, "table_size": 1000, "threads": 2, "duration": 3, "warmup": 1}


def campaign_data(tmp_path: Path, hosts: dict, variants: list[dict], **changes: object) -> dict:
    data = {"name": f"it-remote-{variants[0]['name']}", "baseline": variants[0]["name"], "hosts": hosts,
            "variants": variants, "workload": SMALL, "repetitions": 1, "estimates_only": True, "order": "sequential",
            "output": str(tmp_path / "out"), "formats": ["md"], "busy": "keep"}  # counts its runs
    return {**data, **changes}


def app_host(hosts: dict) -> Host:
    return Host("app", HostEntry(**hosts["app"]))


def on_app(hosts: dict, script: str) -> str:
    return app_host(hosts).shell(script, timeout=60).output


def leftovers_on_app(hosts: dict, tag: str) -> list[str]:
    """Client folders and sysbench processes of this test's variants on the app host (asked over SSH)."""
    found = on_app(hosts, f"ls -d /tmp/*{tag}*-client 2>/dev/null; pgrep -af 'sysbench' | grep -F -- '{tag}'; true")
    return [line for line in found.splitlines() if line.strip() and "pgrep" not in line and "grep -F" not in line]


def our_containers(tag: str) -> list[str]:
    import docker

    client = docker.from_env()
    return [c.name for c in client.containers.list(all=True, filters={"label": "layerbench=1"}) if tag in c.name]


def run_campaign(data: dict, tmp_path: Path, progress: orchestrator.Progress | None = None) -> list[dict]:
    campaign = parse_campaign(data)
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store, progress=progress)
        return stored_rows(store, outcome.campaign_id)


def test_host_and_docker_servers_on_db_with_sysbench_on_app(lab_hosts: dict, tmp_path: Path) -> None:
    tag = secrets.token_hex(3)
    variants = [{"name": f"host-{tag}", "backend": "host", "server_host": "db", "client_host": "app"},
                {"name": f"docker-{tag}", "backend": "docker", "network": "bridge", "server_host": "db",
                 "client_host": "app"}]
    data = campaign_data(tmp_path, lab_hosts, variants)
    runs = run_campaign(data, tmp_path)
    assert [r["status"] for r in runs] == ["ok", "ok"], [r["error"] for r in runs]
    from layerbench.run.plan import path_text

    parsed = parse_campaign(data)
    for run in runs:
        details = json.loads(run["details"])
        place = details["environment"]["placement"]
        variant = next(v for v in parsed.variants if v.name == run["variant"])
        assert path_text(parsed.hosts, variant).endswith(f": {place['path']}")  # validate previewed this path
        assert (place["server_host"], place["client_host"]) == ("db", "app")
        assert place["endpoint"].startswith("10.231.77.1:") and place["rtt_ms"] is not None
        assert details["environment"]["client_host"]["nic"] == "lblab-app-n"
        cpu = details["resources"]["cpu_seconds"]
        assert cpu["sysbench@app"] > 0 and cpu["server@db"] > 0
        assert "sysbench@db" not in cpu  # nothing of the client ran on the server's host
    docker_path = json.loads(runs[1]["details"])["environment"]["placement"]["path"]
    assert "kernel NAT" in docker_path
    assert leftovers_on_app(lab_hosts, tag) == [] and our_containers(tag) == []


def test_sigint_of_a_remote_run_leaves_nothing_on_either_host(lab_hosts: dict, tmp_path: Path) -> None:
    tag = secrets.token_hex(3)
    variants = [{"name": f"sig-{tag}", "backend": "docker", "network": "bridge", "server_host": "db",
                 "client_host": "app"}]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(campaign_data(tmp_path, lab_hosts, variants,
                                                 workload={**SMALL, "duration": 60})))
    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ})
    try:
        deadline = time.monotonic() + 240
        while not any("sysbench" in line for line in leftovers_on_app(lab_hosts, tag)):
            assert time.monotonic() < deadline and proc.poll() is None, "sysbench never started on app"
            time.sleep(0.5)
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    assert leftovers_on_app(lab_hosts, tag) == []
    assert our_containers(tag) == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def own_sshd_on_app(port: int):
    """A second sshd in the app namespace, on a port of this test, with the lab's keys: a host this test may make
    disappear without touching the shared lab."""
    config = Path("/run/lblab/app/sshd_config").read_text().replace(":22\n", f":{port}\n")
    config = config.replace("PidFile /run/lblab/app/sshd.pid", f"PidFile /run/lblab/app/it-{port}.pid")
    path = Path(f"/run/lblab/app/it-{port}.conf")
    path.write_text(config)
    subprocess.run(["ip", "netns", "exec", NS, "/usr/sbin/sshd", "-f", str(path)], check=True)
    pid_file = Path(f"/run/lblab/app/it-{port}.pid")
    deadline = time.monotonic() + 20
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGTERM)
        path.unlink(missing_ok=True)


class DropHostMidRun(orchestrator.SilentProgress):
    """Two seconds into the first run, the app host stops answering: every packet to its sshd is dropped."""

    def __init__(self, port: int) -> None:
        self.rule = ["INPUT", "-p", "tcp", "--dport", str(port), "-j", "DROP"]
        self.dropped = False

    def interval(self, spec, tps: float, elapsed: float) -> None:
        if not self.dropped and elapsed >= 2:
            subprocess.run(["ip", "netns", "exec", NS, "iptables", "-I", *self.rule], check=True)
            self.dropped = True

    def undo(self) -> None:
        if self.dropped:
            subprocess.run(["ip", "netns", "exec", NS, "iptables", "-D", *self.rule], check=False)


def test_a_host_that_stops_answering_fails_the_run_with_that_cause(lab_hosts: dict, tmp_path: Path) -> None:
    tag = secrets.token_hex(3)
    port = free_port()
    hosts = {**lab_hosts, "app": {**lab_hosts["app"], "port": port}}
    with open("/run/lblab/known_hosts") as known:  # the lab's key, also under [addr]:port
        line = next(known_line for known_line in known if known_line.startswith("10.231.77.2 "))
    kh = tmp_path / "known_hosts"
    kh.write_text(line.replace("10.231.77.2 ", f"[10.231.77.2]:{port} ", 1))
    hosts["app"]["known_hosts"] = str(kh)
    variants = [{"name": f"gone-{tag}", "backend": "host", "server_host": "db", "client_host": "app"}]
    spy = DropHostMidRun(port)
    from layerbench.run.cleanup import clean_recorded

    with own_sshd_on_app(port):
        try:
            runs = run_campaign(campaign_data(tmp_path, hosts, variants, workload={**SMALL, "duration": 30}),
                                tmp_path, progress=spy)
        finally:
            spy.undo()
        left = leftovers_on_app(lab_hosts, tag)
        done = clean_recorded()  # the owner record lets `layerbench clean` finish once the host answers again
    assert spy.dropped, [(r["status"], r["error"]) for r in runs]
    assert runs[0]["status"] == "failed"
    assert "hosts.app (root@10.231.77.2) does not answer over SSH" in runs[0]["error"], runs[0]["error"]
    assert left and any("on host app" in line for line in done), done
    assert leftovers_on_app(lab_hosts, tag) == []


def test_a_host_key_mismatch_is_refused_with_one_line(lab_hosts: dict, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kh = tmp_path / "known_hosts"
    kh.write_text("10.231.77.2 " + " ".join(other.with_suffix(".pub").read_text().split()[:2]) + "\n")
    hosts = {**lab_hosts, "app": {**lab_hosts["app"], "known_hosts": str(kh)}}
    variants = [{"name": f"key-{secrets.token_hex(3)}", "backend": "host", "server_host": "db",
                 "client_host": "app"}]
    campaign = parse_campaign(campaign_data(tmp_path, hosts, variants))
    with pytest.raises(BadInput) as error, Store(tmp_path / "k.db") as store:
        orchestrator.run_campaign(campaign, store)
    message = str(error.value)
    assert message.startswith("hosts.app (root@10.231.77.2): the host key does not match") and "\n" not in message
    assert "ssh-keygen -R 10.231.77.2" in message


@contextlib.contextmanager
def other_sysbench_on_app():
    """The app host gets another sysbench (a wrapper that reports 1.0.99 and runs the real one), in the app
    host's own mount namespace only (sshd there was started by `ip netns exec`): this machine's is untouched."""
    pid = int(Path("/run/lblab/app/sshd.pid").read_text())
    enter = ["nsenter", "-t", str(pid), "-m", "--"]
    subprocess.run([*enter, "mount", "-t", "tmpfs", "lbtest", "/usr/local/bin"], check=True)
    try:
        script = ('#!/bin/sh\n[ "$1" = --version ] && { echo "sysbench 1.0.99-other"; exit 0; }\n'
                  'exec /usr/bin/sysbench "$@"\n')
        subprocess.run([*enter, "sh", "-c", "cat > /usr/local/bin/sysbench && chmod +x /usr/local/bin/sysbench"],
                       input=script.encode(), check=True)
        yield
    finally:
        subprocess.run([*enter, "umount", "/usr/local/bin"], check=False)


def test_a_sysbench_version_that_differs_between_hosts_is_reported(lab_hosts: dict, tmp_path: Path) -> None:
    tag = secrets.token_hex(3)
    variants = [{"name": f"loop-{tag}", "backend": "host", "server_host": "db", "client_host": "db"},
                {"name": f"far-{tag}", "backend": "host", "server_host": "db", "client_host": "app"}]
    with other_sysbench_on_app():
        runs = run_campaign(campaign_data(tmp_path, lab_hosts, variants), tmp_path)
    assert [r["status"] for r in runs] == ["ok", "ok"], [r["error"] for r in runs]
    from layerbench.analysis.loading import analyze
    from layerbench.report import write_report

    with Store(tmp_path / "out" / "layerbench.db") as store:
        analysis = analyze(store, int(runs[0]["campaign_id"]))
    text = write_report(report_model(analysis), "md", tmp_path / "rep").read_text()
    assert "client host fact sysbench_version" in text
    assert "sysbench 1.0.99-other" in text and "sysbench 1.0.20" in text


def validate(tmp_path: Path, hosts: dict, **variant: object) -> tuple[int, str]:
    """`layerbench validate` of a campaign whose server is db (this machine) and whose sysbench only runs on app:
    the exit code and what it printed on stderr."""
    from tests.unit.test_hostile_inputs import validate as run_validate

    variants = [{"name": f"val-{secrets.token_hex(3)}", "backend": "host", "server_host": "db",
                 "client_host": "app", "client_cpus": "0", **variant}]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(campaign_data(tmp_path, hosts, variants)))
    code, err = run_validate(path)
    return code, err.strip()


def test_validate_reaches_a_host_that_only_runs_sysbench(lab_hosts: dict, tmp_path: Path) -> None:
    key, known = tmp_path / "lab key", tmp_path / "lab known_hosts"  # a blank in both paths: ssh gets them whole
    key.write_bytes(Path(lab_hosts["app"]["identity_file"]).read_bytes())
    key.chmod(0o600)
    known.write_bytes(Path(lab_hosts["app"]["known_hosts"]).read_bytes())
    app = {**lab_hosts["app"], "identity_file": str(key), "known_hosts": str(known)}
    code, text = validate(tmp_path, {**lab_hosts, "app": app})
    assert code == 0 and text == "", text
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    stranger = tmp_path / "stranger_known_hosts"
    stranger.write_text("10.231.77.2 " + " ".join(other.with_suffix(".pub").read_text().split()[:2]) + "\n")
    refused = {
        "a key the host does not know": ({"identity_file": str(other)}, "hosts.app (root@10.231.77.2): the host "
                                         "refused our key"),
        "another host key": ({"known_hosts": str(stranger)}, "hosts.app (root@10.231.77.2): the host key does "
                             "not match"),
        "a missing key": ({"identity_file": str(tmp_path / "gone")}, "hosts.app.identity_file: "),
        "a device as known_hosts": ({"known_hosts": "/dev/zero"}, "hosts.app.known_hosts: '/dev/zero' is not a "
                                    "readable regular file"),
        "no answer": ({"port": free_port()}, "hosts.app (root@10.231.77.2) does not answer over SSH"),
    }
    for case, (change, words) in refused.items():
        code, text = validate(tmp_path, {**lab_hosts, "app": {**app, **change}})
        assert code == 2 and text.startswith(f"error: {words}") and "\n" not in text, (case, text)
    code, text = validate(tmp_path, {**lab_hosts, "app": app}, client_cpus="4095")
    assert code == 2 and "client_cpus: '4095' is not a CPU list of host app, where sysbench runs" in text, text
