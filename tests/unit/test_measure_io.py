"""I/O counters: parsers on real /proc and cgroup text, a real process's disk traffic over a window, the window's
marks on sysbench's records, and the per-1,000-transaction figures of the analysis."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from layerbench.analysis.io import CGROUP, hit_ratio, io_notes, io_row, run_io
from layerbench.measure.io import (
    STATUS_COUNTERS,
    IoWindow,
    Reading,
    ServerStatus,
    WindowMarks,
    deltas,
    parse_blkio_v1,
    parse_io_stat,
    parse_proc_io,
    parse_status_rows,
    process_deltas,
    status_sql,
)
from layerbench.records import IoCounters
from layerbench.report.io_table import component_table, number, server_table

DATA = Path(__file__).resolve().parents[1] / "data" / "proc"


def test_proc_io_of_a_real_process() -> None:
    counters = parse_proc_io((DATA / "proc_io.txt").read_text())
    assert counters["syscr"] == 10 and counters["read_bytes"] == 4096 and counters["write_bytes"] == 20480
    with pytest.raises(ValueError, match="missing"):
        parse_proc_io("rchar: 1\nwchar: 2\n")


def test_cgroup_block_io_v2_and_v1() -> None:
    """v2: the kernel documentation's io.stat example (this machine runs cgroup v1), summed over both devices;
    v1: captured from a cgroup of ours with a throttle rule (2 MiB direct reads, 1 MiB direct writes)."""
    v2 = parse_io_stat((DATA / "cgroup_v2_io.stat").read_text())
    assert v2 == {"rbytes": 1459200 + 90430464, "wbytes": 314773504 + 299008000, "rios": 192 + 8950,
                  "wios": 353 + 1252}
    assert parse_blkio_v1((DATA / "blkio_v1_io_service_bytes.txt").read_text()) == (2097152, 1048576)
    assert parse_blkio_v1((DATA / "blkio_v1_io_serviced.txt").read_text()) == (32, 16)


@given(st.text(max_size=400))
def test_parsers_raise_only_value_error(text: str) -> None:
    for parse in (parse_proc_io, parse_io_stat, parse_blkio_v1):
        with contextlib.suppress(ValueError):
            parse(text)


def test_status_rows_keep_the_known_counters_only() -> None:
    rows = [("Innodb_buffer_pool_reads", "12"), ("innodb_data_fsyncs", "3"), ("Uptime", "99"),
            ("Innodb_buffer_pool_read_requests", "not a number"), ("lonely",)]
    assert parse_status_rows(rows) == {"Innodb_buffer_pool_reads": 12, "Innodb_data_fsyncs": 3}


def test_deltas_drop_counters_that_went_back() -> None:
    assert deltas({"a": 5, "b": 9, "c": 1}, {"a": 8, "b": 2, "d": 4}) == {"a": 3}


def test_a_process_born_inside_the_window_counts_from_zero_an_older_unknown_one_not_at_all() -> None:
    zero = dict.fromkeys(("rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes", "cancelled_write_bytes"), 0)
    before = Reading(procs={1: ("server", 100, zero | {"read_bytes": 10})})
    after = Reading(procs={1: ("server", 100, zero | {"read_bytes": 50}),
                           2: ("client", 600, zero | {"syscw": 7}),  # started after the window began
                           3: ("client", 200, zero | {"syscw": 99}),  # older, never seen at the start
                           })
    found = process_deltas(before, after, born_after=500)
    assert found["server"]["read_bytes"] == 40 and found["client"]["syscw"] == 7


WRITER = """import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
for _ in range(64):
    os.write(fd, b"x" * 65536)
os.fsync(fd)
os.close(fd)
sys.stdin.readline()
"""


def test_a_real_process_writing_4_mib_is_seen_under_its_component(tmp_path: Path) -> None:
    """A child writes 4 MiB and fsyncs inside the window: its write_bytes and write calls count under `server`,
    the server's status (here: unreachable) is named in errors, and nothing raises."""
    pids: list[int] = []

    def unreachable() -> list[tuple[str, str]]:
        raise ConnectionRefusedError("no server here")

    window = IoWindow(lambda: {"server": list(pids)}, lambda: [], unreachable)
    window.begin()  # the child starts after: born inside the window, it counts from zero
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "data")], stdin=subprocess.PIPE)
    pids.append(child.pid)
    try:
        while not (tmp_path / "data").exists() or (tmp_path / "data").stat().st_size < 64 * 65536:
            os.sched_yield()
        os.sync()
        window.end()
    finally:
        child.communicate(b"\n", timeout=60)
    found = window.result()
    assert found is not None and found.window_seconds >= 0
    server = found.processes["server"]
    assert server["write_bytes"] >= 4 * 2**20 and server["syscw"] >= 64 and server["wchar"] >= 4 * 2**20
    assert found.server_status == {} and list(found.errors) == ["server status: ConnectionRefusedError"]


class Counting(IoWindow):
    def __init__(self) -> None:
        super().__init__(dict, list, list)
        self.calls: list[str] = []

    def begin(self) -> None:
        self.calls.append("begin")

    def end(self) -> None:
        self.calls.append("end")


def test_the_window_begins_at_the_checkpoint_and_ends_at_the_final_report() -> None:
    warm = Counting()
    marks = WindowMarks(warm, warmup=5)
    assert warm.calls == []
    marks.total_record()
    marks.total_record()
    marks.total_record()  # a stray third record changes nothing
    assert warm.calls == ["begin", "end"]
    cold = Counting()
    marks = WindowMarks(cold, warmup=0)
    assert cold.calls == ["begin"]
    marks.total_record()
    assert cold.calls == ["begin", "end"]
    assert IoWindow(dict, list, list).result() is None  # a window that never ended: no record


RECORD = {
    "window_seconds": 10.0,
    "processes": {"server": {"read_bytes": 8 * 2**20, "write_bytes": 2**20, "syscr": 512, "syscw": 64,
                             "rchar": 0, "wchar": 0, "cancelled_write_bytes": 0}},
    "cgroups": {"/sys/fs/cgroup/x": {"rbytes": 4 * 2**20, "wbytes": 0, "rios": 100, "wios": 10}},
    "server_status": {"Innodb_buffer_pool_read_requests": 10_000, "Innodb_buffer_pool_reads": 500,
                      "Innodb_data_read": 500 * 16384, "Innodb_data_fsyncs": 20},
    "errors": [],
}


def stored(record: dict) -> IoCounters:
    return IoCounters.from_json(record)


def test_figures_per_1000_transactions_and_the_hit_ratio() -> None:
    found = run_io(stored(RECORD), transactions=2000)
    assert found is not None
    assert found.server["pages_from_disk"] == 250 and found.server["logical_reads"] == 5000
    assert found.server["data_read_kib"] == 500 * 16 / 2 and found.server["fsyncs"] == 10
    assert found.hit_ratio == pytest.approx(0.95)
    assert found.components["server"] == {"read_kib": 4096, "written_kib": 512, "read_ops": 256, "write_ops": 32}
    assert found.components[CGROUP] == {"read_kib": 2048, "written_kib": 0, "read_ops": 50, "write_ops": 5}
    assert run_io(stored(RECORD), transactions=0) is None and run_io(None, transactions=10) is None
    assert hit_ratio({"Innodb_buffer_pool_reads": 3}) is None


def test_postgresql_pages_come_from_pg_stat_database_blocks() -> None:
    """blks_read 79 and blks_hit 162,445: a window of PostgreSQL 15 here (tests/integration/test_postgresql_host.py)."""
    found = run_io(stored(RECORD | {"server_status": {"pg_blks_read": 79, "pg_blks_hit": 162_445}}), 1000)
    assert found is not None
    assert found.server == {"pages_from_disk": 79, "logical_reads": 162_524}
    assert found.hit_ratio == pytest.approx(162_445 / 162_524)
    assert hit_ratio({"pg_blks_read": 0, "pg_blks_hit": 0}) is None  # nothing looked up: no ratio
    assert parse_status_rows([("pg_blks_read", 79), ("pg_blks_hit", "162445")]) == {"pg_blks_read": 79,
                                                                                   "pg_blks_hit": 162_445}


def test_a_variant_row_is_the_mean_of_its_runs_and_renders_in_both_tables() -> None:
    a = run_io(stored(RECORD), 1000)
    b = run_io(stored(RECORD | {"server_status": {}, "errors": ["server status: Timeout"]}), 4000)
    assert a is not None and b is not None
    row = io_row("bp10", "oltp, 2 threads", [a, b])
    assert row.server["pages_from_disk"] == 500  # only the run that has the counter
    assert row.components["server"]["read_kib"] == pytest.approx((8192 + 2048) / 2)
    assert row.hit_ratio == pytest.approx(0.95) and "Timeout" in row.warnings[0]
    server, parts = server_table([row]), component_table([row])
    assert server.rows[0][:4] == ["`bp10`", "oltp, 2 threads", "2", "95.00 %"]
    assert [r[2] for r in parts.rows] == ["server", CGROUP]
    assert number(None) == "-" and number(0.0) == "0" and number(1234.5) == "1,234" and number(0.01234) == "0.0123"


def test_notes_are_said_once_with_their_variants() -> None:
    noted = run_io(stored(RECORD | {"notes": ["no cgroup counts"]}), 1000)
    assert noted is not None
    rows = [io_row("a", "p1", [noted]), io_row("a", "p2", [noted]), io_row("b", "p1", [noted])]
    assert io_notes(rows) == ["`a`, `b`: no cgroup counts"]


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                        max_size=3), max_leaves=12)


@given(st.dictionaries(st.sampled_from(["window_seconds", "processes", "cgroups", "server_status", "errors", "notes",
                                        "other"]), JSON_VALUES, max_size=6))
@example({"window_seconds": None, "processes": {"": {"": float("inf")}}})  # found by hypothesis
def test_any_stored_io_record_reads_and_reports_without_a_crash(data: dict) -> None:
    record = IoCounters.from_json(data)
    found = run_io(record, 1000)
    assert found is not None
    row = io_row("v", "p", [found])
    server_table([row]), component_table([row]), io_notes([row])


def test_the_status_query_asks_for_the_kept_counters_only() -> None:
    sql = status_sql()
    assert sql.startswith("SHOW GLOBAL STATUS WHERE Variable_name IN (")
    assert all(f"'{name}'" in sql for name in STATUS_COUNTERS) and sql.count("'") == 2 * len(STATUS_COUNTERS)


def test_a_server_that_cannot_be_reached_is_named_in_the_window_without_the_password() -> None:
    from layerbench.backends.base import Endpoint
    from layerbench.secrets import Secret

    endpoint = Endpoint("127.0.0.1", 1, "sbtest", Secret("hunter2-not-shown"))  # port 1: refused at once
    with ServerStatus(endpoint) as status:
        assert status.conn is None and status.error is not None
        window = IoWindow(dict, list, status)
        window.begin()
        window.end()
    result = window.result()
    assert result is not None and result.server_status == {}
    assert list(result.errors) == ["server status: OperationalError"]
    assert "hunter2" not in repr(result)
