from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.errors import BadInput
from layerbench.secrets import REDACTED, Secret, generate_password, redact, write_private
from layerbench.server.bootstrap import init_sql
from layerbench.server.mycnf import check_overlay, merged_settings, parse_server_options, render_mycnf

DATA = Path(__file__).resolve().parents[1] / "data"


def test_owned_settings_win_and_overlay_replaces_defaults() -> None:
    merged = merged_settings({"port": 4000}, {"max-connections": 50, "innodb_buffer_pool_size": "8M"})
    text = render_mycnf(merged)
    assert "max-connections = 50" in text and "max_connections" not in text
    assert "port = 4000" in text and "skip-name-resolve\n" in text


def test_booleans_render() -> None:
    assert render_mycnf({"performance_schema": False, "skip-log-bin": True}).splitlines()[2:] == [
        "performance_schema = OFF", "skip-log-bin"]


def test_overlay_may_not_move_owned_settings() -> None:
    with pytest.raises(BadInput, match=r"server\.config\.datadir"):
        check_overlay({"datadir": "/x"}, "variants.v")


def test_secret_never_prints() -> None:
    s = Secret("hunter2")
    assert "hunter2" not in f"{s} {s!r} {[s]}"
    assert redact("pw=hunter2;", [s]) == f"pw={REDACTED};"
    assert len(generate_password().reveal()) == 24


def test_private_file_mode(tmp_path: Path) -> None:
    path = write_private(tmp_path / "p", "x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_init_sql_quotes_password() -> None:
    sql = init_sql("u", Secret("a'b\\c"), "sbtest")
    assert "IDENTIFIED BY 'a\\'b\\\\c'" in sql


def test_prepare_progress_counts_finished_tables() -> None:
    from layerbench.server.prepare import PrepareProgress

    said: list[str] = []
    ticks = iter(range(0, 100, 2))
    progress = PrepareProgress(2, said.append, clock=lambda: float(next(ticks)))
    for line in (DATA / "prepare.txt").read_text().splitlines():
        progress(line)
    assert said == ["prepare: 1/2 tables in 2 s, about 2 s left", "prepare: 2/2 tables in 4 s"]


def test_prepare_progress_says_about_ten_things_for_many_tables() -> None:
    from layerbench.server.prepare import PrepareProgress

    said: list[str] = []
    progress = PrepareProgress(95, said.append, clock=lambda: 0.0)
    for i in range(1, 96):
        progress(f"Inserting 10 records into 'sbtest{i}'")
        progress(f"Creating a secondary index on 'sbtest{i}'...")
    assert len(said) == 10 and said[-1].startswith("prepare: 95/95 tables")


HELP_EXCERPT = """Usage: mariadbd [OPTIONS]
  --innodb-buffer-pool-size=#
                      The size of the memory buffer InnoDB uses to cache data
  --skip-name-resolve Don't resolve hostnames.
  -P, --port=#        Port number to use for connection
  --enable-named-pipe Windows only

Variables (--variable-name=value)
innodb-buffer-pool-size                                      134217728
"""


def test_the_options_of_a_server_s_help_are_read_as_it_lists_them() -> None:
    """As listed: `skip-name-resolve` is an option, `name-resolve` is not (mariadbd: unknown option
    '--name-resolve'); the special prefixes are the resolver's (resolve_option, test_server_option_names.py)."""
    names = parse_server_options(HELP_EXCERPT)
    assert {"innodb-buffer-pool-size", "skip-name-resolve", "port", "enable-named-pipe"} <= names
    assert "name-resolve" not in names and "named-pipe" not in names
    assert "usage" not in names and "134217728" not in names


@given(st.text(max_size=2000))
def test_any_help_text_gives_a_set_of_names_and_never_raises(text: str) -> None:
    names = parse_server_options(text)
    assert all(isinstance(n, str) and n and "\n" not in n for n in names)
