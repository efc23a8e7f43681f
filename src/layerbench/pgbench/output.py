"""The one parser of pgbench's output (PostgreSQL's pgbench, 9.6 to 15 layouts), shared by the live run
(run/execution.py) and the importer of archived logs (importing/logs.py), into the records sysbench's runs fill
(records/totals.py Totals and Interval).

What pgbench prints, with `-P 1 -r` (15.18, tests/data/logs/pgbench-15.18):

    pgbench (15.18 (Debian 15.18-0+deb12u1))
    progress: 1.0 s, 1447.8 tps, lat 1.363 ms stddev 0.394, 0 failed
    transaction type: <builtin: TPC-B (sort of)>
    number of clients: 2
    number of transactions actually processed: 4354
    number of failed transactions: 0 (0.000%)
    latency average = 1.372 ms
    tps = 1454.107285 (without initial connection time)
    statement latencies in milliseconds and failures:
             0.159           0  UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;

The progress lines are the intervals (pgbench's own tps and mean latency of each); the summary is the totals: its
transactions, its tps (so the duration is transactions / tps: the time without the connections' set-up), its mean
latency, its failed transactions as errors. pgbench prints no percentile nor maximum: a live run's come from its
per-transaction log, in the line pgbench/command.py's LATENCY_SCRIPT prints after pgbench's output (an imported
log has none, so they stay unknown there). The
per-statement list (`-r`) says what one transaction runs: its SQL statements (the `\\set` lines are pgbench's own
meta-commands, no query) are counted as reads (SELECT), writes (INSERT, UPDATE, DELETE, COPY, MERGE) and other
(BEGIN, END, ...), as sysbench counts its queries, and each statement's mean latency is kept.

parse_log refuses what is not a whole pgbench run (another program's output, a run pgbench itself says it aborted,
a summary cut short, a number no counter holds) with its name and line; parse_output (a live run) never raises.
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, field, replace

from layerbench.errors import BadInput
from layerbench.records.totals import Interval, Totals
from layerbench.sysbench.output import MAX_COUNT, Lines, LogRun

NUM = r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
BANNER = re.compile(r"^pgbench \((\d[^()]*(?:\([^()]*\))?)\)$")  # pgbench (15.18 (Debian 15.18-0+deb12u1))
SUMMARY = re.compile(r"^transaction type:\s*(.+)$")
PROGRESS = re.compile(r"^progress:\s*" + NUM + r"\s*s,\s*" + NUM + r"\s*tps,\s*lat\s*" + NUM
                      + r"\s*ms\s+stddev\s+(" + NUM[1:-1] + r"|NaN|nan)(.*)$")
FAILED = re.compile(r",\s*([0-9]+)\s*failed\b")
STATEMENT = re.compile(r"^" + NUM + r"(?:\s+([0-9]+))?(?:\s+([0-9]+))?\s{2,}(\S.*)$")
ABORTED = re.compile(r".*(?:Run was aborted|client \d+ aborted)")
READS = ("SELECT", "WITH", "VALUES", "TABLE", "SHOW")
WRITES = ("INSERT", "UPDATE", "DELETE", "COPY", "MERGE")
MAX_CLIENTS = 10**6
EPOCH = 1e8  # a progress time beyond this is --progress-timestamp's Unix time, not seconds since the start


@dataclass(frozen=True)
class Statement:
    """One line of `-r`'s list: the command and its mean latency in ms (meta-commands kept: pgbench's own)."""

    command: str
    latency_ms: float
    failures: int = 0

    @property
    def kind(self) -> str:
        """read, write or other, as sysbench counts queries; `meta` for pgbench's own `\\set`, `\\sleep`, ..."""
        if self.command.startswith("\\"):
            return "meta"
        word = self.command.split(None, 1)[0].upper().rstrip(";")
        return "read" if word in READS else "write" if word in WRITES else "other"


@dataclass(frozen=True)
class PgbenchRun(LogRun):
    """One pgbench run read from its text output (layout "pgbench"), with its statements when `-r` was given."""

    statements: tuple[Statement, ...] = ()
    transaction_type: str | None = None
    scale: int | None = None


@dataclass
class ParsedPgbench:
    """A live run's output as far as it goes: what it cannot read is missing (no totals: the run failed)."""

    intervals: list[Interval] = field(default_factory=list)
    totals: Totals | None = None
    errors: list[str] = field(default_factory=list)  # pgbench's own `error:` lines
    statements: tuple[Statement, ...] = ()
    version: str | None = None  # from pgbench's banner: `15.18 (Debian 15.18-0+deb12u1)`
    percentile: float | None = None  # which percentile totals.latency_pct_ms is (LATENCY_SCRIPT's line)


LATENCY = re.compile(r"^layerbench latency: p(\d{1,3}(?:\.\d+)?) (\d+\.\d+) ms min (\d+\.\d+) ms max (\d+\.\d+) ms of "
                     r"(\d+) transactions$")


def with_latency(parsed: ParsedPgbench, text: str) -> ParsedPgbench:
    """The percentile, minimum and maximum of the run's per-transaction log (pgbench/command.py LATENCY_SCRIPT's
    line, which follows pgbench's summary), in its totals."""
    found = [m for m in (LATENCY.match(line.strip()) for line in text.splitlines()[-20:]) if m]
    if not found or parsed.totals is None:
        return parsed
    match = found[-1]
    parsed.percentile = float(match.group(1))
    parsed.totals = replace(parsed.totals, latency_pct_ms=float(match.group(2)),
                            latency_min_ms=float(match.group(3)), latency_max_ms=float(match.group(4)))
    return parsed


def is_pgbench_output(text: str) -> bool:
    """Whether a file is pgbench's (its banner, or its summary's `transaction type:` line), not sysbench's."""
    lines = [line.strip() for line in text.replace("\ufeff", "").splitlines()[:10_000]]
    return any(BANNER.match(line) or SUMMARY.match(line) for line in lines)


def statements_of(doc: Lines) -> tuple[Statement, ...]:
    """`-r`'s list after its heading: `latency [failures [retries]]  command`, until the first other line."""
    found = doc.find(r"statement latencies in milliseconds")
    if found is None:
        return ()
    out = []
    for line in doc.lines[found[0] + 1:]:
        match = STATEMENT.match(line.strip())
        if not match or not math.isfinite(float(match.group(1))) or len(match.group(2) or "") > 18:
            break
        out.append(Statement(match.group(4)[:500], float(match.group(1)), int(match.group(2) or 0)))
    return tuple(out)


def query_mix(statements: tuple[Statement, ...]) -> tuple[int, int, int]:
    """(reads, writes, other) per transaction; (0, 0, 0) without `-r`'s list (queries unknown, not guessed)."""
    kinds = [s.kind for s in statements]
    return kinds.count("read"), kinds.count("write"), kinds.count("other")


def interval_of(line: str, clients: int, mix: tuple[int, int, int], previous: float) -> Interval | None:
    """One progress line (`previous`: the time of the line before, so an interval is the time between them)."""
    match = PROGRESS.match(line.strip())
    if not match:
        return None
    at, tps, lat = (float(match.group(i)) for i in (1, 2, 3))
    failed = FAILED.search(match.group(5))
    if not all(math.isfinite(x) for x in (at, tps, lat)) or (failed and len(failed.group(1)) > 18):
        return None
    seconds = max(at - previous, 1e-9)
    errors = int(failed.group(1)) / seconds if failed else 0.0
    reads, writes, other = (tps * n for n in mix)
    return Interval(at, clients, tps, reads + writes + other, reads, writes, other, None, errors, 0.0)


def intervals_of(doc: Lines, clients: int, mix: tuple[int, int, int]) -> list[Interval]:
    """Every whole progress line, in order; times made relative to the start under --progress-timestamp."""
    times = [float(m.group(1)) for line in doc.lines if (m := PROGRESS.match(line.strip()))]
    origin = times[0] - 1.0 if times and times[0] > EPOCH else 0.0  # the first report comes after its interval
    out: list[Interval] = []
    for line in doc.lines:
        previous = out[-1].time + origin if out else origin
        parsed = interval_of(line, clients, mix, previous)
        if parsed is not None and parsed.time > previous:
            out.append(replace(parsed, time=parsed.time - origin))
    return out


def count(doc: Lines, pattern: str) -> int | None:
    """A summary count (digits only); beyond a 64-bit counter it is refused as damage."""
    found = doc.find(pattern)
    if found is None:
        return None
    digits = found[1].group(1)
    if len(digits) > 19 or int(digits) > MAX_COUNT:
        raise doc.refuse(found[0] + 1, f"{digits[:30]} is beyond pgbench's 64-bit counters; the file is damaged")
    return int(digits)


def number(doc: Lines, pattern: str) -> float | None:
    found = doc.find(pattern)
    if found is None:
        return None
    value = float(found[1].group(1))
    if not math.isfinite(value):
        raise doc.refuse(found[0] + 1, "a value too large to be a number; the file is damaged")
    return value


def start_of(doc: Lines) -> int:
    """The summary's first line (`transaction type:`); a refusal naming the line when there is none."""
    summary = doc.find(SUMMARY.pattern)
    if summary is not None:
        return summary[0]
    banner = doc.find(BANNER.pattern)
    if banner is not None:
        error = doc.find(r"pgbench: (?:error|fatal): (.*)$")
        why = f" (pgbench: {error[1].group(1)[:80]})" if error else ""
        raise doc.refuse(banner[0] + 1, f"pgbench output without a summary: the run did not finish{why}")
    first = next((i for i, line in enumerate(doc.lines) if line.strip()), 0)
    shown = doc.lines[first].strip()[:60] if doc.lines else ""
    raise doc.refuse(first + 1, f"not pgbench output (no 'pgbench (...)' banner or summary; starts with {shown!r})")


def totals_of(doc: Lines, start: int, mix: tuple[int, int, int]) -> Totals:
    """The summary's totals; pgbench's own word that the run was aborted, or a missing count, is a refusal."""
    aborted = doc.find(ABORTED.pattern)
    if aborted is not None:
        raise doc.refuse(aborted[0] + 1, "pgbench says the run was aborted (a client lost its connection or failed "
                                         "a query): its totals are incomplete")
    transactions = count(doc, r"number of transactions actually processed:\s*(\d+)")
    tps = number(doc, r"tps = " + NUM + r" \((?:without initial connection time|excluding connections establishing)")
    if transactions is None or tps is None:
        missing = "number of transactions actually processed" if transactions is None else "tps = ..."
        raise doc.refuse(start + 1, f"the summary starting here has no '{missing}' line: the file is cut short")
    if tps <= 0:  # no transaction finished (or a damaged figure): no rate to compare
        raise doc.refuse(start + 1, f"the summary says tps = {tps:g} after {transactions} transactions: pgbench "
                                    "finished no measured transaction, so the file holds no run to compare")
    duration = transactions / tps
    if not 0 < duration < math.inf:
        raise doc.refuse(start + 1, f"{transactions} transactions at {tps:g} tps give no duration; the file is "
                                    "damaged")
    reads, writes, other = (transactions * n for n in mix)
    latency = number(doc, r"latency average\s*=\s*" + NUM + r"\s*ms$")
    return Totals(duration=duration, transactions=transactions, queries=reads + writes + other, reads=reads,
                  writes=writes, other=other, tps=tps, qps=(reads + writes + other) / duration,
                  errors=count(doc, r"number of failed transactions:\s*(\d+)") or 0, reconnects=0,
                  events=transactions, latency_avg_ms=latency,
                  latency_sum_ms=latency * transactions if latency is not None else None)


def parse_log(name: str, text: str) -> PgbenchRun:
    """One pgbench output file; BadInput naming `name` and the line for anything that is not a whole run."""
    if "\0" in text:
        raise BadInput(f"{name}, line 1: binary data (a NUL byte), not pgbench's text output")
    doc = Lines.of(name, text)
    start = start_of(doc)
    statements = statements_of(doc)
    mix = query_mix(statements)
    totals = totals_of(doc, start, mix)
    clients = count(doc, r"number of clients:\s*(\d+)$")
    clients = clients if clients is not None and 0 < clients <= MAX_CLIENTS else None
    banner = doc.find(BANNER.pattern)
    kind = doc.find(SUMMARY.pattern)
    scale = count(doc, r"scaling factor:\s*(\d+)$")
    return PgbenchRun("pgbench", banner[1].group(1) if banner else None, clients, totals, None,
                      intervals_of(doc, clients or 0, mix), None, statements,
                      kind[1].group(1).strip()[:200] if kind else None, scale)


def error_lines(text: str) -> list[str]:
    """pgbench's own error lines (`pgbench: error: ...`), the first 20."""
    return [line.strip() for line in text.splitlines()
            if re.match(r"^\s*pgbench: (error|fatal):", line) or ABORTED.match(line)][:20]


def parse_output(text: str, clients: int) -> ParsedPgbench:
    """A live run's output, read by the same functions as an imported log, but never refused: a run that did not
    finish whole (aborted, cut short) gives no totals; its whole progress lines are kept."""
    doc = Lines.of("pgbench output", text.replace("\0", ""))
    statements = statements_of(doc)
    mix = query_mix(statements)
    banner = doc.find(BANNER.pattern)
    parsed = ParsedPgbench(intervals_of(doc, clients, mix), errors=error_lines(text), statements=statements,
                           version=banner[1].group(1) if banner else None)
    with contextlib.suppress(BadInput):
        parsed.totals = totals_of(doc, start_of(doc), mix)
    return with_latency(parsed, text)
