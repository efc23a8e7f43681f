"""Server flavours from real `--version` lines: the MySQL path's commands and SQL are checked here, because no
MySQL or Percona binary can be installed on these machines; MariaDB's path also runs in the integration tests."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.errors import BadInput
from layerbench.secrets import Secret
from layerbench.server.flavour import MARIADB, detect_flavour, init_sql, parse_version
from layerbench.server.mycnf import merged_settings

# What each server's binary prints for --version (copied from the servers' own packages)
VERSIONS = {
    "/usr/sbin/mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)":
        ("mariadb", "10.11.6"),
    "/usr/sbin/mariadbd  Ver 11.4.2-MariaDB-ubu2404 for debian-linux-gnu on x86_64 (mariadb.org binary distribution)":
        ("mariadb", "11.4.2"),
    "/usr/sbin/mysqld  Ver 10.6.16-MariaDB-0ubuntu0.22.04.1 for debian-linux-gnu on x86_64 (Ubuntu 22.04)":
        ("mariadb", "10.6.16"),
    "/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)": ("mysql", "8.0.36"),
    "/usr/sbin/mysqld  Ver 8.0.36-0ubuntu0.22.04.1 for Linux on x86_64 ((Ubuntu))": ("mysql", "8.0.36"),
    "/usr/sbin/mysqld  Ver 8.4.0 for Linux on x86_64 (MySQL Community Server - GPL)": ("mysql", "8.4.0"),
    "/usr/sbin/mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28, Revision 47601f19)":
        ("percona", "8.0.36"),
}


@pytest.mark.parametrize(("text", "expected"), VERSIONS.items())
def test_flavour_from_real_version_lines(text: str, expected: tuple[str, str]) -> None:
    flavour = parse_version(text)
    assert flavour is not None and (flavour.name, flavour.version) == expected


@pytest.mark.parametrize("text", [
    "/usr/sbin/mysqld  Ver 5.7.44 for Linux on x86_64 (MySQL Community Server (GPL))",  # before 8.0: not supported
    "/usr/sbin/mysqld  Ver 5.6.51 for Linux on x86_64 (MySQL Community Server (GPL))",
    "/usr/sbin/mysqld  Ver 5.7.44-48 for Linux on x86_64 (Percona Server (GPL), Release 48, Revision 497f936a373)",
    "/usr/sbin/mysqld  Ver 10.3.39-MariaDB-0+deb10u2 for debian-linux-gnu on x86_64 (Debian 10)",  # before 10.4
    "/usr/libexec/mysqld  Ver 5.5.68-MariaDB for Linux on x86_64 (MariaDB Server)",
    "bash, version 5.2.15(1)-release", "", "Ver", "sysbench 1.0.20",
])
def test_unknown_servers_are_refused(text: str) -> None:
    assert parse_version(text) is None


@given(st.text(max_size=300))
def test_the_version_parser_never_crashes(text: str) -> None:
    flavour = parse_version(text)
    assert flavour is None or flavour.name in ("mariadb", "mysql", "percona")


def test_mysql_makes_its_datadir_with_initialize_insecure() -> None:
    mysql = parse_version("/usr/sbin/mysqld  Ver 8.4.0 for Linux on x86_64 (MySQL Community Server - GPL)")
    assert mysql is not None
    cmd = mysql.init_command("/opt/mysql/bin/mysqld", Path("/data/d"), ["--innodb-page-size=8k"])
    assert cmd == ["/opt/mysql/bin/mysqld", "--no-defaults", "--initialize-insecure", "--datadir=/data/d",
                   "--user=root", "--innodb-page-size=8k"]  # --no-defaults must come first


def test_mariadb_makes_its_datadir_with_install_db(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    own = tmp_path / "bin" / "mariadb-install-db"
    own.write_text("#!/bin/sh\n")
    cmd = MARIADB.init_command(str(tmp_path / "bin" / "mariadbd"), Path("/data/d"))
    assert cmd[0] == str(own)  # the install-db of the same build, not the one on PATH
    assert "--auth-root-authentication-method=socket" in cmd and "--datadir=/data/d" in cmd


def test_account_sql_is_accepted_by_mysql_and_mariadb() -> None:
    sql = init_sql("sbtest", Secret("pw'x"), "sbtest")
    assert "CREATE OR REPLACE" not in sql  # a MariaDB extension MySQL 8 rejects
    assert sql.splitlines() == [
        "CREATE DATABASE IF NOT EXISTS `sbtest`;",
        "DROP USER IF EXISTS 'sbtest'@'%';",
        "CREATE USER 'sbtest'@'%' IDENTIFIED BY 'pw\\'x';",
        "GRANT ALL PRIVILEGES ON *.* TO 'sbtest'@'%';",
    ]


def test_mysql_defaults_turn_off_the_x_plugin_but_the_variant_wins() -> None:
    mysql = parse_version("/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)")
    assert mysql is not None and merged_settings({}, {}, mysql.defaults)["mysqlx"] == "OFF"
    assert merged_settings({}, {"mysqlx": "ON"}, mysql.defaults)["mysqlx"] == "ON"
    assert "mysqlx" not in merged_settings({}, {}, MARIADB.defaults)


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-server"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_a_binary_that_is_no_known_server_is_one_line_of_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as error:
        detect_flavour(script(tmp_path, "echo 'mystery-db 3.1'"), "variants.x.mysqld")
    assert str(error.value).startswith("variants.x.mysqld: ") and "\n" not in str(error.value)
    assert "mystery-db 3.1" in str(error.value)


def test_a_binary_that_hangs_is_refused_not_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("layerbench.server.flavour.VERSION_TIMEOUT", 0.5)
    with pytest.raises(BadInput, match="did not answer"):
        detect_flavour(script(tmp_path, "exec sleep 30"), "variants.y.mysqld")


def test_the_installed_mariadb_is_detected() -> None:
    import shutil

    binary = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin")
    if binary is None:
        pytest.skip("no mariadbd here")
    assert detect_flavour(binary, "variants.h.mysqld").name == "mariadb"


def test_validate_refuses_an_unknown_server_binary_with_exit_2(tmp_path: Path) -> None:
    from tests.unit.test_hostile_inputs import assert_one_line_bad_input, validate

    fake = script(tmp_path, "echo 'PostgreSQL 16.1'")
    campaign = tmp_path / "c.yaml"
    campaign.write_text(f"""name: flavour-unknown-{tmp_path.name[-6:]}
baseline: a
variants:
  - {{name: a, backend: host}}
  - {{name: b, backend: host, mysqld: {fake}}}
workloads:
  - {{name: w, test: oltp_read_only, tables: 1, table_size: 100, duration: 5, warmup: 0}}
""")
    code, err = validate(campaign)
    assert_one_line_bad_input(code, err)
    assert "variants.b.mysqld" in err and "PostgreSQL 16.1" in err


def test_a_host_variant_prepares_its_snapshot_with_its_own_server() -> None:
    """A MySQL datadir is not MariaDB's: each host variant's snapshot is made (and keyed) by its own server, so no
    MySQL variant needs reset: reprepare; docker/vm/kubernetes variants keep this host's MariaDB."""
    from layerbench.campaign.models import parse_campaign
    from layerbench.server.servers import server_fields, server_from_fields

    data = {"name": "f", "baseline": "a", "variants": [
        {"name": "a", "backend": "host"},
        {"name": "m", "backend": "host", "server": {"flavour": "mysql", "version": "9.7", "config": {"x": 1}}},
        {"name": "d", "backend": "docker", "server": {"flavour": "mariadb"}},
        {"name": "v", "backend": "vm", "server": {"flavour": "mysql", "version": "9.7"}},
        {"name": "r", "backend": "host", "server_host": "far", "server": {"flavour": "mysql", "version": "9.7"}}],
        "hosts": {"far": {"ssh": "root@192.0.2.7"}},
        "workloads": [{"name": "w", "test": "oltp_read_only", "tables": 1, "table_size": 100}]}
    campaign = parse_campaign(data)
    for name in ("v", "r"):  # the guest's, or the ssh: host's, mysqld is the rootfs's made here: the same snapshot
        assert campaign.variant(name).snapshot_server() == campaign.variant("m").snapshot_server()
    mysql = campaign.variant("m").snapshot_server()
    assert (mysql.server.flavour, mysql.server.version, mysql.server.config) == ("mysql", "9.7", {})
    assert campaign.variant("a").snapshot_server().server.flavour is None
    assert campaign.variant("d").snapshot_server().server.flavour is None
    again = server_from_fields("verify", server_fields(mysql))
    assert (again.server.flavour, again.server.version, again.name) == ("mysql", "9.7", "verify")
    assert server_from_fields("verify", None).server.flavour is None  # a snapshot from before: this host's MariaDB


@pytest.mark.parametrize(("line", "said"), [
    ("/usr/sbin/mysqld  Ver 10.3.39-MariaDB-0+deb10u2 for debian-linux-gnu on x86_64", "10.3.39-MariaDB"),
    ("/usr/sbin/mysqld  Ver 5.6.51 for Linux on x86_64 (MySQL Community Server (GPL))", "5.6.51"),
    ("/usr/sbin/mysqld  Ver 5.7.44-48 for Linux on x86_64 (Percona Server (GPL), Release 48)", "5.7.44-48"),
])
def test_validate_refuses_a_server_it_cannot_start_with_exit_2(tmp_path: Path, line: str, said: str) -> None:
    """A MariaDB 10.3 binary (its install script lacks an option layerbench passes), MySQL 5.6, Percona Server 5.7
    (before --initialize-insecure and caching_sha2_password): real `--version` lines."""
    from tests.unit.test_hostile_inputs import assert_one_line_bad_input, validate

    old = script(tmp_path, f"echo '{line}'")
    campaign = tmp_path / "c.yaml"
    campaign.write_text(f"""name: flavour-old-{tmp_path.name[-6:]}
baseline: a
variants:
  - {{name: a, backend: host, mysqld: {old}}}
workloads:
  - {{name: w, test: oltp_read_only, tables: 1, table_size: 100, duration: 5, warmup: 0}}
""")
    code, err = validate(campaign)
    assert_one_line_bad_input(code, err)
    assert "variants.a.mysqld" in err and said in err and "MariaDB 10.4 or later" in err
