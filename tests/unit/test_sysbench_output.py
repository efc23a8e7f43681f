"""The one parser of sysbench's output (sysbench/output.py), as the live run and the importer share it: both
read the same human text to the same totals; hostile text (numbers past any float, markup, foreign lines, JSON
of the wrong shape in a hook record) gives a run, a refusal naming the line, or no totals, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from layerbench.errors import BadInput
from layerbench.sysbench.output import MAX_COUNT, parse_human, parse_log, parse_mark_records, parse_output

DATA = Path(__file__).resolve().parents[1] / "data"
LOGS = sorted([*(DATA / "logs").glob("sysbench-*.txt"), DATA / "run_1.0_normal.txt",
               DATA / "run_1.1_layout_reconnects.txt", DATA / "run_1.0_errors.txt"])
VALID = (DATA / "run_1.0_normal.txt").read_text()
HOSTILE = st.sampled_from(["10" + "0" * 400, "1e400", "-1", "[/x]", "", "\n", "[1, 2]", "nan", "inf", "0",
                           str(MAX_COUNT + 1), "9" * 25, "1.5"]) | st.text(max_size=12)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_the_live_run_and_the_importer_read_the_same_totals(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert parse_human(text).totals == parse_log(path.name, text).totals
    assert parse_output(text).totals == parse_log(path.name, text).totals  # no hook records: the same text


def test_a_count_beyond_sysbench_counters_is_refused_with_its_line() -> None:
    text = VALID.replace("read:                            39802", f"read:                            {10**400}")
    assert text != VALID
    with pytest.raises(BadInput, match=r"x.log, line \d+: 1000000.* beyond sysbench's 64-bit counters"):
        parse_log("x.log", text)
    assert parse_output(text).totals is None  # the live run: no totals, so the run fails with sysbench's cause


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(VALID.splitlines()) - 1), HOSTILE)
@example(0, "[  1s ] thds: " + "9" * 400 + " tps: 1 qps: 2")
@example(0, "[ 1e400s ] thds: 2 tps: 1e400 qps: 2")
def test_hostile_text_in_any_line_is_a_run_or_a_refusal(line: int, value: str) -> None:
    lines = VALID.splitlines()
    words = lines[line].split()
    lines[line] = " ".join([*words[:-1], value]) if words else value
    text = "\n".join(lines)
    try:
        run = parse_log("x.log", text)
    except BadInput as error:
        assert str(error).startswith("x.log") and "\n" not in str(error)
    else:
        assert 0 <= run.totals.tps < float("inf") and run.totals.transactions <= MAX_COUNT
    parsed = parse_output(text)
    assert parsed.totals is None or parsed.totals.tps < float("inf")


RECORD = ('LAYERBENCH {{"kind":"{kind}","time":{v},"interval":1.0,"threads":{v},"events":{v},"reads":1,"writes":1,'
          '"other":1,"errors":0,"reconnects":0,"latency_pct_ms":{v}}}')


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["interval", "total"]),
       st.sampled_from(["1e400", "[1, 2]", '"x"', "null", "-1", "10" + "0" * 400, "{}", "true", "3"]))
def test_hostile_hook_records_are_skipped_not_raised(kind: str, value: str) -> None:
    line = RECORD.format(kind=kind, v=value)
    parse_mark_records(line)
    parsed = parse_output(line + "\n" + line)
    assert parsed.totals is None or parsed.totals.transactions >= -1
