"""Raw sysbench output of every layout (fixtures written from sysbench's published formats, and 1.0.20 outputs
captured here by tests/data/capture_samples.py logs): totals, labelled percentiles, intervals, and refusals
that name the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.errors import BadInput
from layerbench.sysbench.output import parse_log

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
DATA = LOGS.parent


def parse(path: Path):
    return parse_log(str(path), path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("name", "layout", "threads", "pct", "tps", "queries", "pct_ms", "intervals"), [
    ("sysbench-0.4.12-oltp.txt", "0.4", 8, 95, 10000 / 9.5875, 210000, 11.09, 0),
    ("sysbench-0.5-oltp-intervals.txt", "0.5", 4, 99, 18300 / 30.0001, 366000, 8.93, 3),
    ("sysbench-0.5-readonly-reads-per-s.txt", "0.5", 2, 95, 12164 / 10.0007, 194624, 1.82, 2),
    ("sysbench-1.1-p99-err-no-colon.txt", "1.1", 4, 99, 1591 / 2.0003, 31840, 9.73, 2),
    ("sysbench-1.0.20-p99.txt", "1.0", 2, 99, None, None, None, 2),
    ("sysbench-1.0.20-p100.txt", "1.0", 2, 100, None, None, 11.04, 2),
    ("../run_1.0_normal.txt", "1.0", 2, 95, 2840 / 5.0046, 56850, 4.74, 5),
    ("../run_1.1_layout_reconnects.txt", "1.1", 4, 95, 2426 / 3.0018, 48520, 6.79, 3),
])
def test_every_layout(name: str, layout: str, threads: int, pct: float, tps: float | None, queries: int | None,
                      pct_ms: float | None, intervals: int) -> None:
    run = parse(LOGS / name)
    assert (run.layout, run.threads, run.percentile, len(run.intervals)) == (layout, threads, pct, intervals)
    if tps is not None:
        assert run.totals.tps == pytest.approx(tps) and run.totals.queries == queries
    if pct_ms is not None:
        assert run.totals.latency_pct_ms == pytest.approx(pct_ms)
    if intervals:
        assert run.interval_percentile == pct and all(i.tps > 0 and i.qps >= i.tps for i in run.intervals)


def test_old_layouts_in_detail() -> None:
    old = parse(LOGS / "sysbench-0.4.12-oltp.txt")
    assert (old.version, old.totals.errors, old.totals.latency_max_ms) == ("0.4.12", 2, 57.8)  # deadlocks
    five = parse(LOGS / "sysbench-0.5-oltp-intervals.txt")
    first = five.intervals[0]
    assert (first.time, first.reads_ps, first.writes_ps, first.latency_pct_ms) == (10.0, 8573.46, 2449.56, 8.91)
    assert five.intervals[1].errors_ps == 0.1 and five.totals.errors == 1
    no_colon = parse(LOGS / "sysbench-1.1-p99-err-no-colon.txt")
    assert [i.errors_ps for i in no_colon.intervals] == [0.0, 1.0]


def test_captured_runs_keep_their_rate_limiter_lines_out() -> None:
    """sysbench --rate prints `[ 1s ] queue length: ...` lines between the intervals: not intervals."""
    run = parse(LOGS / "captured-1.0.20" / "rate40" / "run-1.txt")
    assert len(run.intervals) == 3 and run.version == "1.0.20"


def k8s_noise(text: str) -> str:
    """As a Job's log or a wrapper script mixes its lines into sysbench's, with a BOM and CRLF line ends."""
    lines = text.split("\n")
    mixed = []
    for i, line in enumerate(lines):
        mixed.append(line)
        if i % 3 == 0:
            mixed.append(f"2024-05-01T10:00:0{i % 10}Z wait-for-server: mariadb.lb1.svc:3306 answers")
            mixed.append("+ exec sysbench --config-file=/etc/layerbench-client/sysbench.cfg run")
    return "\ufeff" + "\r\n".join(mixed)


@pytest.mark.parametrize("name", ["sysbench-0.4.12-oltp.txt", "sysbench-0.5-oltp-intervals.txt",
                                  "sysbench-1.1-p99-err-no-colon.txt", "sysbench-1.0.20-p100.txt"])
def test_bom_crlf_and_foreign_lines_change_nothing(name: str) -> None:
    clean = parse(LOGS / name)
    noisy = parse_log(name, k8s_noise((LOGS / name).read_text()))
    assert noisy == clean


@pytest.mark.parametrize(("text", "expected"), [
    ("hello\nworld\n", "x.log, line 1: not sysbench output"),
    ("\n\nvariant,iteration,tps\nhost,1,5\n", "x.log, line 3: not sysbench output"),
    ((DATA / "prepare.txt").read_text(), "x.log, line 1: sysbench output without a statistics block"),
    ((DATA / "run_connection_failure.txt").read_text(), "without a statistics block"),
    ("SQL statistics:\n    queries performed:\n        read: 5\n", "line 1: the statistics block starting "
                                                                    "here has no 'transactions:' line"),
    ((LOGS / "sysbench-0.5-oltp-intervals.txt").read_text().split("General statistics")[0],
     "line 14: the statistics block starting here has no 'total time:' line"),
    ("a\0b", "binary data"),
])
def test_what_is_not_a_whole_run_is_refused_with_name_and_line(text: str, expected: str) -> None:
    with pytest.raises(BadInput, match=expected):
        parse_log("x.log", text)


VALID = (LOGS / "sysbench-1.1-p99-err-no-colon.txt").read_text()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_is_a_run_or_one_line_refusal(text: str) -> None:
    try:
        parse_log("x.log", text)
    except BadInput as error:
        assert str(error).startswith("x.log") and "\n" not in str(error)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, len(VALID)), max_size=5))
def test_a_bom_anywhere_changes_nothing(positions: list[int]) -> None:
    text = VALID
    for at in sorted(positions, reverse=True):
        text = text[:at] + "\ufeff" + text[at:]
    assert parse_log("x.log", text).totals == parse_log("x.log", VALID).totals


@settings(max_examples=100, deadline=None)
@given(st.integers(0, len(VALID)))
def test_a_truncated_file_is_refused_or_keeps_its_totals(cut: int) -> None:
    try:
        run = parse_log("x.log", VALID[:cut])
    except BadInput as error:
        assert "line" in str(error)
    else:
        assert run.totals.transactions == 1591 and run.totals.duration == 2.0003


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**40), st.floats(min_value=0, allow_nan=False, allow_infinity=False))
def test_huge_numbers_are_a_run_or_a_refusal(transactions: int, seconds: float) -> None:
    text = VALID.replace("1591   (795.37", f"{transactions}   (795.37").replace("2.0003s", f"{seconds!r}s")
    try:
        run = parse_log("x.log", text)
    except BadInput as error:
        assert "line" in str(error)
    else:
        assert run.totals.tps < float("inf")


OTHER = LOGS / "other-tests"
NOT_OLTP = "not an OLTP run; layerbench compares database runs"


@pytest.mark.parametrize(("name", "test"), [
    ("sysbench-1.0.20-cpu.txt", "cpu"), ("sysbench-1.0.20-memory.txt", "memory"),
    ("sysbench-1.0.20-fileio.txt", "fileio"), ("sysbench-0.4.12-cpu.txt", "cpu"),
    ("sysbench-0.4.12-fileio.txt", "fileio"), ("sysbench-0.5-cpu.txt", "cpu"),
])
def test_a_finished_run_of_another_test_is_refused_as_that_test(name: str, test: str) -> None:
    """Not 'the run did not finish, or the file is cut short': a cpu test's log is complete, and no database run."""
    with pytest.raises(BadInput) as error:
        parse(OTHER / name)
    assert str(error.value) == f"{OTHER / name}: a sysbench {test} test, {NOT_OLTP}"


@pytest.mark.parametrize("name", ["sysbench-1.0.20-threads.txt", "sysbench-1.0.20-mutex.txt"])
def test_a_test_that_prints_nothing_of_its_own_is_still_no_oltp_run(name: str) -> None:
    """sysbench 1.0's threads and mutex tests (and a Lua script without SQL) print only the general block."""
    with pytest.raises(BadInput) as error:
        parse(OTHER / name)
    assert str(error.value) == (f"{OTHER / name}: a sysbench test without SQL statistics (threads, mutex, a script "
                                f"of its own), {NOT_OLTP}")


MARKERS = ["Prime numbers limit: 10000", "CPU speed:", "Doing CPU performance benchmark", "Primer numbers limit: 1",
           "2783.37 MiB transferred (2776.48 MiB/sec)", "Extra file open flags: 0", "File operations:",
           "Doing random r/w test", "Doing mutex performance test", "General statistics:", "Test execution summary:"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(MARKERS), st.text(max_size=60)), max_size=12))
def test_any_text_with_other_tests_lines_is_a_run_or_one_line_refusal(lines: list[str]) -> None:
    try:
        parse_log("x.log", "\n".join(lines))
    except BadInput as error:
        assert str(error).startswith("x.log") and "\n" not in str(error)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 80), st.sampled_from(MARKERS)), max_size=6))
def test_an_oltp_log_with_such_lines_mixed_in_stays_that_run(inserts: list[tuple[int, str]]) -> None:
    """A wrapper that ran a cpu test before the OLTP run, in the same file: the OLTP block decides."""
    lines = VALID.split("\n")
    for at, marker in sorted(inserts, reverse=True):
        lines.insert(min(at, len(lines)), marker)
    assert parse_log("x.log", "\n".join(lines)).totals == parse_log("x.log", VALID).totals


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(p.name for p in OTHER.iterdir())), st.integers(0, 2000))
def test_a_cut_log_of_another_test_is_never_read_as_a_run(name: str, cut: int) -> None:
    with pytest.raises(BadInput) as error:
        parse_log("x.log", (OTHER / name).read_text()[:cut])
    assert str(error.value).startswith("x.log") and "\n" not in str(error.value)
