"""Issue #42's done-when on the isolated lab (scripts/lab-hosts up --isolated; the session's `isolated_lab`
fixture): db is a host of its own (another Debian release, so another MariaDB major than this machine's; its own
Docker daemon, reached as `dbalias` through the SDK's ssh://) behind an nft firewall that admits only SSH from this
machine; app runs sysbench. One campaign puts a host server and a docker server on db with `reach: ssh` and a port
range the firewall drops, so a run that succeeds went through the forwards (hosts/forward.py, run/reach.py: this
machine's `ssh -L`, and for sysbench on app a reverse forward on app chained to it); a second opens a range
(`lab-hosts open`) and takes the direct path. Every run stores its path, and its dataset was prepared on db by db's
own server (`reset.dataset_prepared`), which the docker server's image (built on db from db's own packages,
backends/docker/host_image.py) runs too. Names carry a random tag; ports are the helper's 41500-41599."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import stored_rows
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.campaign.models import parse_campaign
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.report.markdown import render
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SMALL = {"tables": 1, "table_size": 1000, "threads": 2, "duration": 2, "warmup": 1}
LAB_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lab-hosts"
FORWARDED, DIRECT, PROBED = (41540, 41559), (41500, 41519), (41560, 41579)  # only DIRECT is ever opened


def lab_hosts(lab: dict, **entry: object) -> dict:
    """The lab's inventory, db and dbalias (one host: its sshd, and its daemon by alias) changed by `entry`."""
    hosts = lab["hosts"]
    return {**hosts, "db": {**hosts["db"], **entry}, "dbalias": {**hosts["dbalias"], **entry}}


def run_on(tmp_path: Path, hosts: dict, variants: list[tuple[str, str, str]]) -> list[dict]:
    """A campaign of (kind, backend, client host) variants with their servers on db; each run's record."""
    tag = secrets.token_hex(3)
    listed = [{"name": f"done-{kind}-{tag}", "backend": backend, "client": "host",
               "server_host": "db" if backend == "host" else "dbalias",
               **({"client_host": client} if client != "local" else {}),
               **({"network": "bridge"} if backend == "docker" else {})} for kind, backend, client in variants]
    for variant in listed:
        if variant["backend"] == "host":
            variant.pop("client")
    data = {"name": f"done-reach-{tag}", "baseline": listed[0]["name"], "hosts": hosts, "variants": listed,
            "workload": SMALL, "repetitions": 1, "estimates_only": True, "order": "sequential", "busy": "keep",
            "output": str(tmp_path / "out"), "formats": ["md"]}
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store)
        runs = stored_rows(store, outcome.campaign_id)
        report = render(report_model(analyze(store, outcome.campaign_id)))
    assert [r["status"] for r in runs] == ["ok"] * len(variants), [r["error"] for r in runs]
    (tmp_path / "report.md").write_text(report)
    return [json.loads(r["details"]) | {"_variant": r["variant"]} for r in runs]  # its name, for its report row


def report_path_of(tmp_path: Path, details: dict) -> str:
    """The network path the campaign's report gives for the run's variant (its "Where server and client ran" row)."""
    variant = details["_variant"]
    rows = [line for line in (tmp_path / "report.md").read_text().splitlines()
            if line.startswith(f"| `{variant}` |") and line.count("|") == 6]
    assert len(rows) == 1, (variant, rows)
    return rows[0].split("|")[4].strip()


def major(line: str) -> str:
    found = re.search(r"(\d+)\.\d+\.\d+-MariaDB", line)
    assert found, line
    return found.group(1)


def check_dbs_own_server(lab: dict, details: dict) -> None:
    """The run's server is db's MariaDB (another major than this machine's), on a dataset db's server prepared."""
    db = Host("db", HostEntry(**lab["hosts"]["db"]))
    theirs = db.shell("/usr/sbin/mariadbd --version", timeout=60).output.strip()
    ours = subprocess.run(["mariadbd", "--version"], capture_output=True, text=True, timeout=60).stdout
    assert major(theirs) != major(ours), (theirs, ours)
    assert major(details["environment"]["server_variables"]["version"]) == major(theirs)
    prepared = details["reset"]["dataset_prepared"]
    assert prepared["host"] in ("db", "dbalias") and prepared["version"] == theirs, prepared
    assert prepared["binary"] == "/usr/sbin/mariadbd"
    backend = details["environment"]["backend"]
    if backend.get("backend") != "host":  # the docker server: its image made on db from db's own packages
        assert backend["image_built_on"] == "dbalias" and backend["image_from"].startswith("rootfs of host dbalias")


def forwards_left(low: int, high: int) -> list[str]:
    """ssh forward processes of this machine that lead to a port of the test's range."""
    found = subprocess.run(["pgrep", "-af", "ExitOnForwardFailure=yes"], capture_output=True, text=True).stdout
    return [line for line in found.splitlines()
            if any(f":{port}" in line for port in range(low, high + 1)) and "pgrep" not in line]


def port_of(listens: str) -> int:
    return int(listens.split(" ")[0].rsplit(":", 1)[1])


def test_through_a_firewall_that_admits_only_ssh_both_servers_run_over_the_forwards(isolated_lab: dict,
                                                                                   tmp_path: Path) -> None:
    low, high = FORWARDED
    hosts = lab_hosts(isolated_lab, reach="ssh", ports=f"{low}-{high}")
    runs = run_on(tmp_path, hosts, [("host", "host", "app"), ("here", "host", "local"), ("near", "host", "db"),
                                    ("docker", "docker", "app")])
    for details in runs:
        reach = details["environment"]["placement"]["reach"]
        assert reach["kind"] == "ssh" and reach["server_listens"].startswith("127.0.0.1:"), reach
        assert low <= port_of(reach["server_listens"]) <= high and reach["harness"].startswith("ssh -L"), reach
        check_dbs_own_server(isolated_lab, details)
    on_app, here, on_db, docker = (d["environment"]["placement"]["reach"]["client"] for d in runs)
    for client in (on_app, docker):
        assert client.startswith("ssh: ssh -R 127.0.0.1:") and " on app -> 127.0.0.1:" in client, client
    assert runs[0]["environment"]["placement"]["endpoint"].startswith("127.0.0.1:")  # app's reverse forward
    assert here.startswith("ssh: this machine's forward 127.0.0.1:"), here
    assert on_db.startswith("on db itself: 127.0.0.1:415"), on_db
    for details in runs:  # the report says which path each ran
        assert report_path_of(tmp_path, details) == details["environment"]["placement"]["reach"]["client"]
    assert "server@dbalias" in runs[3]["resources"]["cpu_seconds"], runs[3]["resources"]["cpu_seconds"]
    check_transport(runs)
    assert forwards_left(low, high) == []


def check_transport(runs: list[dict]) -> None:
    """The sshd sessions on db that serve this harness (its shared connection, its forward) are their own
    component, `transport@<db's name>`, beside `other@` (which the busy rule reads): sysbench's bytes through the
    forward (on app, here, the docker run's) cost them more than the harness's queries alone (sysbench on db)."""
    transport = []
    for details in runs:
        cpu = details["resources"]["cpu_seconds"]
        host = details["environment"]["placement"]["server_host"]
        assert f"transport@{host}" in cpu and f"other@{host}" in cpu, cpu
        transport.append(cpu[f"transport@{host}"])
    on_app, here, on_db, docker = transport
    assert min(on_app, here, docker) > on_db >= 0, transport


def test_with_the_port_opened_both_servers_run_on_the_direct_path(isolated_lab: dict, tmp_path: Path) -> None:
    low, high = DIRECT
    subprocess.run([str(LAB_SCRIPT), "open", f"{low}-{high}"], env=isolated_lab["env"], check=True, timeout=60)
    db = isolated_lab["hosts"]["db"]["ssh"].split("@")[1]
    runs = run_on(tmp_path, lab_hosts(isolated_lab, ports=f"{low}-{high}"),
                  [("host", "host", "app"), ("docker", "docker", "app")])
    for details in runs:
        reach = details["environment"]["placement"]["reach"]
        assert reach["kind"] == "direct" and reach["server_listens"].startswith(f"{db}:"), reach
        assert low <= port_of(reach["server_listens"]) <= high
        assert reach["client"] == f"direct: {reach['server_listens'].split(' ')[0]} from app", reach
        assert reach["harness"] == f"direct to {reach['server_listens']}"
        check_dbs_own_server(isolated_lab, details)
        assert report_path_of(tmp_path, details) == reach["client"]  # the report says which path each ran
    assert "kernel NAT" in runs[1]["environment"]["placement"]["path"]


def validate(tmp_path: Path, hosts: dict) -> tuple[int, list[str]]:
    """`layerbench validate` of a campaign with a host server on db and sysbench on app."""
    tag = secrets.token_hex(3)
    data = {"name": f"done-v-{tag}", "baseline": f"done-v-{tag}", "output": str(tmp_path / "out"), "hosts": hosts,
            "workload": SMALL,
            "variants": [{"name": f"done-v-{tag}", "backend": "host", "server_host": "db", "client_host": "app"}]}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    done = subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                          text=True, timeout=600)
    return done.returncode, [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error:")]


def test_validate_probes_each_path_to_the_servers_port_through_the_firewall(isolated_lab: dict,
                                                                            tmp_path: Path) -> None:
    low, high = PROBED
    code, errors = validate(tmp_path, lab_hosts(isolated_lab, reach="ssh", ports=f"{low}-{high}"))
    assert (code, errors) == (0, [])
    db = isolated_lab["hosts"]["db"]["ssh"].split("@")[1]
    code, errors = validate(tmp_path, lab_hosts(isolated_lab, ports=f"{low}-{high}"))  # direct: the firewall drops it
    assert code == 2 and len(errors) == 2, errors  # this machine's path and app's: one line each
    for line, source in zip(errors, ("this machine", "app"), strict=True):
        assert line.startswith(f"error: hosts.db: the direct path from {source} to {db} does not reach port 415"), line
        assert low <= int(line.split("port ")[1].split(" ")[0]) <= high and "reach: ssh" in line, line
    assert forwards_left(low, high) == []


def test_a_docker_servers_option_names_are_those_of_the_hosts_own_mariadb(isolated_lab: dict,
                                                                           tmp_path: Path) -> None:
    """The image on db is built from db's own packages, so its my.cnf names are checked against db's mariadbd:
    innodb_adaptive_hash_index_cells is an option of db's 11.8, not of this machine's 10.11."""
    low, high = PROBED
    hosts = lab_hosts(isolated_lab, reach="ssh", ports=f"{low}-{high}")
    for config, expected in (({"innodb_adaptive_hash_index_cells": 65536}, 0),
                             ({"innodb_adaptive_hash_index_cels": 65536}, 2)):
        tag = secrets.token_hex(3)
        variant = {"name": f"done-o-{tag}", "backend": "docker", "network": "bridge", "server_host": "dbalias",
                   "client_host": "app", "server": {"config": config}}
        path = tmp_path / f"{tag}.yaml"
        path.write_text(yaml.safe_dump({"name": f"done-o-{tag}", "baseline": variant["name"], "hosts": hosts,
                                        "workload": SMALL, "variants": [variant], "output": str(tmp_path / "out")}))
        done = subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                              text=True, timeout=600)
        said = done.stdout + done.stderr
        assert done.returncode == expected, said
    assert ("innodb_adaptive_hash_index_cels: the server (mariadbd on host dbalias) has no such option") in said


def test_a_dataset_db_prepares_is_counted_on_db_with_its_df(isolated_lab: dict, tmp_path: Path) -> None:
    """validate of a host server on db whose dataset no disk holds: refused in one line naming db, its folders and
    db's own free space (df there), not this machine's (run/diskspace.py check_remote_disk_space)."""
    low, high = PROBED
    tag = secrets.token_hex(3)
    variant = {"name": f"it-h42-disk-{tag}", "backend": "host", "server_host": "db", "client_host": "app"}
    data = {"name": f"it-h42-disk-{tag}", "baseline": variant["name"], "output": str(tmp_path / "out"),
            "hosts": lab_hosts(isolated_lab, reach="ssh", ports=f"{low}-{high}"), "variants": [variant],
            "workload": {**SMALL, "tables": 40, "table_size": 1_000_000_000}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    done = subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                          text=True, timeout=600)
    errors = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and len(errors) == 1, done.stdout + done.stderr
    free = Host("db", HostEntry(**isolated_lab["hosts"]["db"])).shell(
        "df -Pk /var/tmp/layerbench 2>/dev/null || df -Pk /var/tmp", timeout=60).output
    assert errors[0].startswith("error: hosts.db: snapshot of default, prepared there (variant it-h42-disk-"), errors
    assert "needed on host db at /var/tmp/layerbench/datasets and /var/tmp/layerbench (one filesystem), which " \
           "has " in errors[0] and "Traceback" not in done.stderr, errors
    said = float(errors[0].split(", which has ")[1].split(" GiB free")[0])
    assert abs(said - int(free.splitlines()[1].split()[3]) / 2**20) < 2, (said, free)  # db's df, give or take
