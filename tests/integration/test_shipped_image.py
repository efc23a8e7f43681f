"""The old route of a docker server's image on an ssh: host (backends/docker/remote.py prepare): the image built on
this machine from its own packages, sent to the host's daemon by `docker save | docker load`. It is taken when the
host's system has no mariadbd or, as here, when the variant asks for another MariaDB version than the host's
(`server.version` this machine's 10.11, the isolated lab's db has 11.8): the image's own architecture is checked
against db's daemon before anything is sent (a mismatch, made here by reading another architecture, is refused in
one line with nothing sent), then the image on db's daemon is the one built here (its id), the run records where it
came from and both architectures, and the server that answers is this machine's version on a dataset shipped from
here. The test removes the image it sent from db's daemon (the tag only the old route puts there)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from helpers import stored_rows
from layerbench.backends.docker import remote
from layerbench.backends.docker.daemon import docker_client
from layerbench.backends.docker.variant import DockerVariant
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.hosts.architecture import normalise, this_machine
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.run import orchestrator
from layerbench.server.flavour import detect_flavour
from layerbench.server.image import ensure_docker_image, image_tag
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SMALL = {"tables": 1, "table_size": 1000, "threads": 2, "duration": 2, "warmup": 1}
PORTS = "41640-41649"  # never opened: the forwards carry it (reach: ssh)


def campaign(lab: dict, tmp_path: Path, version: str) -> dict:
    tag = secrets.token_hex(3)
    hosts = {**lab["hosts"], "dbalias": {**lab["hosts"]["dbalias"], "reach": "ssh", "ports": PORTS}}
    variant = {"name": f"it-h42-sent-{tag}", "backend": "docker", "network": "bridge", "server_host": "dbalias",
               "client_host": "app", "server": {"flavour": "mariadb", "version": version}}
    return {"name": f"it-h42-ship-{tag}", "baseline": variant["name"], "hosts": hosts, "variants": [variant],
            "workload": SMALL, "repetitions": 1, "estimates_only": True, "busy": "keep",
            "output": str(tmp_path / "out"), "formats": ["md"]}


def test_an_image_sent_by_save_and_load_is_checked_then_runs_on_the_hosts_daemon(isolated_lab: dict, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    command = DockerVariant(name="d", backend="docker").server_command_here()
    assert command is not None, "this machine's mariadbd builds the image that is sent"
    ours = detect_flavour(command, "here").version
    version = ".".join(ours.split(".")[:2])
    db = remote.remote_docker_client(Host("dbalias", HostEntry(**isolated_lab["hosts"]["dbalias"])))
    local, tag = docker_client(), image_tag()
    ensure_docker_image(local, lambda _m: None)
    if remote.image_id(db, tag) is not None:  # left by an earlier run of this test: the old route's tag only
        db.images.remove(tag)
    try:
        data = campaign(isolated_lab, tmp_path, version)
        variant = DockerVariant(**data["variants"][0])
        with monkeypatch.context() as patched:  # an image built for another CPU: refused before anything is sent
            other = "arm64" if this_machine() != "arm64" else "amd64"
            patched.setattr(remote, "image_architecture", lambda _client, _tag: other)
            with pytest.raises(BadInput) as refused:
                remote.RemoteDockerBackend(variant, Host("dbalias", HostEntry(**data["hosts"]["dbalias"]))).prepare(
                    lambda _m: None)
        said = str(refused.value)
        assert said.startswith(f"variants.{variant.name}.server_host: the image built here") and "\n" not in said
        assert f"is built for {other}, but the Docker daemon of host dbalias" in said, said
        assert remote.image_id(db, tag) is None  # nothing sent

        with Store(tmp_path / "out" / "layerbench.db") as store:
            outcome = orchestrator.run_campaign(parse_campaign(data), store)
            runs = stored_rows(store, outcome.campaign_id)
        assert [r["status"] for r in runs] == ["ok"], [r["error"] for r in runs]
        details = json.loads(runs[0]["details"])
        backend = details["environment"]["backend"]
        sent = remote.image_id(db, tag)
        assert sent is not None and sent == remote.image_id(local, tag) == backend["image_id"], (sent, backend)
        assert backend["image_from"] == "this machine's packages, sent by docker save and load", backend
        assert normalise(backend["image_architecture"]) == normalise(backend["daemon_architecture"]) == this_machine()
        assert details["environment"]["server_variables"]["version"].startswith(f"{version}."), details["environment"]
        assert "dataset_on_host" in backend, backend  # the snapshot made here, shipped to db
        assert details["environment"]["placement"]["reach"]["kind"] == "ssh"
    finally:
        if remote.image_id(db, tag) is not None:
            db.images.remove(tag)
