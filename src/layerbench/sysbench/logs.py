"""Raw sysbench output files, as people archive them, read into one run each: the totals, the latency with
the percentile it is (95th, 99th, 100th...), the thread count and the interval series when present.

Layouts (from sysbench's own report code, akopytov/sysbench): 0.4 (`OLTP test statistics`, `Test execution
summary`, `per-request statistics`, `approx.  95 percentile: 11.09ms`), 0.5 (the same block, then `General
statistics` with `response time:`; intervals `[  10s] threads: 8, tps: ..., reads/s: ..., response time: 9.96ms
(95%)`), 1.0 (`SQL statistics`, `General statistics`, `Latency (ms):`, `95th percentile:`; intervals
`[ 1s ] thds: 2 tps: ... lat (ms,95%): ... err/s: ...`) and 1.1 (a `Throughput:` block, `err/s` without a
colon). A UTF-8 BOM, CRLF line ends and foreign lines in between (a wrapper's, a Kubernetes Job's) are
tolerated; a file that is not sysbench output, or a statistics block cut short, is refused with its name and
line (BadInput), never read as empty.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from layerbench.errors import BadInput
from layerbench.sysbench.command import Interval, Totals

NUM = r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
UNIT_MS = {"ms": 1.0, "s": 1000.0, "us": 0.001, "": 1.0}
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
    return float(found[1].group(1)) * UNIT_MS[found[1].group(2) or ""]


def percentile_line(doc: Lines, start: int) -> tuple[float | None, float | None]:
    """(which percentile, its value in ms): `95th percentile: 4.74` or `approx.  99 percentile: 1.78ms`."""
    found = doc.find(rf"(?:approx\.\s+)?{NUM}(?:th)? percentile:\s+{NUM}\s*(ms|s|us)?$", start)
    if found is None:
        return None, None
    label, value, unit = found[1].group(1), found[1].group(2), found[1].group(3) or ""
    pct = float(label)
    if not 0 < pct <= 100:
        raise doc.refuse(found[0] + 1, f"percentile {label} is not between 0 and 100")
    return pct, float(value) * UNIT_MS[unit]


def count(doc: Lines, key: str, start: int) -> int | None:
    found = doc.value(rf"{key}:\s+(\d+)(?:\s+\(.*\))?$", start)
    return None if found is None else int(found)


def required(doc: Lines, start: int, key: str, pattern: str) -> float:
    found = doc.value(pattern, start)
    if found is None:
        raise doc.refuse(start + 1, f"the statistics block starting here has no '{key}' line: the file is cut "
                                    "short or not a layout layerbench reads (0.4, 0.5, 1.0, 1.1)")
    return found


def totals_of(doc: Lines, start: int) -> tuple[Totals, float | None]:
    transactions = int(required(doc, start, "transactions:", r"transactions:\s+(\d+)\s*\("))
    duration = required(doc, start, "total time:", rf"(?:total time|time elapsed):\s+{NUM}s$")
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
    reads, writes, other = f["rwo"] if "rwo" in f else (f.get("reads", [0.0])[0], f.get("writes", [0.0])[0], 0.0)
    pct, lat = (f["lat10"][0], f["lat10"][1]) if "lat10" in f else (None, None)
    if "lat05" in f:
        unit = got["lat05"].group(2) or "ms"  # type: ignore[union-attr]
        lat, pct = f["lat05"][0] * UNIT_MS[unit], f["lat05"][1]
    tps = f["tps"][0]
    qps = f["qps"][0] if "qps" in f else reads + writes + other
    interval = Interval(float(start.group(1)), int(f["threads"][0]), tps, qps, reads, writes, other, lat,
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
    threads = doc.value(r"Number of threads:\s*(\d+)$", 0)
    return LogRun(layout_of(doc, start, family), banner[1].group(1).rstrip(":") if banner else None,
                  int(threads) if threads else (intervals[0].threads if intervals else None), totals, pct,
                  intervals, interval_pct)
