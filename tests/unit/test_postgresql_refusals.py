"""validate's refusals for `server: {flavour: postgresql}` (backends/variant_base.py, run/preflight.py,
server/postgresql.py, sysbench/options.py): each is exit 2 and one line naming the field, the value and the fix;
and a campaign PostgreSQL can run is valid. Runs `layerbench validate` in-process against this machine's
PostgreSQL 15 (`postgres --describe-config`)."""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_hostile_inputs import VALID, assert_one_line_bad_input, validate

from helpers import folders_postgres_enters
from layerbench.server.postgresql import program

pytestmark = pytest.mark.skipif(not program().is_file(), reason="PostgreSQL 15 is not installed (scripts/setup)")


def campaign(tmp_path: Path, server: dict[str, Any], backend: str = "host", **workload: Any) -> Path:
    data = copy.deepcopy(VALID)
    data["name"] = "it-pg-refusals"
    data["variants"] = [{"name": "pg", "backend": backend, "server": {"flavour": "postgresql", **server}}]
    data["baseline"] = "pg"
    data["workload"].update(workload)
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def changed(path: Path, variant: dict[str, Any], **top: Any) -> Path:
    """The campaign file at `path` with these fields added to its variant (and these top-level keys)."""
    data = yaml.safe_load(path.read_text())
    data["variants"][0].update(variant)
    data.update(top)
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def reachable_folders() -> Iterator[Path]:
    """Work and dataset folders the server's user `postgres` can enter (pytest's own are 0700)."""
    with folders_postgres_enters("lb-test-pg-") as base:
        yield base


def test_the_external_backend_refuses_postgresql_for_now(tmp_path: Path) -> None:
    path = changed(campaign(tmp_path, {}, "external"), {"host": "127.0.0.1", "port": 5432, "user": "u"})
    code, err = validate(path)
    assert_one_line_bad_input(code, err)
    assert ("variants.pg.server.flavour: postgresql is not yet in the external backend; use backend: host, "
            "docker, vm or kubernetes") in err


@pytest.mark.parametrize(("key", "value", "says"), [
    ("innodb_buffer_pool_size", "1G", "variants.pg.server.config.innodb_buffer_pool_size: 'innodb_buffer_pool_size' "
     "is a MySQL/MariaDB (my.cnf) option; a postgresql variant's server.config holds postgresql.conf settings: "
     "PostgreSQL's nearest is shared_buffers"),
    ("skip-log-bin", True, "variants.pg.server.config.skip-log-bin: 'skip-log-bin' is a MySQL/MariaDB (my.cnf)"),
    ("shared_bufers", "1GB", "variants.pg.server.config.shared_bufers: 'shared_bufers': PostgreSQL has no such "
     "setting that postgresql.conf can set (did you mean shared_buffers"),
    ("unix_socket_directories", "/tmp", "variants.pg.server.config.unix_socket_directories: 'unix_socket_directories'"
     " is set by layerbench for each run; remove it"),
    ("work_mem", None, "variants.pg.server.config.work_mem: 'work_mem' has no value"),
    # the server's own reading of the file (postgres -C): types, units and ranges
    ("shared_buffers", "lots", "variants.pg.server.config.shared_buffers: PostgreSQL refuses it (invalid value for "
     "parameter \"shared_buffers\": \"lots\"); fix the value"),
    ("Work_Mem", "6kB", "variants.pg.server.config.Work_Mem: PostgreSQL refuses it (6 kB is outside the valid range "
     "for parameter \"work_mem\" (64 .. 2147483647)); fix the value"),
    ("fsync", "maybe", "variants.pg.server.config.fsync: PostgreSQL refuses it (parameter \"fsync\" requires a "
     "Boolean value); fix the value"),
    ("synchronous_commit", "sometimes", "variants.pg.server.config.synchronous_commit: PostgreSQL refuses it (invalid "
     "value for parameter \"synchronous_commit\": \"sometimes\")"),
])
def test_a_setting_postgresql_does_not_take_is_refused(tmp_path: Path, key: str, value: Any, says: str) -> None:
    code, err = validate(campaign(tmp_path, {"config": {key: value}}))
    assert_one_line_bad_input(code, err)
    assert says in err


def test_an_option_of_sysbench_mysql_driver_is_refused_on_a_postgresql_variant(tmp_path: Path) -> None:
    code, err = validate(campaign(tmp_path, {}, options={"mysql_storage_engine": "MyISAM"}))
    assert_one_line_bad_input(code, err)
    assert ("workloads.default.options.mysql_storage_engine: 'mysql_storage_engine': the bundled scripts read it for "
            "MySQL's CREATE TABLE ... ENGINE= only; sysbench's pgsql driver never reads it") in err


def test_a_buffer_pool_share_is_refused_on_a_postgresql_variant(tmp_path: Path) -> None:
    code, err = validate(campaign(tmp_path, {}, buffer_pool="50%"))
    assert_one_line_bad_input(code, err)
    assert "workloads.default.buffer_pool: sizes InnoDB's buffer pool" in err and "shared_buffers" in err


def test_a_version_that_is_not_installed_is_refused(tmp_path: Path) -> None:
    code, err = validate(campaign(tmp_path, {"version": "17"}))
    assert_one_line_bad_input(code, err)
    assert "variants.pg.server.version: PostgreSQL 15." in err and "use version '15'" in err
    assert "or '18' from a rootfs (layerbench server build postgresql 18)" in err, err


def test_postgresql_18_not_built_is_refused_with_the_command_that_builds_it(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", str(tmp_path / "empty-cache"))  # no rootfs built there
    code, err = validate(campaign(tmp_path, {"version": "18"}))
    assert_one_line_bad_input(code, err)
    assert ("variants.pg.server.version: PostgreSQL 18 is not built on this machine; build it with: layerbench "
            "server build postgresql 18") in err, err


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench is not installed")
def test_a_campaign_postgresql_runs_is_valid(tmp_path: Path, reachable_folders: Path) -> None:
    config = {"shared_buffers": "64MB", "synchronous_commit": False, "fsync": "of", "work_mem": "1.5GB",
              "random_page_cost": 1.1}  # forms the server takes: a prefix of off, a fraction with a unit
    path = campaign(tmp_path, {"version": "15", "config": config}, options={"range_size": 10})
    code, err = validate(path)
    assert code == 0, err


def test_folders_the_server_user_cannot_enter_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    if os.geteuid() != 0:
        pytest.skip("the server's own user is used only when the harness is root")
    closed = Path(tempfile.mkdtemp(prefix="lb-test-pg-closed-", dir="/tmp"))  # 0700
    try:
        monkeypatch.setenv("LAYERBENCH_WORK_DIR", str(closed / "work"))
        code, err = validate(campaign(tmp_path, {}))
        assert_one_line_bad_input(code, err)
        assert f"PostgreSQL runs as user postgres, which cannot enter {closed}" in err
    finally:
        shutil.rmtree(closed)


def test_a_vm_variant_checks_its_settings_against_this_machines_postgresql(tmp_path: Path) -> None:
    """The guest runs Debian's postgresql-15 at this machine's version: the same list and the same reading of the
    file (postgres -C) refuse a setting before a guest boots."""
    code, err = validate(campaign(tmp_path, {"config": {"shared_bufers": "1GB"}}, "vm"))
    assert_one_line_bad_input(code, err)
    assert "variants.pg.server.config.shared_bufers: 'shared_bufers': PostgreSQL has no such setting" in err
    code, err = validate(campaign(tmp_path, {"config": {"shared_buffers": "lots"}}, "vm"))
    assert_one_line_bad_input(code, err)
    assert "variants.pg.server.config.shared_buffers: PostgreSQL refuses it" in err


def test_a_vm_variant_refuses_a_binary_of_its_own_and_a_my_cnf_key(tmp_path: Path) -> None:
    code, err = validate(changed(campaign(tmp_path, {}, "vm"), {"mysqld": "/usr/sbin/mariadbd"}))
    assert_one_line_bad_input(code, err)
    assert "variants.pg.mysqld: a postgresql variant runs Debian's PostgreSQL 15 in the guest; remove mysqld:" in err
    code, err = validate(campaign(tmp_path, {"config": {"innodb_buffer_pool_size": "1G"}}, "vm"))
    assert_one_line_bad_input(code, err)
    assert "PostgreSQL's nearest is shared_buffers" in err


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench is not installed")
def test_a_vm_campaign_postgresql_runs_is_valid(tmp_path: Path, reachable_folders: Path) -> None:
    code, err = validate(campaign(tmp_path, {"version": "15", "config": {"work_mem": "8MB"}}, "vm"))
    assert code == 0, err


@pytest.mark.parametrize("backend", ["vm", "docker"])
def test_postgresql_18_of_the_rootfs_is_the_host_backend_s_only(tmp_path: Path, backend: str) -> None:
    code, err = validate(campaign(tmp_path, {"version": "18"}, backend))
    assert_one_line_bad_input(code, err)
    assert (f"variants.pg.server.version: PostgreSQL 18 of the sid rootfs runs on the host backend only, and the "
            f"{backend} backend runs Debian's PostgreSQL 15") in err and "use version '15' or backend: host" in err
