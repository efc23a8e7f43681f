"""A server is a flavour and a version: the campaign's `server: {flavour, version}`, the MySQL rootfs's version
pins, what validate says when a server is not there, the account SQL per flavour and the fairness section for
two flavours."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from layerbench.analysis.fairness import FLAVOUR_DEFAULTS, fairness_differences, flavour_differences
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.secrets import Secret
from layerbench.server.flavour import parse_version
from layerbench.server.mysql_rootfs import RELEASES, installed_versions, pinned

MYSQL_97 = "/r/usr/sbin/mysqld  Ver 9.7.4-2 for Linux on x86_64 ((Debian))"


def campaign_data(server: object, backend: str = "host") -> dict:
    return {"name": "sc", "baseline": "a", "variants": [{"name": "a", "backend": backend, "server": server}],
            "workloads": [{"name": "w", "test": "oltp_read_only", "tables": 1, "table_size": 10}]}


def test_a_variant_names_its_flavour_and_version_and_extends_inherits_them() -> None:
    data = campaign_data({"flavour": "mysql", "version": "9.7"})
    data["variants"].append({"name": "b", "extends": "a", "server": {"config": {"sync_binlog": 0}}})
    b = parse_campaign(data).variant("b")
    assert (b.server.flavour, b.server.version, b.server.config) == ("mysql", "9.7", {"sync_binlog": 0})


@pytest.mark.parametrize(("server", "expected"), [
    ({"flavour": "mysql", "version": "nine"}, "variants[0].server.version: 'nine' is not a version"),
    ({"flavour": "mysql", "version": 10.10}, "is a number; write the version quoted"),
    ({"flavour": "mysql", "version": "[/x]"}, "'[/x]' is not a version"),
    ({"flavour": "mysql", "version": ["9.7"]}, "is not a version"),
    ({"flavour": "mysql", "version": "9.7\n[mysqld]"}, "is not a version"),
    ({"flavour": "mysql", "version": 10**400}, "is not a version"),
    ({"flavour": "postgres"}, "variants[0].server.flavour"),
    ({"version": "9.7"}, "give the flavour too"),
])
def test_a_bad_server_choice_is_one_line(server: dict, expected: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_campaign(campaign_data(server))
    assert expected in str(caught.value) and "\n" not in str(caught.value)


@given(st.one_of(st.text(max_size=40), st.integers(), st.floats(), st.lists(st.text(max_size=3), max_size=2),
                 st.none()))
def test_any_version_value_parses_or_is_one_line(value: object) -> None:
    try:
        parse_campaign(campaign_data({"flavour": "mysql", "version": value}))
    except BadInput as error:
        assert "\n" not in str(error)


def test_versions_resolve_to_the_pinned_package() -> None:
    assert pinned("9.7") == pinned("9.7.4") == pinned("9") == RELEASES["9.7"]
    assert pinned("8.0") is None and pinned("9.77") is None and pinned("9.7.5") is None


def test_the_rootfs_package_list_is_read_from_its_dpkg_status(tmp_path: Path) -> None:
    status = tmp_path / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    status.write_text("Package: mysql-server-core\nStatus: install ok installed\nVersion: 9.7.4-2\n\n"
                      "Package: libc6\nVersion: 2.43-7\n")
    assert installed_versions(tmp_path) == {"mysql-server-core": "9.7.4-2", "libc6": "2.43-7"}


def test_mysql_9_is_a_known_flavour_and_its_account_uses_caching_sha2() -> None:
    mysql = parse_version(MYSQL_97)
    assert mysql is not None and (mysql.name, mysql.version, mysql.major) == ("mysql", "9.7.4", 9)
    sql = mysql.account_sql("sbtest", Secret("pw"), "sbtest")
    assert "IDENTIFIED WITH caching_sha2_password BY 'pw'" in sql
    mariadb = parse_version("mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64")
    assert mariadb is not None and "IDENTIFIED BY 'pw'" in mariadb.account_sql("sbtest", Secret("pw"), "sbtest")


def test_mysql_init_runs_through_the_loader_with_the_rootfs_paths() -> None:
    mysql = parse_version(MYSQL_97)
    assert mysql is not None
    loader = ("/r/lib64/ld-linux-x86-64.so.2", "--library-path", "/r/usr/lib/x86_64-linux-gnu", "/r/usr/sbin/mysqld")
    cmd = mysql.init_command(loader, Path("/d"), ["--innodb-page-size=8k"], ["--plugin-dir=/r/usr/lib/mysql/plugin"])
    assert cmd == [*loader, "--no-defaults", "--initialize-insecure", "--datadir=/d", "--user=root",
                   "--plugin-dir=/r/usr/lib/mysql/plugin", "--innodb-page-size=8k"]


MARIADB_VARS = {"version": "10.11.19-MariaDB-0+deb12u1", "log_bin": "OFF", "sync_binlog": "0",
                "innodb_doublewrite": "ON", "innodb_log_file_size": "100663296", "innodb_flush_method": "O_DIRECT",
                "thread_handling": "one-thread-per-connection", "have_ssl": "DISABLED", "aria_block_size": "8192",
                "performance_schema": "OFF"}
MYSQL_VARS = {"version": "9.7.4-2", "log_bin": "ON", "sync_binlog": "1", "innodb_doublewrite": "ON",
              "innodb_redo_log_capacity": "104857600", "innodb_log_file_size": "50331648",
              "innodb_log_files_in_group": "2", "innodb_flush_method": "O_DIRECT",
              "thread_handling": "one-thread-per-connection", "tls_version": "TLSv1.2,TLSv1.3",
              "mysqlx": "OFF", "performance_schema": "ON"}


def test_two_flavours_are_compared_by_their_differing_defaults_only() -> None:
    found = {d.what: (d.baseline_value, d.variant_value) for d in flavour_differences("m", MARIADB_VARS, MYSQL_VARS,
                                                                                        set())}
    assert found["binary log (log_bin), a flavour default"] == ("OFF", "ON")
    assert found["binary log sync (sync_binlog), a flavour default"] == ("0", "1")
    assert any(w.startswith("redo log size") for w in found) and any(w.startswith("TLS offered") for w in found)
    assert not any("doublewrite" in w or "aria" in w or "mysqlx" in w for w in found)  # equal / one flavour's only
    assert found["server flavour and version"][1] == "mysql 9.7.4-2"
    assert found["instrumentation (performance_schema), a flavour default"] == ("OFF", "ON")


def test_percona_is_named_by_its_version_comment_and_compared_with_mysql_as_another_flavour() -> None:
    from layerbench.analysis.fairness import server_flavour

    percona = {**MYSQL_VARS, "version": "8.0.36-28", "version_comment": "Percona Server (GPL), Release 28, Revision x"}
    mysql = {**MYSQL_VARS, "version_comment": "MySQL Community Server - GPL"}
    assert server_flavour(percona) == "percona" and server_flavour(mysql) == "mysql"
    assert server_flavour({**MARIADB_VARS, "version_comment": "Debian 12"}) == "mariadb"
    assert server_flavour({"version_comment": "Percona Server"}) is None  # no version read: nothing said
    found = {d.what: (d.baseline_value, d.variant_value) for d in flavour_differences("p", mysql, percona, set())}
    assert found["server flavour and version"] == ("mysql 9.7.4-2", "percona 8.0.36-28")


def test_the_binlog_sync_is_not_reported_when_neither_side_writes_a_binary_log() -> None:
    matched = {**MYSQL_VARS, "log_bin": "OFF"}  # skip-log-bin: sync_binlog stays 1 but writes nothing
    whats = [d.what for d in flavour_differences("m", MARIADB_VARS, matched, {"skip_log_bin"})]
    assert not any("binary log" in w for w in whats)


def test_a_default_the_campaign_set_is_not_reported() -> None:
    asked = {"log_bin", "sync_binlog", "innodb_redo_log_capacity"}
    whats = [d.what for d in flavour_differences("m", MARIADB_VARS, MYSQL_VARS, asked)]
    assert not any("binary log" in w or "redo" in w for w in whats)
    assert {k for k, _ in FLAVOUR_DEFAULTS} >= {"log_bin", "sync_binlog", "innodb_doublewrite", "innodb_flush_method"}


def test_one_flavour_keeps_the_variable_by_variable_comparison() -> None:
    from layerbench.records import Environment

    base = Environment.from_json({"server_variables": MARIADB_VARS})
    other = Environment.from_json({"server_variables": {**MARIADB_VARS, "sync_binlog": "1"}})
    whats = [d.what for d in fairness_differences("a", {"a": base, "b": other}, {})]
    assert whats == ["server variable sync_binlog"]


def run_validate(tmp_path: Path, data: dict, env: dict[str, str]) -> subprocess.CompletedProcess:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.mark.parametrize("backend", ["host", "vm", "kubernetes"])
def test_validate_refuses_a_mysql_that_is_not_built_with_the_command_that_builds_it(tmp_path: Path,
                                                                                   backend: str) -> None:
    import os

    env = {**os.environ, "LAYERBENCH_CACHE_DIR": str(tmp_path / "empty-cache")}
    if backend == "kubernetes":  # said first, whether or not a cluster answers (here: none does)
        env["KUBECONFIG"] = str(tmp_path / "kubeconfig")
        (tmp_path / "kubeconfig").write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": {}}]}))
    done = run_validate(tmp_path, campaign_data({"flavour": "mysql", "version": "9.7"}, backend), env)
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "variants.a.server.version: MySQL 9.7 is not built" in lines[0]
    assert "layerbench server build mysql 9.7" in lines[0]
    unknown = run_validate(tmp_path, campaign_data({"flavour": "mysql", "version": "8.0"}, backend), env)
    assert unknown.returncode == 2 and "MySQL '8.0' is not a version layerbench can build" in unknown.stderr


@pytest.mark.parametrize("backend", ["external"])
def test_validate_refuses_mysql_on_other_backends_for_now(tmp_path: Path, backend: str) -> None:
    import os

    data = campaign_data({"flavour": "mysql", "version": "9.7"}, backend)
    data["workloads"][0]["reset"] = "reprepare"  # an external server's tables are the user's: never a snapshot
    done = run_validate(tmp_path, data, dict(os.environ))
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert (f"variants.a.server.flavour: mysql runs on the host, docker, vm and kubernetes backends, not yet on "
            f"{backend}" in lines[0])


@pytest.mark.parametrize("backend", ["host", "docker"])
def test_validate_refuses_a_mariadb_version_that_is_not_installed(tmp_path: Path, backend: str) -> None:
    import os

    done = run_validate(tmp_path, campaign_data({"flavour": "mariadb", "version": "11.4"}, backend),
                        dict(os.environ))
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "variants.a.server.version: MariaDB 10.11" in lines[0] and "not mariadb 11.4" in lines[0]


def test_server_build_refuses_what_it_cannot_build(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "LAYERBENCH_CACHE_DIR": str(tmp_path / "cache")}
    for args, expected in ((["mariadb", "11"], "flavour: 'mariadb' is not one layerbench builds"),
                           (["mysql", "5.7"], "MySQL '5.7' is not a version layerbench can build")):
        done = subprocess.run([sys.executable, "-m", "layerbench", "server", "build", *args], capture_output=True,
                              text=True, timeout=60, env=env)
        assert done.returncode == 2 and expected in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.deb"))


@pytest.mark.parametrize("backend", ["docker", "vm"])
def test_validate_refuses_a_docker_or_vm_mysql_on_an_ssh_host_pointing_at_the_host_backend(tmp_path: Path,
                                                                                         backend: str) -> None:
    """Refused before any host is reached (192.0.2.7 is a documentation address: nothing is sent to it)."""
    import os

    data = campaign_data({"flavour": "mysql", "version": "9.7"}, backend)
    data["hosts"] = {"far": {"ssh": "root@192.0.2.7"}}
    data["variants"][0]["server_host"] = "far"
    done = run_validate(tmp_path, data, dict(os.environ))
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert (f"a mysql {backend} variant runs on this machine only, not yet on an ssh: host; use backend: host"
            in lines[0])
