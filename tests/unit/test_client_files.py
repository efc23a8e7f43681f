"""A client that runs elsewhere (hosts/client_files.py): its command's file arguments point at the copies in its
own folder, and its streamed output is split into lines, redacted, logged and handed on as it arrives."""

from __future__ import annotations

from pathlib import Path

from layerbench.hosts.client_files import CLIENT_DIR, collect_stream, rewrite
from layerbench.secrets import REDACTED, Secret


def test_file_arguments_point_at_the_clients_folder_and_nothing_else_changes() -> None:
    cmd = ["sysbench", "--config-file=/tmp/run/sysbench.cfg", "/tmp/run/hook.lua", "--threads=4",
           "/usr/share/sysbench/oltp_read_only.lua", "run"]
    files = {"sysbench.cfg": "db-driver=mysql\n", "hook.lua": "-- hook\n"}
    assert rewrite(cmd, files) == ["sysbench", f"--config-file={CLIENT_DIR}/sysbench.cfg", f"{CLIENT_DIR}/hook.lua",
                                   "--threads=4", "/usr/share/sysbench/oltp_read_only.lua", "run"]
    assert rewrite(cmd, files, to="/home/lb/run-3")[1:3] == ["--config-file=/home/lb/run-3/sysbench.cfg",
                                                              "/home/lb/run-3/hook.lua"]


def test_an_environment_assignment_keeps_its_name() -> None:
    """pgbench's passfile reaches it as `env PGPASSFILE=<path>` (pgbench/command.py): only the path moves."""
    cmd = ["env", "PGPASSFILE=/tmp/run/pgpass", "pgbench", "--initialize"]
    assert rewrite(cmd, {"pgpass": ""}, to="/tmp/x-client") == ["env", "PGPASSFILE=/tmp/x-client/pgpass", "pgbench",
                                                                  "--initialize"]
    assert rewrite(["a=b/tmp/run/pgpass"], {"pgpass": ""}, to="/c") == ["/c/pgpass"]  # not a name: a path


def test_a_variable_given_to_env_keeps_its_name() -> None:
    """pgbench's passfile (pgbench/command.py: `env PGPASSFILE=<file> pgbench ...`) in a client container: the
    variable still names the copy (it was rewritten to a bare path, and env tried to run the passfile)."""
    cmd = ["env", "PGPASSFILE=/root/private/pgpass", "/usr/lib/postgresql/15/bin/pgbench", "sbtest"]
    assert rewrite(cmd, {"pgpass": "h:1:d:u:p\n"})[:2] == ["env", f"PGPASSFILE={CLIENT_DIR}/pgpass"]


def test_a_name_that_only_ends_like_a_file_is_not_one() -> None:
    assert rewrite(["/tmp/run/myhook.lua"], {"hook.lua": ""}) == ["/tmp/run/myhook.lua"]


def test_streamed_output_is_split_into_lines_redacted_and_logged(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("before\n", encoding="utf-8")
    seen: list[str] = []
    chunks = [b"tps: 1", b"0\nuser lb pass s3cr", b"et\n\xffhalf", b" a line"]
    output = collect_stream(chunks, log, seen.append, [Secret("s3cret")])
    assert seen == ["tps: 10", f"user lb pass {REDACTED}"]  # a partial last line is not handed on
    assert output == f"tps: 10\nuser lb pass {REDACTED}\n\ufffdhalf a line"
    assert log.read_text(encoding="utf-8") == f"before\ntps: 10\nuser lb pass {REDACTED}\n"
    assert "s3cret" not in output


def test_no_listener_and_no_output(tmp_path: Path) -> None:
    assert collect_stream([], tmp_path / "empty.log", None, []) == ""
    assert (tmp_path / "empty.log").read_text(encoding="utf-8") == ""
