"""The one parser of pgbench's output (pgbench/output.py) on real pgbench 15.18 output (tests/data/logs/
pgbench-15.18: `pgbench -n -P 1 -r -b tpcb-like|select-only -T 3` against a real PostgreSQL 15, a run whose server
was stopped in the middle, a server that was not there) and on hostile text: a run, a refusal in one line naming
the file and the line, or (live) no totals, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from layerbench.errors import BadInput
from layerbench.pgbench.output import MAX_COUNT, is_pgbench_output, parse_log, parse_output

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs" / "pgbench-15.18"
TPCB = (LOGS / "tpcb-like-c2.log").read_text(encoding="utf-8")
SELECT = (LOGS / "select-only-c1.log").read_text(encoding="utf-8")


def test_a_real_tpcb_like_run_gives_its_totals_intervals_and_statements() -> None:
    run = parse_log("tpcb.log", TPCB)
    assert run.layout == "pgbench" and run.version == "15.18 (Debian 15.18-0+deb12u1)"
    assert run.threads == 2 and run.scale == 1 and run.transaction_type == "<builtin: TPC-B (sort of)>"
    totals = run.totals
    assert totals.transactions == 4354 and totals.tps == pytest.approx(1454.107285)
    assert totals.duration == pytest.approx(4354 / 1454.107285)
    assert totals.latency_avg_ms == 1.372 and totals.latency_pct_ms is None and totals.errors == 0
    # one TPC-B transaction: SELECT; three UPDATEs and an INSERT; BEGIN and END (the \set lines are no query)
    assert (totals.reads, totals.writes, totals.other) == (4354, 4 * 4354, 2 * 4354)
    assert totals.queries == 7 * 4354 and totals.qps == pytest.approx(7 * 1454.107285)
    assert [i.time for i in run.intervals] == [1.0, 2.0, 3.0]
    assert [i.tps for i in run.intervals] == [1447.8, 1299.0, 1602.4]
    assert run.intervals[0].qps == pytest.approx(7 * 1447.8) and run.intervals[0].threads == 2
    assert len(run.statements) == 11 and run.statements[5].latency_ms == 0.159
    assert run.statements[5].command.startswith("UPDATE pgbench_accounts")
    assert [s.kind for s in run.statements].count("meta") == 4


def test_a_real_select_only_run_is_one_read_per_transaction() -> None:
    run = parse_log("select.log", SELECT)
    assert run.threads == 1 and run.totals.transactions == 35638
    assert (run.totals.reads, run.totals.writes, run.totals.other) == (35638, 0, 0)
    assert [i.tps for i in run.intervals] == [11150.4, 12028.4, 12458.1]
    assert run.totals.latency_avg_ms == 0.078


def test_the_live_run_and_the_importer_read_the_same() -> None:
    for text in (TPCB, SELECT):
        live, logged = parse_output(text, 0), parse_log("x.log", text)
        assert live.totals == logged.totals and live.statements == logged.statements
        assert [i.tps for i in live.intervals] == [i.tps for i in logged.intervals]


def test_a_run_pgbench_says_it_aborted_is_refused_not_read_as_whole() -> None:
    text = (LOGS / "aborted.log").read_text(encoding="utf-8")
    with pytest.raises(BadInput, match=r"^aborted.log, line 4: pgbench says the run was aborted"):
        parse_log("aborted.log", text)
    live = parse_output(text, 2)
    assert live.totals is None and len(live.intervals) == 1
    assert any("Run was aborted" in line for line in live.errors)


def test_a_server_that_was_not_there_gives_no_run_and_says_why() -> None:
    text = (LOGS / "refused.log").read_text(encoding="utf-8")
    assert is_pgbench_output(text) is False  # no banner: pgbench never connected
    live = parse_output(text, 1)
    assert live.totals is None and "Connection refused" in live.errors[0]
    with pytest.raises(BadInput, match=r"^r.log, line 1: not pgbench output"):
        parse_log("r.log", text)


def test_a_summary_cut_short_is_refused_with_its_line() -> None:
    cut = TPCB.split("number of transactions actually processed")[0]
    with pytest.raises(BadInput, match=r"^cut.log, line 5: the summary starting here has no 'number of "):
        parse_log("cut.log", cut)
    banner_only = TPCB.split("progress:")[0] + "pgbench: error: could not connect\n"
    with pytest.raises(BadInput, match=r"line 1: pgbench output without a summary.*could not connect"):
        parse_log("b.log", banner_only)
    assert is_pgbench_output(TPCB) and not is_pgbench_output("SQL statistics:\n")


def test_a_count_beyond_a_64_bit_counter_is_refused() -> None:
    text = TPCB.replace("processed: 4354", f"processed: {10**30}")
    with pytest.raises(BadInput, match=r"line 12: 1000000.* beyond pgbench's 64-bit counters"):
        parse_log("x.log", text)
    assert parse_output(text, 2).totals is None


def test_progress_timestamps_are_made_relative_and_crlf_and_bom_are_read() -> None:
    text = "\ufeff" + TPCB.replace("progress: 1.0 s", "progress: 1700000000.0 s").replace(
        "progress: 2.0 s", "progress: 1700000001.0 s").replace("progress: 3.0 s", "progress: 1700000002.0 s")
    run = parse_log("ts.log", text.replace("\n", "\r\n"))
    assert [i.time for i in run.intervals] == [1.0, 2.0, 3.0]


HOSTILE = st.sampled_from(["10" + "0" * 400, "1e400", "-1", "NaN", "", "\n", "nan", "inf", "0", "\0",
                           str(MAX_COUNT + 1), "9" * 25, "1.5", "ms", "=", "s,", "(", "tps"]) | st.text(max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([TPCB, SELECT]), st.integers(0, 40), st.integers(0, 12), HOSTILE)
@example(TPCB, 1, 3, "1e400")
@example(TPCB, 12, 5, "0")
@example(TPCB, 16, 2, "1e400")
@example(TPCB, 16, 2, "0")  # tps = 0 after N transactions: refused, never a run with no rate
def test_hostile_text_in_any_word_is_a_run_or_a_one_line_refusal(text: str, line: int, word: int,
                                                                  value: str) -> None:
    lines = text.splitlines()
    line %= len(lines)
    words = lines[line].split(" ")
    words[word % len(words)] = value
    lines[line] = " ".join(words)
    damaged = "\n".join(lines)
    try:
        run = parse_log("x.log", damaged)
    except BadInput as error:
        assert str(error).startswith("x.log") and "\n" not in str(error)
    else:
        assert 0 < run.totals.tps < float("inf") and 0 <= run.totals.transactions <= MAX_COUNT
        assert 0 < run.totals.duration < float("inf")
        assert all(0 <= i.tps < float("inf") and i.time > 0 for i in run.intervals)
    live = parse_output(damaged, 1)
    assert live.totals is None or live.totals.tps < float("inf")


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_a_run_or_a_refusal(text: str) -> None:
    try:
        parse_log("x.log", "pgbench (15.18)\n" + text)
    except BadInput as error:
        assert "\n" not in str(error)
    parse_output(text, 1)
