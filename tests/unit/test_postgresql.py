"""server/postgresql.py (with the my.cnf refusal of server/settings.py): the settings a postgresql variant may
give, read from the real `postgres --describe-config` of Debian's PostgreSQL 15 (tests/data), the postgresql.conf
written from them (hostile values either refused or written as one line that reads back as the same value), the
`postgres --version` parser, and the folders the server's user must be able to enter."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.endpoint import Endpoint
from layerbench.errors import BadInput
from layerbench.server import postgresql as pg
from layerbench.server.flavour import parse_postgres_version
from layerbench.server.settings import mysql_only_refusal

DATA = Path(__file__).resolve().parents[1] / "data" / "postgres_15_describe_config.txt"
KNOWN = pg.parse_describe_config(DATA.read_text())


def test_the_real_describe_config_lists_the_settings_with_their_context() -> None:
    assert len(KNOWN) > 250
    assert KNOWN["shared_buffers"].context == "postmaster"
    assert KNOWN["synchronous_commit"].context == "user"
    assert {"fsync", "full_page_writes", "max_wal_size", "wal_level"} <= set(KNOWN)


@pytest.mark.parametrize("key", ["shared_buffers", "synchronous_commit", "fsync", "full_page_writes", "work_mem",
                                 "Shared_Buffers"])
def test_settings_of_postgresql_are_taken(key: str) -> None:
    assert pg.setting_refusal(key, KNOWN) is None


@pytest.mark.parametrize(("key", "says"), [
    ("shared_bufers", "no such setting that postgresql.conf can set (did you mean shared_buffers"),
    ("innodb_buffer_pool_size", "nearest is shared_buffers"),
    ("innodb-flush-log-at-trx-commit", "nearest is synchronous_commit"),
    ("sync_binlog", "no binary log"),
    ("skip-log-bin", "my.cnf"),
    ("max-connections", "my.cnf"),  # a '-' is my.cnf's spelling: PostgreSQL's names have none
    ("port", "set by layerbench"),
    ("unix_socket_directories", "set by layerbench"),
    ("hba_file", "set by layerbench"),
    ("password_encryption", "set by layerbench"),
])
def test_a_name_postgresql_does_not_take_is_refused_with_the_fix(key: str, says: str) -> None:
    refusal = pg.setting_refusal(key, KNOWN)
    assert refusal is not None and says in refusal and "\n" not in refusal


def test_a_setting_without_a_value_is_refused_naming_it() -> None:
    with pytest.raises(BadInput, match=r"^variants\.pg\.server\.config\.work_mem: 'work_mem' has no value"):
        pg.check_settings({"work_mem": None}, KNOWN, "variants.pg.server.config")
    pg.check_settings({"work_mem": "64MB", "fsync": False}, KNOWN, "variants.pg.server.config")


@given(st.text(max_size=70))
def test_the_mysql_refusal_never_fails_and_names_a_dash_or_engine_prefix(key: str) -> None:
    refusal = mysql_only_refusal(key)
    if "-" in key or key.lower().startswith("innodb"):
        assert refusal is not None
    if refusal is not None:
        assert "\n" not in refusal.replace(repr(key), "")


def read_back(line: str) -> str:
    """What PostgreSQL's GUC file reader makes of `name = 'value'` (its quoting: '' and backslash escapes)."""
    match = re.fullmatch(r"[a-z_0-9]+ = '((?:[^'\\]|''|\\.)*)'", line)
    assert match, line
    return re.sub(r"''|\\(.)", lambda m: "'" if m.group(0) == "''" else m.group(1), match.group(1))


@given(st.text(max_size=200))
def test_a_hostile_string_value_is_refused_or_written_as_one_line_that_reads_back_the_same(value: str) -> None:
    try:
        text = pg.render_conf({"application_name": value})
    except BadInput as error:
        assert "\n" not in str(error).replace(repr(value), "")
        return
    lines = text.splitlines()
    assert len(lines) == 2 and lines[0].startswith("#")
    assert read_back(lines[1]) == value


@given(st.one_of(st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False)))
def test_numbers_and_booleans_are_written_bare(value: bool | int | float) -> None:
    line = pg.render_conf({"work_mem": value}).splitlines()[1]
    assert line == f"work_mem = {'on' if value is True else 'off' if value is False else value}"


@given(st.text(max_size=40))
def test_a_hostile_setting_name_never_reaches_the_file(key: str) -> None:
    try:
        text = pg.render_conf({key: 1})
    except BadInput:
        return
    assert re.fullmatch(r"[a-z][a-z0-9_]*", key) and text.count("\n") == 2


def test_what_layerbench_owns_wins_over_the_variant_and_defaults_stay_shared() -> None:
    settings = pg.merged({"Work_Mem": "8MB", "max_connections": 50}, {"port": 4242})
    assert settings == {"max_connections": 50, "work_mem": "8MB", "port": 4242}
    assert pg.merged({}, {})["max_connections"] == pg.BENCHMARK_DEFAULTS["max_connections"]


@pytest.mark.parametrize(("text", "version"), [
    ("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n", "15.18"),
    ("postgres (PostgreSQL) 17.2", "17.2"),
])
def test_postgres_version_lines(text: str, version: str) -> None:
    flavour = parse_postgres_version(text)
    assert flavour is not None and flavour.version == version and flavour.is_postgresql
    assert flavour.driver == "pgsql" and flavour.label == f"PostgreSQL {version}"


@given(st.text(max_size=80))
def test_the_postgres_version_parser_never_crashes(text: str) -> None:
    flavour = parse_postgres_version(text)
    assert flavour is None or flavour.name == "postgresql"


@pytest.mark.skipif(os.geteuid() != 0, reason="the server's own user is used only when the harness is root")
def test_a_folder_the_server_user_cannot_enter_is_named() -> None:
    base = Path(tempfile.mkdtemp(prefix="lb-test-pg-", dir="/tmp"))  # /tmp: a folder every user may enter
    try:
        base.chmod(0o711)
        closed = base / "closed"
        (closed / "inner").mkdir(parents=True)
        closed.chmod(0o700)
        assert pg.unreachable_folder(closed / "inner" / "datadirs") == closed
        with pytest.raises(BadInput, match=r"^v: PostgreSQL runs as user postgres, which cannot enter .*closed"):
            pg.check_reachable(closed / "inner", "datadir", "v")
        closed.chmod(0o701)
        assert pg.unreachable_folder(closed / "inner" / "datadirs") is None
    finally:
        shutil.rmtree(base)


@pytest.mark.skipif(not pg.program().is_file(), reason="PostgreSQL 15 is not installed (scripts/setup installs it)")
def test_the_installed_server_lists_what_the_captured_file_lists() -> None:
    live = pg.known_settings((str(pg.program()),))
    assert set(live) == set(KNOWN)


def test_sysbench_gets_the_pgsql_driver_and_its_options_in_the_private_file_only() -> None:
    from layerbench.campaign.workload import Workload
    from layerbench.endpoint import Endpoint
    from layerbench.secrets import Secret
    from layerbench.sysbench.command import config_file_text, run_argv

    endpoint = Endpoint("127.0.0.1", 5433, "layerbench", Secret("s3cret"), driver="pgsql")
    assert config_file_text(endpoint).splitlines() == [
        "db-driver=pgsql", "pgsql-host=127.0.0.1", "pgsql-port=5433", "pgsql-user=layerbench",
        "pgsql-password=s3cret", "pgsql-db=sbtest"]
    argv = run_argv(Workload(name="w", tables=1, table_size=10, threads=1, duration=1, warmup=0),
                    Path("/p/sysbench.cfg"), Path("/p/hook.lua"), 1)
    assert not any("s3cret" in a or "driver" in a or "pgsql" in a for a in argv)


@given(st.text(min_size=1, max_size=30))
def test_a_hostile_table_name_stays_one_quoted_identifier_in_the_checksum_query(name: str) -> None:
    from layerbench.server.tables import postgresql_checksum_sql

    sql = postgresql_checksum_sql(name)
    quoted = sql.split(" FROM ", 1)[1].removesuffix(" AS t")
    assert quoted.startswith('"') and quoted.endswith('"')
    assert quoted[1:-1].replace('""', "") .count('"') == 0 and quoted[1:-1].replace('""', '"') == name


def test_a_postgresql_port_that_takes_the_connection_but_never_answers_is_waited_on_not_an_internal_error() -> None:
    """A pod's Service may take the TCP connection before PostgreSQL answers: psycopg then raises ConnectionTimeout,
    a kind of OperationalError, which the wait must take as "not ready yet" (it was re-raised: an internal error
    failed a run in CI). A real listener on loopback that accepts and never speaks; the wait ends in RunFailed."""
    import socket

    from layerbench.errors import RunFailed
    from layerbench.secrets import Secret
    from layerbench.server.datadir import wait_until_ready

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        endpoint = Endpoint("127.0.0.1", listener.getsockname()[1], "u", Secret("pw"), driver="pgsql")
        with pytest.raises(RunFailed, match=r"did not accept connections within 3 s \(last: connection timeout"):
            wait_until_ready(endpoint, alive=lambda: True, timeout=3, log_tail=lambda n: "")
    finally:
        listener.close()


def test_a_failed_connection_is_a_run_cause_in_words_and_any_other_error_stays_internal() -> None:
    """A run whose connection to its server failed (PyMySQL's or psycopg's OperationalError) says so, rather than
    "internal error"; an error of layerbench's own code stays an internal one."""
    import psycopg
    import pymysql

    from layerbench.server.datadir import connection_failure

    said = connection_failure(psycopg.errors.ConnectionTimeout("connection timeout expired"))
    assert said == "the connection to the server failed (ConnectionTimeout: connection timeout expired)"
    assert connection_failure(pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")) == (
        "the connection to the server failed (OperationalError: (2013, 'Lost connection to MySQL server during "
        "query'))")
    assert connection_failure(KeyError("x")) is None and connection_failure(ValueError()) is None
