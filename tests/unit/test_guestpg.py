"""PostgreSQL in the VM's guest (backends/vm/guestpg.py, backends/vm/local.py's config disk, server/postgresql.py's
account script, server/vmimage.py's root disk key): what the config disk carries and what the guest's server.sh runs,
read by a real shell; the account script run by this machine's psql against this machine's PostgreSQL is the
integration test's (tests/integration/test_postgresql_vm.py)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from test_vm_boot import guest_functions

from layerbench.backends.vm import guestpg
from layerbench.secrets import Secret
from layerbench.server import postgresql as pg
from layerbench.server.flavour import Flavour
from layerbench.server.servers import ServerProgram
from layerbench.server.spec import ServerSpec

POSTGRES = ServerProgram(Flavour("postgresql", "15.18"), (str(pg.program("postgres")),))


def test_the_guest_runs_initdb_and_the_server_as_postgres_and_sets_the_account_over_its_socket(tmp_path: Path) -> None:
    functions = guest_functions(guestpg.server_script(POSTGRES, "/var/lib/mysql"), tmp_path)
    assert "initdb -D /var/lib/mysql --username=postgres" in functions["init_datadir"]
    assert "as_postgres" in functions["init_datadir"] and "own_datadir" in functions["init_datadir"]
    run = functions["run_server"]
    assert "exec setpriv --reuid=postgres --regid=postgres --init-groups -- /usr/lib/postgresql/15/bin/postgres " \
           "-D /var/lib/mysql" in run
    assert "cp /etc/layerbench/postgresql.conf /etc/layerbench/pg_hba.conf /var/lib/mysql/" in run
    assert "/dev/shm" in run and "rm -f /var/lib/mysql/postmaster.pid" in run
    ready = functions["server_ready"]
    assert "psql -X -q -v ON_ERROR_STOP=1 -h /run/postgresql -p 5432 -U postgres -d postgres" in ready
    assert "< /etc/layerbench/init.sql" in ready


def test_the_config_disk_holds_layerbench_postgresql_conf_and_the_password_only_in_the_private_script(
        tmp_path: Path) -> None:
    password = Secret("s3cr'et-value")
    spec = ServerSpec("v", "lb1-x-1-v", tmp_path / "run", tmp_path / "private", tmp_path / "work",
                      config={"work_mem": "8MB", "synchronous_commit": False}, password=password)
    folder = tmp_path / "private" / "vm-config"
    guestpg.write_config(spec, POSTGRES, folder, "/var/lib/mysql")
    conf = (folder / "postgresql.conf").read_text().splitlines()
    assert "work_mem = '8MB'" in conf and "synchronous_commit = off" in conf and "max_connections = 1000" in conf
    assert "port = 5432" in conf and "listen_addresses = '*'" in conf and "password_encryption = 'scram-sha-256'" \
        in conf and "unix_socket_directories = '/run/postgresql'" in conf
    assert (spec.run_dir / "postgresql.conf").read_text() == (folder / "postgresql.conf").read_text()
    assert (folder / "pg_hba.conf").read_text() == pg.HBA
    script = folder / "init.sql"
    assert stat.S_IMODE(script.stat().st_mode) == 0o600
    assert "PASSWORD 's3cr''et-value'" in script.read_text()
    for name in ("postgresql.conf", "pg_hba.conf", "server.sh"):
        assert "s3cr" not in (folder / name).read_text()
    assert not any("s3cr" in p.read_text() for p in spec.run_dir.iterdir())


def test_the_account_script_quiets_logging_first_and_quotes_what_it_names() -> None:
    script = pg.account_script('bench"er', Secret("pa'ss"), "sb'test")
    lines = script.splitlines()
    assert lines[:3] == [f"{statement};" for statement in pg.QUIET]
    assert "ALTER ROLE \"bench\"\"er\" LOGIN PASSWORD 'pa''ss';" in lines
    assert lines[-1].endswith("WHERE datname = 'sb''test')\\gexec") and script.endswith("\n")
    assert "CREATE ROLE \"bench\"\"er\" LOGIN" in script


@pytest.mark.skipif(not pg.program().is_file(), reason="PostgreSQL 15 is not installed (scripts/setup)")
def test_the_postgresql_root_disk_has_a_key_of_its_own_from_the_package_versions() -> None:
    from layerbench.server.image import installed_version
    from layerbench.server.vmimage import postgresql_pins, root_id

    assert postgresql_pins() == {p: installed_version(p) for p in ("postgresql-15", "postgresql-client-15")}
    assert root_id(None, postgresql=True).startswith("postgresql-")
    assert root_id(None, postgresql=True) != root_id(None)  # MariaDB's guest keeps its own cached root disk


@pytest.mark.parametrize(("value", "size"), [("4GB", 4 << 30), ("512MB", 512 << 20), (262144, 2 << 30),
                                             ("131072", 1 << 30), ("1.5GB", 3 << 29), ("lots", None), (True, None)])
def test_shared_buffers_are_read_as_postgresql_reads_them(value: object, size: int | None) -> None:
    from layerbench.backends.vm.variant import shared_buffers_bytes
    from layerbench.server.settings import ServerSettings

    server = ServerSettings.model_validate({"flavour": "postgresql", "config": {"Shared_Buffers": value}})
    assert shared_buffers_bytes(server) == size


def test_a_postgresql_guest_gets_memory_for_its_shared_buffers_and_refuses_less() -> None:
    from pydantic import ValidationError

    from layerbench.backends.vm.variant import VMVariant

    def variant(**fields: object) -> VMVariant:
        return VMVariant.model_validate({"name": "pg", "backend": "vm", **fields})

    assert variant(server={"flavour": "postgresql"}).memory == "2G"
    assert variant(server={"flavour": "postgresql", "config": {"shared_buffers": "4GB"}}).memory == "4864M"
    with pytest.raises(ValidationError) as refused:
        variant(memory="2G", server={"flavour": "postgresql", "config": {"shared_buffers": "4GB"}})
    assert ("variants.pg.memory: 2G is below the shared_buffers this variant asks for (server.config.shared_buffers: "
            "4GB); set memory to at least 4864M (the shared_buffers + 768 MiB) or use a smaller shared_buffers") \
        in str(refused.value)


def test_a_guest_whose_server_ends_before_it_is_ready_says_the_servers_own_line() -> None:
    """The console of a guest whose PostgreSQL could not start (huge_pages: on, none in the guest; captured here)."""
    from layerbench.backends.vm.local import server_exit

    console = ("[    0.000000] Linux version 6.1.0-56-amd64\nLAYERBENCH-BOOTED 9.61 s\n"
               "2026-11-29 08:06:55.357 GMT [128] FATAL:  could not map anonymous shared memory: Cannot allocate "
               "memory\n"
               "2026-11-29 08:06:55.357 GMT [128] HINT:  This error usually means that PostgreSQL's request for a "
               "shared memory segment exceeded available memory, swap space, or huge pages.\n"
               "2026-11-29 08:06:55.399 GMT [128] LOG:  database system is shut down\nLAYERBENCH-SERVER-EXIT 1\n"
               "LAYERBENCH-DOWN\n[   15.862374] sysrq: Power Off\n")
    assert server_exit(console, POSTGRES) == ("server exited during start-up in the VM: could not map anonymous shared "
                                              "memory: Cannot allocate memory")
