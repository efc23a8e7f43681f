"""The one parser of sysbench's output, shared by the live run (run/execution.py) and the importer of archived
logs (importing/logs.py): the report hook's `LAYERBENCH {json}` records (sysbench/command.py HOOK_LUA) and
sysbench's own human text, into records/totals.py Totals and Interval.

Human text layouts (from sysbench's own report code, akopytov/sysbench): 0.4 (`OLTP test statistics`, `Test
execution summary`, `per-request statistics`, `approx.  95 percentile: 11.09ms`), 0.5 (the same block, then
`General statistics` with `response time:`; intervals `[  10s] threads: 8, tps: ..., reads/s: ..., response
time: 9.96ms (95%)`), 1.0 (`SQL statistics`, `General statistics`, `Latency (ms):`, `95th percentile:`;
intervals `[ 1s ] thds: 2 tps: ... lat (ms,95%): ... err/s: ...`) and 1.1 (a `Throughput:` block, `err/s`
without a colon). A UTF-8 BOM, CRLF line ends and foreign lines in between (a wrapper's, a Kubernetes Job's) are
tolerated. parse_log refuses a file that is not sysbench output, or a statistics block cut short, with its name
and line (BadInput), never reading it as empty; parse_output (a live run) never raises: what it cannot read is
missing (no totals: the run failed).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from layerbench.errors import BadInput
from layerbench.records.totals import Interval, Totals
from layerbench.sysbench.histogram import distribution, parse_histogram

NUM = r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
UNIT_MS = {"ms": 1.0, "s": 1000.0, "us": 0.001, "": 1.0}
MAX_COUNT = 2**63 - 1  # sysbench's counters are 64-bit; SQLite's INTEGER holds no more
BLOCKS = {"OLTP test statistics:": "0.4", "SQL statistics:": "1.0"}


@dataclass(frozen=True)
class LogRun:
    """One sysbench run read from its text output."""

    layout: str  # "0.4", "0.5", "1.0" or "1.1"
    version: str | None  # from the banner line, when present
    threads: int | None
    totals: Totals
    percentile: float | None  # which percentile totals.latency_pct_ms is
    intervals: list[Interval] = field(default_factory=list)
    interval_percentile: float | None = None


@dataclass
class Lines:
    """The file's lines, cleaned (BOM, CR), with 1-based numbers for messages."""

    name: str
    lines: list[str]

    @classmethod
    def of(cls, name: str, text: str) -> Lines:
        cleaned = text.replace("\ufeff", "").replace("\r\n", "\n").replace("\r", "\n")
        return cls(name, cleaned.split("\n"))

    def refuse(self, line: int, why: str) -> BadInput:
        return BadInput(f"{self.name}, line {line}: {why}")

    def find(self, pattern: str, start: int = 0) -> tuple[int, re.Match[str]] | None:
        regex = re.compile(pattern)
        for i in range(start, len(self.lines)):
            match = regex.match(self.lines[i].strip())
            if match:
                return i, match
        return None

    def value(self, pattern: str, start: int) -> float | None:
        found = self.find(pattern, start)
        return float(found[1].group(1)) if found else None

    def integer(self, pattern: str, start: int) -> int | None:
        """A count (digits only, read as an int so 10**400 never overflows a float); beyond sysbench's 64-bit
        counters it is refused as damage."""
        found = self.find(pattern, start)
        if found is None:
            return None
        if len(found[1].group(1)) > 19 or int(found[1].group(1)) > MAX_COUNT:
            raise self.refuse(found[0] + 1, f"{found[1].group(1)[:30]} is beyond sysbench's 64-bit counters; "
                                            "the file is damaged")
        return int(found[1].group(1))


# the lines by which sysbench's other tests announce themselves (0.4, 0.5 and 1.0 spellings)
OTHER_TESTS = {
    "cpu": r"Doing CPU performance benchmark|Prime?r? numbers limit:|CPU speed:$|Maximum prime number checked",
    "memory": r"Doing memory operations speed test|Running memory speed test|[0-9.]+ Mi?B transferred \(",
    "fileio": r"Extra file open flags:|File operations:$|Doing (random|sequential) .* test|Read [0-9.]+\w+\s+Written",
    "threads": r"Doing thread subsystem performance test|Thread yields per test:",
    "mutex": r"Doing mutex performance test",
}
SUMMARIES = r"(General statistics|Test execution summary):$"  # every test's closing block, OLTP's comes first


def other_test(doc: Lines) -> BadInput | None:
    """A finished run of a test that measures no database (cpu, memory, fileio, threads, mutex): refused as
    exactly that, not as a run cut short. Called only when the file holds no OLTP statistics block."""
    for test, pattern in OTHER_TESTS.items():
        if doc.find(pattern) is not None:
            return BadInput(f"{doc.name}: a sysbench {test} test, not an OLTP run; layerbench compares database runs")
    if doc.find(SUMMARIES) is not None:
        return BadInput(f"{doc.name}: a sysbench test without SQL statistics (threads, mutex, a script of its own), "
                        "not an OLTP run; layerbench compares database runs")
    return None


def block_start(doc: Lines) -> tuple[int, str]:
    """Where the statistics block starts and which family it is; a refusal naming the line otherwise."""
    for i, line in enumerate(doc.lines):
        if line.strip() in BLOCKS:
            return i, BLOCKS[line.strip()]
    other = other_test(doc)
    if other is not None:
        raise other
    banner = doc.find(r"sysbench\s+\d")
    if banner is not None:
        raise doc.refuse(banner[0] + 1, "sysbench output without a statistics block (no 'SQL statistics:' or "
                                        "'OLTP test statistics:'): the run did not finish, or the file is cut short")
    first = next((i for i, line in enumerate(doc.lines) if line.strip()), 0)
    shown = doc.lines[first].strip()[:60] if doc.lines else ""
    raise doc.refuse(first + 1, f"not sysbench output (no sysbench banner or statistics block; starts with "
                                f"{shown!r})")


def layout_of(doc: Lines, start: int, family: str) -> str:
    if family == "1.0":
        return "1.1" if doc.find(r"Throughput:$", start) else "1.0"
    return "0.5" if doc.find(r"General statistics:$", start) else "0.4"


def latency(doc: Lines, key: str, start: int) -> float | None:
    """A latency line of the block (`min:`, `avg:`, `max:`, `sum:`) in ms, with or without a unit."""
    found = doc.find(rf"{key}:\s+{NUM}\s*(ms|s|us)?$", start)
    if found is None:
        return None
    return finite(doc, found[0], float(found[1].group(1)) * UNIT_MS[found[1].group(2) or ""])


def finite(doc: Lines, index: int, value: float) -> float:
    if not math.isfinite(value):
        raise doc.refuse(index + 1, "a value too large to be a number; the file is damaged")
    return value


def percentile_line(doc: Lines, start: int) -> tuple[float | None, float | None]:
    """(which percentile, its value in ms): `95th percentile: 4.74` or `approx.  99 percentile: 1.78ms`."""
    found = doc.find(rf"(?:approx\.\s+)?{NUM}(?:th)? percentile:\s+{NUM}\s*(ms|s|us)?$", start)
    if found is None:
        return None, None
    label, value, unit = found[1].group(1), found[1].group(2), found[1].group(3) or ""
    pct = float(label)
    if not 0 < pct <= 100:
        raise doc.refuse(found[0] + 1, f"percentile {label} is not between 0 and 100")
    return pct, finite(doc, found[0], float(value) * UNIT_MS[unit])


def count(doc: Lines, key: str, start: int) -> int | None:
    return doc.integer(rf"{key}:\s+(\d+)(?:\s+\(.*\))?$", start)


def required(doc: Lines, start: int, key: str, pattern: str) -> str:
    """The first group of the block's `key` line, as written; a refusal naming the block when it is missing."""
    found = doc.find(pattern, start)
    if found is None:
        raise doc.refuse(start + 1, f"the statistics block starting here has no '{key}' line: the file is cut "
                                    "short or not a layout layerbench reads (0.4, 0.5, 1.0, 1.1)")
    return found[1].group(1)


def totals_of(doc: Lines, start: int) -> tuple[Totals, float | None]:
    written = required(doc, start, "transactions:", r"transactions:\s+(\d+)\s*\(")
    if len(written) > 19 or int(written) > MAX_COUNT:
        raise doc.refuse(start + 1, f"{written[:30]} transactions is beyond sysbench's 64-bit counters; the file "
                                    "is damaged")
    transactions = int(written)
    duration = float(required(doc, start, "total time:", rf"(?:total time|time elapsed):\s+{NUM}s$"))
    if not 0 < duration < math.inf or not transactions / duration < math.inf:
        raise doc.refuse(start + 1, f"total time {duration:g} s with {transactions} transactions gives no finite "
                                    "rate; the file is damaged")
    reads, writes, other = (count(doc, k, start) or 0 for k in ("read", "write", "other"))
    queries = count(doc, "queries", start) or count(doc, "total", start) or reads + writes + other
    pct, pct_ms = percentile_line(doc, start)
    errors = count(doc, "ignored errors", start)
    totals = Totals(
        duration=duration, transactions=transactions, queries=queries, reads=reads, writes=writes, other=other,
        tps=transactions / duration, qps=queries / duration,
        errors=errors if errors is not None else count(doc, "deadlocks", start) or 0,
        reconnects=count(doc, "reconnects", start) or 0,
        events=count(doc, "total number of events", start) or transactions,
        latency_min_ms=latency(doc, "min", start), latency_avg_ms=latency(doc, "avg", start),
        latency_max_ms=latency(doc, "max", start), latency_pct_ms=pct_ms, latency_sum_ms=latency(doc, "sum", start))
    return totals, pct


# --- interval lines of every version ------------------------------------------------------------------------

INTERVAL_START = re.compile(r"^\[\s*" + NUM + r"s\s*\]\s*(.*)$")
FIELDS = {
    "threads": r"(?:thds|threads):\s*(\d+)", "tps": r"\btps:\s*" + NUM, "qps": r"\bqps:\s*" + NUM,
    "rwo": r"\(r/w/o:\s*" + NUM + "/" + NUM + "/" + NUM + r"\)", "reads": r"\breads(?:/s)?:\s*" + NUM,
    "writes": r"\bwrites(?:/s)?:\s*" + NUM, "lat10": r"lat\s*\(ms,\s*" + NUM + r"%\):\s*" + NUM,
    "lat05": r"response time:\s*" + NUM + r"\s*(ms|s|us)?\s*\(" + NUM + r"%\)",
    "errors": r"(?:\berr/s:?|\berrors:)\s*" + NUM, "reconnects": r"(?:reconn/s|reconnects):\s*" + NUM,
}
FIELD_RE = {k: re.compile(v) for k, v in FIELDS.items()}


def interval_of(line: str) -> tuple[Interval, float | None] | None:
    """One `[ 10s ]` report line of any version, or None when the line is not one (or lacks threads/tps)."""
    start = INTERVAL_START.match(line.strip())
    if not start:
        return None
    rest = start.group(2)
    got = {k: r.search(rest) for k, r in FIELD_RE.items()}
    if not got["threads"] or not got["tps"]:
        return None
    f = {k: [float(x) for x in m.groups() if x is not None and x not in UNIT_MS] for k, m in got.items() if m}
    numbers = [float(start.group(1)), *(x for values in f.values() for x in values)]
    if not all(math.isfinite(x) for x in numbers) or len(got["threads"].group(1)) > 9:
        return None  # damaged: a number too large for a rate or a thread count
    reads, writes, other = f["rwo"] if "rwo" in f else (f.get("reads", [0.0])[0], f.get("writes", [0.0])[0], 0.0)
    pct, lat = (f["lat10"][0], f["lat10"][1]) if "lat10" in f else (None, None)
    if "lat05" in f:
        unit = got["lat05"].group(2) or "ms"  # type: ignore[union-attr]
        lat, pct = f["lat05"][0] * UNIT_MS[unit], f["lat05"][1]
    tps = f["tps"][0]
    qps = f["qps"][0] if "qps" in f else reads + writes + other
    interval = Interval(float(start.group(1)), int(got["threads"].group(1)), tps, qps, reads, writes, other, lat,
                        f.get("errors", [0.0])[0], f.get("reconnects", [0.0])[0])
    return interval, pct


def intervals_of(doc: Lines, end: int) -> tuple[list[Interval], float | None]:
    found = [parsed for line in doc.lines[:end] if (parsed := interval_of(line))]
    return [i for i, _ in found], next((p for _, p in found if p is not None), None)


def parse_log(name: str, text: str) -> LogRun:
    """One sysbench output file; BadInput naming `name` and the line for anything that is not a whole run."""
    if "\0" in text:
        raise BadInput(f"{name}, line 1: binary data (a NUL byte), not sysbench's text output")
    doc = Lines.of(name, text)
    start, family = block_start(doc)
    totals, pct = totals_of(doc, start)
    intervals, interval_pct = intervals_of(doc, start)
    banner = doc.find(r"sysbench\s+(\d[\w.\-]*)")
    threads = doc.integer(r"Number of threads:\s*(\d+)$", 0)
    return LogRun(layout_of(doc, start, family), banner[1].group(1).rstrip(":") if banner else None,
                  int(threads) if threads else (intervals[0].threads if intervals else None), totals, pct,
                  intervals, interval_pct)


# --- a live run: the hook's machine records, the human text as the fallback ---------------------------------

MARK = "LAYERBENCH "  # the report hook's prefix (sysbench/command.py HOOK_LUA)
NEEDED_KEYS = frozenset({"kind", "time", "interval", "events", "reads", "writes", "other", "errors", "reconnects"})
_decoder = json.JSONDecoder()


@dataclass
class ParsedOutput:
    intervals: list[Interval] = field(default_factory=list)
    totals: Totals | None = None
    errors: list[str] = field(default_factory=list)  # FATAL/ALERT lines sysbench printed
    latency: dict[float, float] = field(default_factory=dict)  # percentile -> ms of the measured window


def _rate(value: float, seconds: float) -> float:
    return value / seconds if seconds > 0 else 0.0


def interval_from_record(rec: dict[str, Any]) -> Interval:
    seconds = float(rec["interval"])
    queries = rec["reads"] + rec["writes"] + rec["other"]
    return Interval(
        time=float(rec["time"]), threads=int(rec["threads"]), tps=_rate(rec["events"], seconds),
        qps=_rate(queries, seconds), reads_ps=_rate(rec["reads"], seconds),
        writes_ps=_rate(rec["writes"], seconds), other_ps=_rate(rec["other"], seconds),
        latency_pct_ms=rec.get("latency_pct_ms"), errors_ps=_rate(rec["errors"], seconds),
        reconnects_ps=_rate(rec["reconnects"], seconds),
    )


def totals_from_record(rec: dict[str, Any]) -> Totals:
    seconds = float(rec["interval"])
    queries = int(rec["reads"] + rec["writes"] + rec["other"])
    return Totals(
        duration=seconds, transactions=int(rec["events"]), queries=queries, reads=int(rec["reads"]),
        writes=int(rec["writes"]), other=int(rec["other"]), tps=_rate(rec["events"], seconds),
        qps=_rate(queries, seconds), errors=int(rec["errors"]), reconnects=int(rec["reconnects"]),
        events=int(rec["events"]), latency_min_ms=rec.get("latency_min_ms"),
        latency_avg_ms=rec.get("latency_avg_ms"), latency_max_ms=rec.get("latency_max_ms"),
        latency_pct_ms=rec.get("latency_pct_ms"), latency_sum_ms=rec.get("latency_sum_ms"),
    )


def parse_mark_records(line: str) -> list[dict[str, Any]]:
    """Every `LAYERBENCH {...}` record in a line (two threads' output can share one line); damaged ones skipped."""
    records = []
    start = line.find(MARK)
    while start >= 0:
        try:
            record, end = _decoder.raw_decode(line, start + len(MARK))
        except ValueError:
            end = start + len(MARK)
        else:
            if isinstance(record, dict) and record.keys() >= NEEDED_KEYS:
                records.append(record)
        start = line.find(MARK, end)
    return records


def parse_mark_line(line: str) -> dict[str, Any] | None:
    """The first `LAYERBENCH {...}` record of a line, or None."""
    records = parse_mark_records(line)
    return records[0] if records else None


def parse_output(text: str) -> ParsedOutput:
    """A live run's output: machine lines first; totals from the human summary when the machine total is
    missing (and its intervals when there were no machine ones). Never raises."""
    parsed = ParsedOutput(errors=fatal_lines(text))
    for line in text.splitlines():
        for record in parse_mark_records(line):
            try:
                if record["kind"] == "interval":
                    parsed.intervals.append(interval_from_record(record))
                elif record["kind"] == "total":
                    parsed.totals = totals_from_record(record)
            except (TypeError, ValueError, KeyError, OverflowError):
                continue
    if parsed.totals is None:
        human = parse_human(text)
        parsed.totals = human.totals
        parsed.intervals = parsed.intervals or human.intervals
    counts = parse_histogram(text)
    if counts and parsed.totals is not None:
        parsed.latency = distribution(counts, parsed.totals.latency_max_ms)
    return parsed


def fatal_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if re.match(r"^\s*(FATAL|ALERT)\b", line)][:20]


def parse_human(text: str) -> ParsedOutput:
    """sysbench's own text, read by the same functions as an imported log, but never refused: what is not a
    whole statistics block gives no totals (a run that failed), the interval lines that are whole are kept."""
    doc = Lines.of("sysbench output", text)
    parsed = ParsedOutput(intervals=intervals_of(doc, len(doc.lines))[0], errors=fatal_lines(text))
    with contextlib.suppress(BadInput):  # no whole statistics block: the run did not finish
        parsed.totals = totals_of(doc, block_start(doc)[0])[0]
    return parsed
