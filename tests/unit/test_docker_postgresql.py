"""PostgreSQL in the Docker backend without a daemon (backends/docker/postgresql.py, server/postgresql_image.py,
server/image.py's recipes): the container's command per storage, the files it is given, the image's inputs, what
validate refuses of a postgresql docker variant in one line (and every network and storage it takes), the snapshot
and option checks made by this machine's PostgreSQL, and shared_buffers as the server's cache of pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from layerbench.backends.docker import postgresql as dockerpg
from layerbench.backends.docker.local import COPY_DONE, HOST_RESTORED, LOGS, SNAPSHOT
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.secrets import Secret
from layerbench.server import image, postgresql_image
from layerbench.server.postgresql import program
from layerbench.server.settings import ServerSettings, pg_memory_bytes
from layerbench.server.spec import ServerSpec

INSTALLED = program().is_file()
needs_postgresql = pytest.mark.skipif(not INSTALLED, reason="PostgreSQL 15 is not installed (scripts/setup)")


def campaign(**variant: Any) -> Any:
    return parse_campaign({"name": "c", "baseline": "d", "workloads": [{"name": "w", "tables": 1, "table_size": 10}],
                           "variants": [{"name": "d", "backend": "docker", "server": {"flavour": "postgresql"},
                                         **variant}]})


def command(storage: str, snapshot: bool) -> str:
    fill = storage not in HOST_RESTORED or not snapshot
    return dockerpg.container_command(snapshot, fill, LOGS, COPY_DONE, SNAPSHOT)[2]


@pytest.mark.parametrize("storage", ["volume", "bind", "data-container", "container-fs", "tmpfs"])
def test_the_server_runs_as_postgres_on_its_own_datadir_in_every_storage(storage: str) -> None:
    script = command(storage, snapshot=True)
    assert script.startswith("mkdir -p /var/lib/postgresql/data && chown postgres:postgres /var/lib/postgresql/data "
                             "&& chmod 0700 /var/lib/postgresql/data && ")
    assert script.endswith("exec setpriv --reuid=postgres --regid=postgres --clear-groups -- "
                           "/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/data -c "
                           "config_file=/etc/layerbench/postgresql.conf >>/var/log/layerbench/server.log 2>&1")
    copied = f"cp -a /snapshot/. /var/lib/postgresql/data/ && : > /var/log/layerbench/{COPY_DONE}"
    assert (copied in script) == (storage not in HOST_RESTORED)  # else restored on this machine before the start
    assert "initdb" not in script


def test_without_a_snapshot_initdb_makes_the_datadir_as_postgres() -> None:
    script = command("volume", snapshot=False)
    assert ("setpriv --reuid=postgres --regid=postgres --clear-groups -- /usr/lib/postgresql/15/bin/initdb -D "
            "/var/lib/postgresql/data --username=postgres --auth-local=trust --auth-host=scram-sha-256") in script
    assert "cp -a" not in script


def test_the_conf_and_socket_folders_are_the_servers_and_hold_no_password(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("layerbench.server.postgresql.run_as", lambda: None)  # no chown: not the test's to do
    monkeypatch.setattr(dockerpg, "Path", lambda _p: tmp_path / "tmp")  # the socket folder's parent, /tmp
    (tmp_path / "tmp").mkdir()
    private, run_dir = tmp_path / "private", tmp_path / "run"
    private.mkdir()
    spec = ServerSpec("c", "lb-test", run_dir, private, tmp_path / "work", config={"work_mem": "8MB"},
                      password=Secret("s3cret-pw"))
    parts = dockerpg.PostgresContainer(spec, network_host=False, port=5432)
    parts.create_folders(tmp_path / "work" / "docker" / "lb-test")
    conf = (private / "pgconf" / "postgresql.conf").read_text()
    assert "listen_addresses = '0.0.0.0'\nport = 5432\nunix_socket_directories = '/run/layerbench-pg'" in conf
    assert "hba_file = '/etc/layerbench/pg_hba.conf'" in conf and "work_mem = '8MB'" in conf
    assert (run_dir / "postgresql.conf").read_text() == conf  # the file says what ran
    assert "scram-sha-256" in (private / "pgconf" / "pg_hba.conf").read_text()
    for path in [private / "pgconf", *(private / "pgconf").iterdir(), run_dir / "postgresql.conf"]:
        assert "s3cret-pw" not in (path.read_text() if path.is_file() else "")
    assert parts.socket_dir is not None and parts.socket_dir.stat().st_mode & 0o777 == 0o700
    mounts = parts.volumes()
    assert mounts[str(parts.socket_dir)] == {"bind": "/run/layerbench-pg", "mode": "rw"}
    assert mounts[str((private / "pgconf").resolve())] == {"bind": "/etc/layerbench", "mode": "ro"}
    options = parts.options(True, LOGS, COPY_DONE, SNAPSHOT)
    assert options["shm_size"].endswith("m") and int(options["shm_size"][:-1]) >= 64
    parts.remove()
    assert not (private / "pgconf").exists() and not parts.socket_dir


def test_the_postgresql_image_is_keyed_by_its_packages_and_the_postgres_users_ids(monkeypatch: pytest.MonkeyPatch,
                                                                                  ) -> None:
    versions = {"postgresql-15": "15.18-0+deb12u1", "postgresql-client-15": "15.18-0+deb12u1",
                "sysbench": "1.0.20+ds-5", "mariadb-server": "1:10.11.19", "mariadb-client": "1:10.11.19"}
    monkeypatch.setattr(image, "installed_version", versions.__getitem__)
    monkeypatch.setattr(image, "mirror", lambda: "http://deb.debian.org/debian")
    monkeypatch.setattr(postgresql_image, "postgres_ids", lambda: (101, 104))
    inputs = image.image_inputs(postgresql_image.RECIPE)
    assert inputs["postgres_uid"] == "101" and inputs["postgres_gid"] == "104"
    assert inputs["postgresql-15"] == "15.18-0+deb12u1" and "mariadb-server" not in inputs
    key = image.image_key(postgresql_image.RECIPE)
    assert postgresql_image.postgresql_image_tag() == f"layerbench/postgresql:{key}"
    monkeypatch.setattr(postgresql_image, "postgres_ids", lambda: (105, 104))
    assert image.image_key(postgresql_image.RECIPE) != key  # another uid: another image
    # MariaDB's inputs are those it always had (its cached image and rootfs keep their key)
    assert set(image.image_inputs()) == {"recipe", "suite", "mirror", "mariadb-server", "mariadb-client", "sysbench"}
    script = image.chroot_script(inputs, postgresql_image.RECIPE)
    assert script.index("useradd --system --uid 105 --gid 104") < script.index("apt-get install")
    assert "postgresql-15=15.18-0+deb12u1 postgresql-client-15=15.18-0+deb12u1 sysbench=1.0.20+ds-5" in script
    assert "rm -rf /var/lib/postgresql/15 /etc/postgresql/15" in script  # the package's own cluster


@needs_postgresql
@pytest.mark.parametrize("network", ["bridge", "bridge-direct", "host"])
@pytest.mark.parametrize("storage", ["volume", "bind", "data-container", "container-fs", "tmpfs"])
def test_every_network_and_storage_takes_postgresql(network: str, storage: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr(dockerpg.pg, "check_reachable", lambda *_a: None)
    variant = campaign(network=network, storage=storage).variant("d")
    variant.check_server_here()
    assert "the local PostgreSQL image" in variant.describe_plan()


@needs_postgresql
@pytest.mark.parametrize(("extra", "says"), [
    ({"image": "postgres:15"}, "variants.d.image: a postgresql docker variant runs the PostgreSQL image layerbench "
     "builds from this machine's postgresql-15"),
    ({"mysqld": "/usr/sbin/mariadbd"}, "variants.d.mysqld: a postgresql variant runs this machine's PostgreSQL"),
    ({"server": {"flavour": "postgresql", "version": "16"}}, "variants.d.server.version: PostgreSQL 15."),
])
def test_what_a_postgresql_docker_variant_cannot_be_is_one_line(extra: dict, says: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr(dockerpg.pg, "check_reachable", lambda *_a: None)
    with pytest.raises(BadInput, match="^" + says.replace(".", r"\.")) as refused:
        campaign(**extra).variant("d").check_server_here()
    assert "\n" not in str(refused.value)


@needs_postgresql
def test_not_root_is_refused_because_the_files_are_the_postgres_users(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(BadInput, match=r"^variants\.d\.server\.flavour: PostgreSQL in Docker needs layerbench run as "
                       "root here"):
        campaign().variant("d").check_server_here()


@needs_postgresql
def test_the_snapshot_and_the_settings_are_this_machines_postgresql() -> None:
    """The dataset is made by this machine's PostgreSQL (the host variant's snapshot: the image installs the same
    package), and server.config is checked by the same postgres."""
    variant = campaign().variant("d")
    chosen = variant.snapshot_server()
    assert (chosen.flavour, chosen.mysqld) == ("postgresql", None)
    assert variant.server_command_here() == (str(program("postgres")),)
    assert variant.checks_options_here(True)


def test_shared_buffers_is_a_postgresql_variants_cache_of_pages() -> None:
    """Read as PostgreSQL reads it (8 kB blocks without a unit; kB, MB, GB, TB), so a derived memory limit (a QoS
    preset) holds it, and a limit below it is refused."""
    assert [pg_memory_bytes(v) for v in ("4GB", "128MB", 16384, "16384", "1024kB", "lots", True, "1.5GB")] == [
        4 << 30, 128 << 20, 128 << 20, 128 << 20, 1 << 20, None, None, None]
    settings = ServerSettings(flavour="postgresql", config={"shared_buffers": "4GB"})
    assert settings.buffer_pool_option() == ("shared_buffers", "4GB")
    assert settings.memory_for() == (4 << 30) + (512 << 20)
    assert ServerSettings(config={"shared_buffers": "4GB"}).buffer_pool_bytes() is None  # not MariaDB's
    assert campaign(qos="guaranteed", server={"flavour": "postgresql", "config": {"shared_buffers": "3GB"}}
                    ).variant("d").derived_memory() == "3584m"
    with pytest.raises(BadInput, match=r"variants\.d\.resources\.memory: 1g is below the shared_buffers this variant "
                       r"asks for \(server\.config\.shared_buffers: 3GB\)"):
        campaign(resources={"memory": "1g"}, server={"flavour": "postgresql", "config": {"shared_buffers": "3GB"}})
