"""The Docker backend on a real Docker Engine (in CI a missing daemon is a failure, not a skip)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker
import pytest
import yaml
from test_faults import stored_runs
from test_host_campaign import campaign_file as host_campaign_file
from test_host_campaign import run_cli

from helpers import stored_rows
from layerbench.backends.base import ServerSpec
from layerbench.backends.docker.local import DockerBackend
from layerbench.backends.docker.variant import DockerVariant
from layerbench.campaign.models import parse_campaign
from layerbench.campaign.workload import Workload
from layerbench.run import orchestrator
from layerbench.secrets import generate_password
from layerbench.server.datadir import query
from layerbench.server.prepare import ensure_snapshot
from layerbench.server.snapshot import server_version
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.docker]
TINY = {"tables": 1, "table_size": 1000, "threads": 1, "duration": 2, "warmup": 0}
NAME = f"it-docker-{os.getpid()}"  # this test session's campaigns: labelled() looks at nothing else


def campaign_file(tmp_path: Path, **changes) -> Path:
    return host_campaign_file(tmp_path, **{"name": NAME, **changes})


def labelled(campaign: str = NAME) -> list[str]:
    """What this session's campaigns left in Docker (other sessions' campaigns may run at the same time)."""
    client = docker.from_env()
    label = f"layerbench.campaign={campaign}"
    found = [f"container {c.name}" for c in client.containers.list(all=True, filters={"label": label})]
    found += [f"volume {v.name}" for v in client.volumes.list(filters={"label": label})]
    found += [f"network {n.name}" for n in client.networks.list(filters={"label": label})]
    return found


@pytest.fixture(scope="module", autouse=True)
def daemon() -> None:
    docker.from_env().ping()  # no daemon: the module fails, it is never skipped


def run_one(tmp_path: Path, variant: dict, workload: dict | None = None) -> list:
    path = campaign_file(tmp_path, repetitions=1, baseline="v", variants=[{"name": "v", "backend": "docker",
                                                                            **variant}], workload=workload or TINY)
    campaign = parse_campaign(yaml.safe_load(path.read_text()))
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store)
        return stored_rows(store, outcome.campaign_id)


@pytest.mark.parametrize("network", ["bridge", "bridge-direct", "host"])
def test_each_network_mode(tmp_path: Path, network: str) -> None:
    runs = run_one(tmp_path, {"network": network})
    assert [r["status"] for r in runs] == ["ok"], runs[0]["error"]
    assert runs[0]["tps"] > 10
    assert labelled() == []


@pytest.mark.parametrize("storage", ["volume", "bind", "data-container", "container-fs", "tmpfs"])
def test_each_storage_mode(tmp_path: Path, storage: str) -> None:
    runs = run_one(tmp_path, {"storage": storage, "network": "bridge-direct"})
    assert [r["status"] for r in runs] == ["ok"], runs[0]["error"]
    restore = json.loads(runs[0]["details"])["reset"]["restore"]
    if storage in ("container-fs", "tmpfs"):  # copied inside the container, timed from its start to the copy's end
        where = {"container-fs": "the container's overlay layer", "tmpfs": "a tmpfs in memory"}[storage]
        assert restore["method"] == f"cp -a inside the container into {where}"
        assert restore["seconds"] > 0 and restore["files"] > 0 and restore["bytes"] > 0
    assert labelled() == []


def test_client_in_a_container_and_a_qos_preset(tmp_path: Path) -> None:
    runs = run_one(tmp_path, {"client": "container", "qos": "guaranteed", "resources": {"cpus": 1}})
    assert [r["status"] for r in runs] == ["ok"], runs[0]["error"]
    log = Path(runs[0]["run_dir"]) / "commands.log"
    assert "docker run" in log.read_text()
    assert labelled() == []


def test_reprepare_runs_where_the_client_runs(tmp_path: Path) -> None:
    """With client: container, cleanup and prepare run in the client container too, not on this host."""
    runs = run_one(tmp_path, {"client": "container", "network": "bridge-direct"}, {**TINY, "reset": "reprepare"})
    assert [r["status"] for r in runs] == ["ok"], runs[0]["error"]
    assert json.loads(runs[0]["details"])["reset"]["prepared_by"] == "a container on the server's network"
    steps = [line for line in (Path(runs[0]["run_dir"]) / "commands.log").read_text().splitlines()
             if "docker run" in line]
    assert [line.split()[-1] for line in steps[:2]] == ["cleanup", "prepare"] and len(steps) == 3
    assert labelled() == []


def test_rows_and_server_version_through_the_endpoint(tmp_path: Path) -> None:
    workload = Workload(**TINY)
    snapshot = ensure_snapshot(workload, None, log_dir=tmp_path / "prep")
    (tmp_path / "run").mkdir()
    (tmp_path / "priv").mkdir(mode=0o700)
    variant = DockerVariant(name="v", backend="docker", network="bridge-direct", storage="volume")
    backend = DockerBackend(variant)
    backend.check()
    spec = ServerSpec(NAME, f"lbtest-{int(time.time())}", tmp_path / "run", tmp_path / "priv",
                      Path(tempfile.mkdtemp()), password=generate_password(), snapshot=snapshot.path)
    try:
        endpoint = backend.up(spec)
        assert query(endpoint, "SELECT COUNT(*) FROM sbtest1", database="sbtest")[0][0] == 1000
        inside = query(endpoint, "SELECT VERSION()")[0][0]
        assert inside in server_version(), (inside, server_version())
        components = backend.components()
        assert components["server"] and backend.cgroups()
        assert backend.describe()["docker_version"]
        inspected = json.dumps(docker.from_env().containers.get(spec.label).attrs)
        assert spec.password.reveal() not in inspected  # not in env, command, labels or mounts
    finally:
        backend.down()
    assert labelled() == []


def test_sigint_during_a_docker_campaign_leaves_nothing(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, repetitions=3, baseline="v", order="sequential",
                         variants=[{"name": "v", "backend": "docker", "network": "bridge"}],
                         workload={**TINY, "duration": 4})
    db = tmp_path / "out" / "layerbench.db"
    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (stored_runs(db) >= 1 and labelled()):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    assert labelled() == []


@pytest.mark.parametrize(("variant", "expected"), [
    ({"resources": {"cpus": 64}}, "more than the"),
    ({"resources": {"cpuset": "60"}}, "CPU 60 does not exist"),
    ({"image": "no-such-image:1"}, "is not on this Docker host (layerbench never pulls); run `docker pull "
                                   "no-such-image:1` where a registry answers, or `docker load -i FILE`"),
    ({"network": "overlay"}, "network"),
])
def test_bad_docker_input_exits_2_before_any_container(tmp_path: Path, variant: dict, expected: str) -> None:
    path = campaign_file(tmp_path, repetitions=1, baseline="v", variants=[{"name": "v", "backend": "docker",
                                                                            **variant}])
    done = run_cli(["run", str(path)])
    assert done.returncode == 2 and expected in done.stderr, done.stderr
    assert labelled() == []


def test_no_daemon_is_bad_input(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, repetitions=1, baseline="v", variants=[{"name": "v", "backend": "docker"}])
    done = run_cli(["run", str(path)], env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"})
    assert done.returncode == 2 and "no Docker daemon answers" in done.stderr, done.stderr


def test_relative_output_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default campaign writes to `results` relative to the current directory; bind mounts need absolute
    paths, so this must work too (it once did not)."""
    monkeypatch.chdir(tmp_path)
    path = campaign_file(tmp_path, repetitions=1, baseline="v", output="results",
                         variants=[{"name": "v", "backend": "docker", "storage": "bind", "client": "container"}],
                         workload=TINY)
    done = run_cli(["run", str(path)])
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "results" / "layerbench.db").exists() and labelled() == []
