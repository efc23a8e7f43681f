"""MySQL 9.7 in the Docker backend, for real: the image imported from the cached MySQL rootfs (the same bytes the
host backend runs), the container's server started through the flavour's own init and account SQL, the
snapshot made by the rootfs's mysqld restored in the container as in the host variant, both in one campaign, beside
a docker variant whose `mysqld:` is that rootfs's mysqld (its image made from the binary's root filesystem);
and a MySQL that is not built refused by validate with the command that builds it. The rootfs is built here
when missing (about 80 s, cached after); the image is imported once per rootfs."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from layerbench.campaign.models import campaign_as_dict, load_campaign, parse_campaign, smoke_version
from layerbench.run import orchestrator
from layerbench.server.mysql_rootfs import ensure_rootfs
from layerbench.store import Store

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def our_containers(label: str) -> list[str]:
    done = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=layerbench.campaign={label}"],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.fixture(scope="module")
def host_and_docker(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """examples/mysql-container-overhead.yaml in smoke mode (so the examples' smoke test leaves it to this module):
    MySQL 9.7 on the host (the baseline), in a container on a bridge network and on the host's network, plus a
    container of an image made from the root of a `mysqld:` binary (the rootfs's own mysqld), once each (2 s runs),
    on a snapshot of 1 x 1,000 rows checked by CHECKSUM TABLE before each run."""
    rootfs = ensure_rootfs("9.7")
    out = tmp_path_factory.mktemp("mysql-docker")
    name = f"it-mysqldocker-{out.name[-6:]}"
    data = campaign_as_dict(smoke_version(load_campaign(EXAMPLES / "mysql-container-overhead.yaml")))
    data["variants"].append({"name": "binary", "backend": "docker", "mysqld": str(rootfs.root / "usr/sbin/mysqld")})
    data["workloads"][0] |= {"duration": 2, "verify": "checksum"}
    data |= {"name": name, "output": str(out)}
    db = out / "layerbench.db"
    with Store(db) as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store, source_path=None)
    rows = sqlite3.connect(db).execute("SELECT variant, status, tps, details, error FROM runs").fetchall()
    return {"outcome": outcome, "db": db, "out": out, "runs": rows, "name": name, "rootfs": rootfs}


def test_mysql_runs_in_docker_and_restores_the_host_variants_snapshot(host_and_docker: dict) -> None:
    runs = host_and_docker["runs"]
    assert (host_and_docker["outcome"].ok, host_and_docker["outcome"].failed) == (4, 0), runs
    for variant, status, tps, details, error in runs:
        assert status == "ok" and tps > 0, error
        facts = json.loads(details)
        assert facts["environment"]["server_variables"]["version"].startswith("9.7."), variant
        assert facts["reset"]["method"] == "snapshot" and facts["reset"]["checksum_tables"] == 1
    docker = [json.loads(r[3]) for r in runs if r[0].startswith("docker-")]
    assert len(docker) == 2 and all(d["environment"]["backend"]["image"].startswith("layerbench/mysql:9.7.4-")
                                    for d in docker)
    assert {d["environment"]["backend"]["network"] for d in docker} == {"bridge", "host"}
    assert len({json.loads(r[3])["reset"]["snapshot"] for r in runs}) == 1  # one MySQL datadir for all four
    assert our_containers(host_and_docker["name"]) == []


def test_a_mysqld_binary_runs_in_docker_in_an_image_of_its_own_root(host_and_docker: dict) -> None:
    """The `mysqld:` variant's container is an image imported from the binary's root (here the MySQL rootfs, so
    its one layer is the MySQL image's very layer: the same bytes), its server MySQL 9.7 on the restored snapshot."""
    import docker

    from layerbench.server.mysql_image import mysql_image_tag

    runs = [json.loads(r[3]) for r in host_and_docker["runs"] if r[0] == "binary"]
    assert len(runs) == 1
    image = runs[0]["environment"]["backend"]["image"]
    assert image.startswith("layerbench/root:")
    for facts in runs:
        assert facts["environment"]["server_variables"]["version"].startswith("9.7.")
        assert facts["reset"]["method"] == "snapshot" and facts["reset"]["checksum_tables"] == 1
    client = docker.from_env()
    layers = client.images.get(image).attrs["RootFS"]["Layers"]
    assert layers == client.images.get(mysql_image_tag(host_and_docker["rootfs"])).attrs["RootFS"]["Layers"]


def test_the_report_has_both_variants(host_and_docker: dict) -> None:
    from layerbench.analysis.loading import analyze

    with Store(host_and_docker["db"]) as store:
        analysis = analyze(store, host_and_docker["outcome"].campaign_id)
    assert {v.variant for p in analysis.points for v in p.variants} == {"host", "docker-bridge", "docker-host-net",
                                                                        "binary"}
    texts = [d.text(analysis.baseline) for d in analysis.differences]
    assert not any("server flavour and version" in t for t in texts), texts  # the same server on both sides


def test_validate_refuses_a_docker_mysql_that_is_not_built(tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "mysqldocker.yaml"
    path.write_text(yaml.safe_dump({
        "name": "mysqldocker-missing", "baseline": "d",
        "variants": [{"name": "d", "backend": "docker", "server": {"flavour": "mysql", "version": "9.7"}}],
        "workloads": [{"name": "w", "test": "oltp_read_only", "tables": 1, "table_size": 10}]}))
    env = {**os.environ, "LAYERBENCH_CACHE_DIR": str(tmp_path / "empty-cache")}
    done = subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                          text=True, env=env, check=False)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "variants.d.server.version: MySQL 9.7 is not built" in lines[0]
    assert "layerbench server build mysql 9.7" in lines[0]


def test_the_fairness_section_names_the_flavour_defaults_of_a_docker_mysql(tmp_path: Path) -> None:
    """MariaDB in a container against MySQL in a container: the fairness section names the binary-log default
    (read from the container's own server), as for two host variants."""
    from layerbench.analysis.loading import analyze

    ensure_rootfs("9.7")
    data = {
        "name": f"it-mysqldocker-fair-{tmp_path.name[-6:]}", "baseline": "mariadb",
        "variants": [{"name": "mariadb", "backend": "docker"},
                     {"name": "mysql", "extends": "mariadb", "server": {"flavour": "mysql", "version": "9.7"}}],
        "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 2, "warmup": 0},
        "repetitions": 1, "estimates_only": True, "output": str(tmp_path),
    }
    with Store(tmp_path / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store, source_path=None)
        analysis = analyze(store, outcome.campaign_id)
    assert (outcome.ok, outcome.failed) == (2, 0)
    texts = [d.text(analysis.baseline) for d in analysis.differences]
    assert any("binary log (log_bin), a flavour default: ON vs OFF" in t for t in texts), texts
    assert any("server flavour and version: mysql 9.7.4" in t for t in texts), texts
    assert our_containers(data["name"]) == []


def test_without_a_snapshot_the_container_initialises_its_datadir_with_mysqls_own_init(tmp_path: Path) -> None:
    """reset: reprepare: an empty datadir made in the container by `mysqld --initialize-insecure`, then sysbench
    prepares the table against that server."""
    ensure_rootfs("9.7")
    data = {
        "name": f"it-mysqldocker-init-{tmp_path.name[-6:]}", "baseline": "d",
        "variants": [{"name": "d", "backend": "docker", "server": {"flavour": "mysql", "version": "9.7"}}],
        "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 2, "warmup": 0,
                     "reset": "reprepare"},
        "repetitions": 1, "estimates_only": True, "output": str(tmp_path),
    }
    db = tmp_path / "layerbench.db"
    with Store(db) as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store, source_path=None)
    rows = sqlite3.connect(db).execute("SELECT status, tps, details, error FROM runs").fetchall()
    assert outcome.failed == 0 and rows, rows
    for status, tps, details, error in rows:
        facts = json.loads(details)
        assert status == "ok" and tps > 0, error
        assert facts["reset"]["method"] == "reprepare"
        assert facts["environment"]["server_variables"]["version"].startswith("9.7.")
    assert our_containers(data["name"]) == []


# --- an image started through the docker-library entrypoint contract (`image:`), built here for the test -------

UPSTREAM_REPO = "layerbench-test/upstream-mysql"
ENTRYPOINT = Path(__file__).resolve().parent.parent / "data" / "upstream" / "docker-entrypoint.sh"
UPSTREAM_MYCNF = """[mysqld]
user = mysql
datadir = /var/lib/mysql
socket = /var/run/mysqld/mysqld.sock
pid-file = /var/run/mysqld/mysqld.pid
secure-file-priv = NULL
!includedir /etc/mysql/conf.d/
"""
UPSTREAM_SETUP = ("set -e; grep -q '^mysql:' /etc/passwd || echo 'mysql:x:999:999:MySQL:/var/lib/mysql:/bin/false' "
                  ">> /etc/passwd; grep -q '^mysql:' /etc/group || echo 'mysql:x:999:' >> /etc/group; "
                  "mkdir -p /etc/mysql/conf.d /docker-entrypoint-initdb.d /var/lib/mysql")


def files_tar(files: dict[str, tuple[bytes, int]]) -> bytes:
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path, (body, mode) in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(body), mode
            tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


@pytest.fixture(scope="module")
def upstream_image() -> Iterator[str]:
    """An image like the official mysql one (ENTRYPOINT docker-entrypoint.sh, CMD mysqld, VOLUME /var/lib/mysql,
    ENV MYSQL_VERSION), made from layerbench's MySQL 9.7 image with the test's entrypoint; removed at the end."""
    import docker

    from layerbench.server.mysql_image import ensure_mysql_image

    ensure_rootfs("9.7")
    client = docker.from_env()
    base = ensure_mysql_image(client, "9.7", "test")
    tag = f"{UPSTREAM_REPO}:{os.getpid()}"
    builder = client.containers.create(base, ["sh", "-c", UPSTREAM_SETUP], name=f"upstream-build-{os.getpid()}",
                                       network_mode="none")
    try:
        builder.put_archive("/", files_tar({"usr/local/bin/docker-entrypoint.sh": (ENTRYPOINT.read_bytes(), 0o755),
                                            "etc/mysql/my.cnf": (UPSTREAM_MYCNF.encode(), 0o644)}))
        builder.start()
        assert builder.wait(timeout=120)["StatusCode"] == 0, builder.logs().decode(errors="replace")
        builder.commit(repository=UPSTREAM_REPO, tag=str(os.getpid()), changes=[
            'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]', 'CMD ["mysqld"]', "ENV MYSQL_VERSION=9.7.4-2",
            "VOLUME /var/lib/mysql", "EXPOSE 3306"])
    finally:
        builder.remove(force=True)
    try:
        yield tag
    finally:
        client.images.remove(tag, force=True)


def test_an_image_with_the_entrypoint_contract_runs_sysbench_and_says_its_flavour(upstream_image: str,
                                                                                    tmp_path: Path) -> None:
    """`image:` of an image like mysql:8.4: layerbench gives its entrypoint the password file, the database, conf.d
    and initdb.d, the entrypoint initialises the datadir, and the flavour recorded is the one the server names."""
    name = f"it-upstream-{tmp_path.name[-6:]}"
    data = {
        "name": name, "baseline": "upstream",
        "variants": [{"name": "upstream", "backend": "docker", "image": upstream_image,
                      "server": {"config": {"innodb_buffer_pool_size": "64M"}}}],
        "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 2, "warmup": 0},
        "repetitions": 1, "estimates_only": True, "output": str(tmp_path),
    }
    db = tmp_path / "layerbench.db"
    with Store(db) as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store, source_path=None)
    rows = sqlite3.connect(db).execute("SELECT status, tps, details, error FROM runs").fetchall()
    assert (outcome.ok, outcome.failed) == (1, 0), rows
    facts = json.loads(rows[0][2])
    backend = facts["environment"]["backend"]
    assert rows[0][1] > 0 and facts["reset"]["method"] == "reprepare"
    assert (backend["server_flavour"], backend["started_by"]) == ("mysql", "the image's entrypoint")
    assert backend["server_version"].startswith("9.7.") and backend["image"] == upstream_image
    assert facts["environment"]["server_variables"]["innodb_buffer_pool_size"] == str(64 << 20)  # conf.d was read
    assert our_containers(name) == []


def test_validate_refuses_an_image_that_declares_a_server_layerbench_does_not_know(upstream_image: str) -> None:
    """The same image declaring MySQL 5.7 (its MYSQL_VERSION, as the official mysql:5.7 does): refused by validate's
    check of the variant (in-process: the CLI's one line and exit 2 for a BadInput are shown by the unit tests)
    before any container of it starts."""
    import docker

    from layerbench.backends.docker.local import check_variant
    from layerbench.errors import BadInput

    client = docker.from_env()
    old = f"{UPSTREAM_REPO}:{os.getpid()}-57"
    holder = client.containers.create(upstream_image, ["true"], name=f"upstream-57-{os.getpid()}")
    try:
        holder.commit(repository=UPSTREAM_REPO, tag=f"{os.getpid()}-57", changes=["ENV MYSQL_VERSION=5.7.44-1.el7"])
    finally:
        holder.remove(force=True, v=True)
    try:
        variant = parse_campaign({"name": "upstream-old", "baseline": "d", "variants": [
            {"name": "d", "backend": "docker", "image": old}], "workloads": [{"name": "w", "table_size": 10}]})
        with pytest.raises(BadInput) as refused:
            check_variant(client, variant.variant("d"))
        assert str(refused.value).startswith(f"variants.d.image: '{old}' declares MYSQL_VERSION=5.7.44-1.el7")
        assert [c.name for c in client.containers.list(all=True, filters={"ancestor": old})] == []
    finally:
        client.images.remove(old, force=True)
