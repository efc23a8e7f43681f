"""PostgreSQL on an ssh: host (server/remote_postgresql.py, backends/host/remote_pg.py): what the host's listing of
its PostgreSQLs says, which one a variant gets, the one-line refusal of a version the host has not, the account's
psql text, and the scripts run here in sh (the lab's integration test, test_postgresql_ssh.py, runs them there)."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.backends.host.remote_pg import ancestors, blocked_script
from layerbench.errors import BadInput, PrerequisiteMissing
from layerbench.secrets import Secret
from layerbench.server.remote_postgresql import account_sql, choose, installed_script, parse_installed

LISTED = ("LB-PG /usr/lib/postgresql/15/bin postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n"
          "ssh: a banner line\n"
          "LB-PG /usr/lib/postgresql/17/bin postgres (PostgreSQL) 17.12 (Debian 17.12-0+deb13u1)\n"
          "LB-PG /elsewhere/bin postgres (PostgreSQL) 16.1\n")


def test_the_host_s_postgresqls_are_read_newest_first_and_the_newest_is_the_default() -> None:
    found = parse_installed(LISTED)
    assert [(p.flavour.version, p.bin_dir) for p in found] == [("17.12", "/usr/lib/postgresql/17/bin"),
                                                               ("15.18", "/usr/lib/postgresql/15/bin")]
    assert choose(found, None, "db", "variants.pg.server").program("psql") == "/usr/lib/postgresql/17/bin/psql"
    assert choose(found, "15", "db", "variants.pg.server").flavour.version == "15.18"
    assert choose(found, "17.12", "db", "variants.pg.server").flavour.major == 17


def test_a_version_the_host_has_not_is_refused_naming_what_it_has() -> None:
    with pytest.raises(BadInput) as refused:
        choose(parse_installed(LISTED), "16", "db", "variants.pg.server")
    line = str(refused.value)
    assert "\n" not in line and line.startswith("variants.pg.server.version: host db has PostgreSQL 17.12 ('17'), "
                                                "PostgreSQL 15.18 ('15'), not PostgreSQL 16; use version '17'")
    with pytest.raises(PrerequisiteMissing, match="host db has no PostgreSQL"):
        choose([], None, "db", "variants.pg.server")


@given(st.text(max_size=400))
def test_any_listing_parses_without_a_crash(text: str) -> None:
    parse_installed(text)


def test_the_listing_script_runs_in_sh() -> None:
    done = subprocess.run(["sh", "-c", installed_script()], capture_output=True, text=True, timeout=60, check=True)
    assert all(p.bin_dir.startswith("/usr/lib/postgresql/") for p in parse_installed(done.stdout))


def test_the_account_s_text_keeps_statement_logging_off_first_and_refuses_odd_names() -> None:
    text = account_sql("layerbench", Secret("it's"), "sbtest")
    assert text.index("log_statement") < text.index("PASSWORD 'it''s'")
    assert "PASSWORD NULL" in account_sql("layerbench", None, "sbtest")
    with pytest.raises(BadInput):
        account_sql("x; DROP", None, "sbtest")


def test_the_first_folder_the_server_user_cannot_enter_is_named(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os

    if os.geteuid() != 0:
        pytest.skip("the server's own user is used only when the SSH user is root")
    closed = tmp_path / "closed"
    (closed / "inner").mkdir(parents=True)
    closed.chmod(0o700)
    paths = ancestors(str(closed / "inner"))
    assert paths[-1] == str(closed / "inner") and paths[0] == "/" + str(closed).split("/")[1]
    done = subprocess.run(["sh", "-c", blocked_script(paths)], capture_output=True, text=True, timeout=60)
    blocked = [line for line in done.stdout.splitlines() if line.startswith("LB-BLOCKED ")]
    assert len(blocked) == 1 and blocked[0].split(" ", 2)[2] in {str(p) for p in (closed, *closed.parents)}
