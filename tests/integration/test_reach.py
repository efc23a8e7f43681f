"""Reaching a server on an ssh: host (issue #42 item 3; hosts/forward.py, run/reach.py, the host backend on an
ssh: host; the lab of scripts/lab-hosts): with `reach: ssh` the server listens on 127.0.0.1 of the db host, where
neither this machine's nor app's connections to 10.231.77.1 reach it, so a run that succeeds went through the
forwards: this machine's `ssh -L`, and for sysbench on app a reverse forward on app chained to it. A second
campaign takes the direct path on the same host. Every run stores its path; the port is the host's `ports:`;
the forwards are gone afterwards. Names carry the helper's prefix and a random tag."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import stored_rows
from layerbench.campaign.models import parse_campaign
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = pytest.mark.integration
SMALL = {"tables": 1, "table_size": 1000, "threads": 2, "duration": 2, "warmup": 1}


def run_on(lab_hosts: dict, tmp_path: Path, entry: dict, clients: list[str]) -> list[dict]:
    tag = secrets.token_hex(3)
    hosts = {**lab_hosts, "dbssh": {**lab_hosts["dbssh"], **entry}}
    variants = [{"name": f"reach-{client}-{tag}", "backend": "host", "server_host": "dbssh",
                 **({"client_host": client} if client != "local" else {})} for client in clients]
    data = {"name": f"reach-{tag}", "baseline": variants[0]["name"], "hosts": hosts, "variants": variants,
            "workload": SMALL, "repetitions": 1, "estimates_only": True, "order": "sequential", "busy": "keep",
            "output": str(tmp_path / "out"), "formats": ["md"]}
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store)
        runs = stored_rows(store, outcome.campaign_id)
    assert [r["status"] for r in runs] == ["ok"] * len(clients), [r["error"] for r in runs]
    return [json.loads(r["details"])["environment"]["placement"] for r in runs]


def forwards_left(low: int, high: int) -> list[str]:
    """ssh forward processes of this machine that lead to a port of the test's range."""
    found = subprocess.run(["pgrep", "-af", "ExitOnForwardFailure=yes"], capture_output=True, text=True).stdout
    return [line for line in found.splitlines()
            if any(f":{port}" in line for port in range(low, high + 1)) and "pgrep" not in line]


def port_of(listens: str) -> int:
    return int(listens.split(" ")[0].rsplit(":", 1)[1])


def test_the_forwarded_path_reaches_a_server_only_its_host_reaches(lab_hosts: dict, tmp_path: Path) -> None:
    places = run_on(lab_hosts, tmp_path, {"reach": "ssh", "ports": "41410-41429"}, ["app", "local", "dbssh"])
    for place in places:
        reach = place["reach"]
        assert reach["kind"] == "ssh" and reach["server_listens"].startswith("127.0.0.1:"), reach
        assert 41410 <= port_of(reach["server_listens"]) <= 41429 and reach["harness"].startswith("ssh -L"), reach
    on_app, here, on_db = (p["reach"]["client"] for p in places)
    assert on_app.startswith("ssh: ssh -R 127.0.0.1:") and " on app -> 127.0.0.1:" in on_app, on_app
    assert places[0]["endpoint"].startswith("127.0.0.1:")  # app's own loopback: the reverse forward's end
    assert here.startswith("ssh: this machine's forward 127.0.0.1:"), here
    assert on_db.startswith("on dbssh itself: 127.0.0.1:414"), on_db
    assert forwards_left(41410, 41429) == []


def test_the_direct_path_dials_the_hosts_address_on_a_fixed_port(lab_hosts: dict, tmp_path: Path) -> None:
    places = run_on(lab_hosts, tmp_path, {"ports": "41430-41449"}, ["app"])
    reach = places[0]["reach"]
    assert reach["kind"] == "direct" and reach["server_listens"].startswith("10.231.77.1:414"), reach
    assert 41430 <= port_of(reach["server_listens"]) <= 41449
    assert reach["client"] == f"direct: {reach['server_listens'].split(' ')[0]} from app", reach
    assert reach["harness"] == f"direct to {reach['server_listens']}"


def validate(tmp_path: Path, lab_hosts: dict, entry: dict) -> tuple[int, list[str]]:
    """`layerbench validate` of a campaign with its server on dbssh (changed by `entry`) and sysbench on app."""
    tag = secrets.token_hex(3)
    data = {"name": f"reach-v-{tag}", "baseline": f"reach-v-{tag}", "output": str(tmp_path / "out"),
            "hosts": {**lab_hosts, "dbssh": {**lab_hosts["dbssh"], **entry}}, "workload": SMALL,
            "variants": [{"name": f"reach-v-{tag}", "backend": "host", "server_host": "dbssh", "client_host": "app"}]}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    done = subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                          text=True, timeout=600)
    return done.returncode, [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error:")]


def test_validate_probes_each_path_to_the_servers_port(lab_hosts: dict, tmp_path: Path) -> None:
    code, errors = validate(tmp_path, lab_hosts, {"reach": "ssh", "ports": "41450-41459"})
    assert (code, errors) == (0, [])
    code, errors = validate(tmp_path, lab_hosts, {"bind_address": "127.0.0.1", "ports": "41460-41469"})
    assert code == 2 and len(errors) == 2, errors  # this machine's path and app's: one line each
    here, app = errors
    for line, source in ((here, "this machine"), (app, "app")):
        assert line.startswith(f"error: hosts.dbssh: the direct path from {source} to 10.231.77.1 does not reach "
                               "port 414"), line
        assert 41460 <= int(line.split("port ")[1].split(" ")[0]) <= 41469 and "reach: ssh" in line, line
    assert forwards_left(41450, 41469) == []
