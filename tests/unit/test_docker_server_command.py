"""The Docker backend's container command comes from the server's flavour (servers.image_server): MariaDB's
install script or MySQL's `--initialize-insecure`, then the flavour's program; and what a docker MySQL variant
refuses for now (validate's one line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench.backends.docker.local import HOST_RESTORED, IMAGE_MARIADB, server_command
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.server.flavour import MYSQL_DEFAULTS, Flavour
from layerbench.server.servers import ServerProgram

MYSQL = ServerProgram(Flavour("mysql", "9.7.4", dict(MYSQL_DEFAULTS)), ("/usr/sbin/mysqld",))


def test_mysql_container_is_initialised_and_started_by_the_mysql_flavour() -> None:
    script = server_command(MYSQL, snapshot=False, storage="volume")[2]
    assert "/usr/sbin/mysqld --no-defaults --initialize-insecure --datadir=/var/lib/mysql --user=root" in script
    assert "exec /usr/sbin/mysqld --defaults-file=/etc/layerbench/my.cnf" in script
    assert "mariadb" not in script


def test_mariadb_container_keeps_its_install_script_and_program() -> None:
    script = server_command(IMAGE_MARIADB, snapshot=False, storage="volume")[2]
    assert script.startswith("mkdir -p /var/lib/mysql /run/mysqld && mariadb-install-db --no-defaults")
    assert "exec mariadbd --defaults-file=" in script


@pytest.mark.parametrize("storage", ["volume", "bind", "container-fs"])
def test_a_snapshot_is_copied_unless_the_host_restored_it(storage: str) -> None:
    script = server_command(MYSQL, snapshot=True, storage=storage)[2]
    assert ("cp -a /snapshot/. /var/lib/mysql/" in script) == (storage not in HOST_RESTORED)
    assert "--initialize" not in script


@pytest.mark.parametrize(("extra", "expected"), [
    ({"image": "mysql:8.4"}, "variants.d.image: server.flavour mysql runs in the image layerbench imports"),
    ({"client": "container"}, "variants.d.client: sysbench in a container beside MySQL: not yet"),
])
def test_a_docker_mysql_variant_refuses_what_is_not_there_yet(extra: dict, expected: str) -> None:
    data = {"name": "c", "baseline": "d", "workloads": [{"name": "w", "tables": 1, "table_size": 10}],
            "variants": [{"name": "d", "backend": "docker", "server": {"flavour": "mysql", "version": "9.7"},
                          **extra}]}
    with pytest.raises(BadInput, match=expected):
        parse_campaign(data).variant("d").check_server_here()


def test_a_docker_mysql_snapshot_is_made_by_the_rootfs_mysql_of_its_version() -> None:
    data = {"name": "c", "baseline": "d", "workloads": [{"name": "w", "tables": 1, "table_size": 10}],
            "variants": [{"name": "d", "backend": "docker", "server": {"flavour": "mysql", "version": "9.7"}},
                         {"name": "m", "backend": "docker"}]}
    campaign = parse_campaign(data)
    chosen = campaign.variant("d").snapshot_server()
    assert chosen is not None and (chosen.flavour, chosen.version, chosen.mysqld) == ("mysql", "9.7", None)
    assert campaign.variant("m").snapshot_server().server.flavour is None  # this host's MariaDB, as before


def test_the_plan_counts_the_mysql_image_import_not_the_mariadb_image(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", str(tmp_path / "empty-cache"))
    data = {"name": "c", "baseline": "d", "workloads": [{"name": "w", "tables": 1, "table_size": 10}],
            "variants": [{"name": "d", "backend": "docker", "server": {"flavour": "mysql", "version": "9.7"}}]}
    costs = parse_campaign(data).variant("d").first_time_costs()
    assert [c.what for c in costs] == ["the MySQL 9.7 image, imported once from its rootfs (docker import)"]
    assert costs[0].cached() is False  # no rootfs in this cache: nothing imported from it
