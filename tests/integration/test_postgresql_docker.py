"""PostgreSQL 15 in the Docker backend, for real (issue #46): the image built from this machine's postgresql-15
(built once, about 2 minutes, cached after), one container per run on a bridge network (published port) and on
the host's network, each restoring the dataset snapshot this machine's PostgreSQL made (files hashed, each restored
copy checked against them), sysbench's oltp_read_write with --db-driver=pgsql and pgbench's tpcb-like logging in with
scram-sha-256 over TCP; the server run as user postgres, no password in the container's command, environment or
files, and nothing left (containers, socket and work folders) afterwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import folders_postgres_enters, run_for_real
from layerbench.backends.docker.daemon import docker_client
from layerbench.backends.docker.local import DockerBackend
from layerbench.campaign.models import campaign_as_dict, load_campaign, parse_campaign, smoke_version
from layerbench.secrets import generate_password
from layerbench.server.datadir import query
from layerbench.server.postgresql import run_as
from layerbench.server.postgresql_image import ensure_postgresql_image
from layerbench.server.spec import ServerSpec

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def our_containers(label: str) -> list[str]:
    done = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=layerbench.campaign={label}"],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def socket_folders(label: str) -> list[Path]:
    """The socket folders on this machine of runs whose label matches (a glob): /tmp/lb-pgsock-<label>-<random>."""
    return sorted(Path("/tmp").glob(f"lb-pgsock-{label}-*"))


@pytest.fixture(scope="module")
def folders() -> Iterator[Path]:
    """Work and dataset folders of this module that the server's user can enter (pytest's own are 0700)."""
    ensure_postgresql_image(docker_client(), print)  # built here when missing, outside the campaign's own time
    with folders_postgres_enters("lb-it-pgdock-") as base:
        yield base


@pytest.fixture(scope="module")
def campaign(folders: Path) -> dict:
    """examples/postgresql-container-overhead.yaml in smoke mode (so the examples' smoke test leaves it to this
    module): PostgreSQL 15 on the host (the baseline), in a container behind a published port and on the host's
    network (here with a work_mem of its own), once each for its sysbench workload and a pgbench one added here,
    each on its dataset's snapshot."""
    out = folders / "out"
    data = campaign_as_dict(smoke_version(load_campaign(EXAMPLES / "postgresql-container-overhead.yaml")))
    hostnet = next(v for v in data["variants"] if v["name"] == "docker-host-net")
    hostnet["server"] = {**hostnet.get("server", {"flavour": "postgresql"}), "config": {"work_mem": "8MB"}}
    data["workloads"] = [{**data["workloads"][0], "name": "oltp", "duration": 2},
                         {"name": "tpcb", "tool": "pgbench", "scale": 1, "threads": 2, "duration": 2, "warmup": 0}]
    data |= {"name": f"it-pgdock-{os.getpid()}", "output": str(out)}
    outcome, rows = run_for_real(data)
    return {"outcome": outcome, "out": out, "runs": rows, "name": data["name"]}


def facts_of(campaign: dict, variant: str | None = None) -> list[dict]:
    return [json.loads(r[3]) for r in campaign["runs"] if variant is None or r[0] == variant]


def test_sysbench_and_pgbench_run_on_a_restored_snapshot_over_both_networks(campaign: dict) -> None:
    runs = campaign["runs"]
    assert [r[1] for r in runs] == ["ok"] * 6, [r[4] for r in runs]
    assert all(r[2] > 0 for r in runs)
    assert len({json.loads(r[3])["reset"]["snapshot"] for r in runs}) == 2  # one per workload: host and containers
    for facts in facts_of(campaign, "docker-bridge") + facts_of(campaign, "docker-host-net"):
        backend = facts["environment"]["backend"]
        assert backend["image"].startswith("layerbench/postgresql:")
        assert (backend["server_flavour"], backend["server_version"][:3]) == ("postgresql", "15.")
        assert facts["environment"]["server_variables"]["version"].startswith("15.")
        reset = facts["reset"]
        assert reset["method"] == "snapshot" and reset["restore"]["files"] > 0
        assert reset["restore"]["method"].endswith("into the host folder of a local-driver volume (type=none, o=bind)")
        assert facts["io"]["server_status"]["pg_blks_hit"] > 0  # PostgreSQL's own counters, read over TCP
    assert len([f for f in facts_of(campaign) if "pgbench" not in f]) == 3
    pgbench = [f["pgbench"] for f in facts_of(campaign) if "pgbench" in f]
    assert len(pgbench) == 3 and all(p["script"] == "tpcb-like" and p["statements"] for p in pgbench)


def test_each_network_is_the_path_it_says(campaign: dict) -> None:
    """The published port's packets go through docker-proxy (counted as a component of the run's CPU); the host
    network's do not."""
    for variant, proxied in (("docker-bridge", True), ("docker-host-net", False)):
        for facts in facts_of(campaign, variant):
            assert facts["environment"]["backend"]["network"] == ("bridge" if proxied else "host")
            assert ("docker-proxy" in facts["resources"]["cpu_seconds"]) == proxied


def test_the_generated_postgresql_conf_is_what_the_container_ran_with(campaign: dict) -> None:
    for facts in facts_of(campaign, "docker-host-net"):
        variables = facts["environment"]["server_variables"]
        assert variables["work_mem"] == str(8 * 1024) and variables["password_encryption"] == "scram-sha-256"
    confs = {p.parent.name: p.read_text().splitlines() for p in campaign["out"].glob("*/runs/*/postgresql.conf")
             if "docker-" in p.parent.name}
    assert len(confs) == 4
    for run, lines in confs.items():
        assert "max_connections = 1000" in lines and "unix_socket_directories = '/run/layerbench-pg'" in lines
        assert "hba_file = '/etc/layerbench/pg_hba.conf'" in lines
        assert ("listen_addresses = '0.0.0.0'" in lines and "port = 5432" in lines) == ("docker-bridge" in run)
        assert ("work_mem = '8MB'" in lines) == ("docker-host-net" in run)


def test_nothing_is_left_and_no_password_is_written(campaign: dict) -> None:
    assert our_containers(campaign["name"]) == []
    work = Path(os.environ["LAYERBENCH_WORK_DIR"])
    labels = [p.name for p in (work / "owners").glob("*.json")] + [p.name for p in (work / "work" / "docker").glob("*")]
    assert [name for name in labels if name.endswith(("-docker-bridge", "-docker-host-net", "-docker-bridge.json",
                                                      "-docker-host-net.json"))] == []
    assert socket_folders("lb*-docker-bridge") + socket_folders("lb*-docker-host-net") == []
    for path in campaign["out"].rglob("*"):
        if path.is_file() and path.suffix in (".log", ".json", ".conf", ".txt"):
            assert "PASSWORD '" not in path.read_text(errors="replace"), path


def test_the_server_runs_as_postgres_and_its_container_holds_no_password(folders: Path) -> None:
    """One container brought up by the backend itself on an empty datadir (initdb in the container): its server
    process is user postgres's (this machine's ids), the benchmark login over TCP works, and the password is in
    neither the container's command, nor its environment, nor the files mounted into it; down() leaves nothing."""
    variant = parse_campaign({"name": "it-pgdock-one", "baseline": "d", "workloads": [{"name": "w"}], "variants": [
        {"name": "d", "backend": "docker", "storage": "tmpfs", "server": {"flavour": "postgresql"}}]}).variant("d")
    backend, private = DockerBackend(variant), Path(tempfile.mkdtemp(prefix="lb-it-pgdock-private-"))
    password, label = generate_password(), f"it-pgdock-one-{os.getpid()}"
    spec = ServerSpec("it-pgdock-one", label, folders / "one", private, folders / "work-one", password=password)
    spec.run_dir.mkdir(parents=True)
    try:
        endpoint = backend.up(spec)
        assert len(socket_folders(label)) == 1
        assert query(endpoint, "SELECT current_user")[0][0] == "layerbench"
        pid = backend.server_pid()
        uid = next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if line.startswith("Uid:"))
        assert int(uid) == run_as()[0]  # type: ignore[index]
        config = backend.container.attrs["Config"]
        assert password.reveal() not in json.dumps([config["Cmd"], config["Env"]])
        for path in (private / "pgconf").iterdir():
            assert password.reveal() not in path.read_text()
    finally:
        backend.down()
    assert our_containers("it-pgdock-one") == [] and socket_folders(label) == []
    assert not (private / "pgconf").exists()
    shutil.rmtree(private)  # this test's own folder (the run's private folder, which the campaign would remove)
