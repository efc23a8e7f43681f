"""sysbench: command lines, the Lua report hook, and parsing of its output (machine lines and human text).

The measured run goes through a small wrapper script that loads the real test (a bundled oltp_* test or
the user's Lua file) and installs `sysbench.hooks.report_intermediate` / `report_cumulative` (sysbench 1.0
API), which print one `LAYERBENCH {json}` line per interval and one at the end. Credentials reach sysbench
through `--config-file` (a 0600 file), never argv.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from layerbench.campaign.models import Workload
from layerbench.endpoint import Endpoint
from layerbench.sysbench.custom_script import dataset_flags, env_prefix, script_path
from layerbench.sysbench.histogram import distribution, parse_histogram

MARK = "LAYERBENCH "
SYSBENCH_SHARE = "/usr/share/sysbench"

HOOK_LUA = r"""-- written by layerbench: runs the test below and reports each interval as one JSON line
package.path = {path} .. package.path
dofile({script})

local function lb_num(x, scale)
  if x == nil then return "null" end
  return string.format("%.6f", x * scale)
end

-- one io.write per line: the reporting thread and the main thread both print, and a single write is
-- atomic under stdio's lock (print() writes its text and the newline separately and can interleave)
local function lb_report(kind, stat)
  io.write(string.format(
    'LAYERBENCH {{"kind":"%s","time":%.3f,"interval":%.6f,"threads":%d,"events":%d,"reads":%d,' ..
    '"writes":%d,"other":%d,"errors":%d,"reconnects":%d,"latency_pct_ms":%s,"latency_min_ms":%s,' ..
    '"latency_avg_ms":%s,"latency_max_ms":%s,"latency_sum_ms":%s}}\n',
    kind, stat.time_total, stat.time_interval, stat.threads_running, stat.events, stat.reads,
    stat.writes, stat.other, stat.errors, stat.reconnects, lb_num(stat.latency_pct, 1000),
    lb_num(stat.latency_min, 1000), lb_num(stat.latency_avg, 1000), lb_num(stat.latency_max, 1000),
    lb_num(stat.latency_sum, 1000)))
  io.stdout:flush()
end

function sysbench.hooks.report_intermediate(stat)
  lb_report("interval", stat)
  sysbench.report_default(stat)
end

function sysbench.hooks.report_cumulative(stat)
  lb_report("total", stat)
  local s = stat.time_interval
  local q = stat.reads + stat.writes + stat.other
  print("SQL statistics:")
  print("    queries performed:")
  print(string.format("        read:                            %d", stat.reads))
  print(string.format("        write:                           %d", stat.writes))
  print(string.format("        other:                           %d", stat.other))
  print(string.format("        total:                           %d", q))
  print(string.format("    transactions:                        %-6d (%.2f per sec.)", stat.events, stat.events / s))
  print(string.format("    queries:                             %-6d (%.2f per sec.)", q, q / s))
  print(string.format("    ignored errors:                      %-6d (%.2f per sec.)", stat.errors, stat.errors / s))
  print(string.format("    reconnects:                          %-6d (%.2f per sec.)", stat.reconnects, stat.reconnects / s))
  print("")
  print("General statistics:")
  print(string.format("    total time:                          %.4fs", s))
  print(string.format("    total number of events:              %d", stat.events))
  print("")
  print("Latency (ms):")
  print(string.format("         min:                                    %.2f", stat.latency_min * 1000))
  print(string.format("         avg:                                    %.2f", stat.latency_avg * 1000))
  print(string.format("         max:                                    %.2f", stat.latency_max * 1000))
  print(string.format("         %dth percentile:                        %.2f", sysbench.opt.percentile, stat.latency_pct * 1000))
  print(string.format("         sum:                                    %.2f", stat.latency_sum * 1000))
  io.stdout:flush()
end
"""


@dataclass(frozen=True)
class Interval:
    """One report interval: rates per second over that interval."""

    time: float
    threads: int
    tps: float
    qps: float
    reads_ps: float
    writes_ps: float
    other_ps: float
    latency_pct_ms: float | None
    errors_ps: float
    reconnects_ps: float


@dataclass(frozen=True)
class Totals:
    """The whole measured run."""

    duration: float
    transactions: int
    queries: int
    reads: int
    writes: int
    other: int
    tps: float
    qps: float
    errors: int
    reconnects: int
    events: int
    latency_min_ms: float | None = None
    latency_avg_ms: float | None = None
    latency_max_ms: float | None = None
    latency_pct_ms: float | None = None
    latency_sum_ms: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ParsedOutput:
    intervals: list[Interval] = field(default_factory=list)
    totals: Totals | None = None
    errors: list[str] = field(default_factory=list)  # FATAL/ALERT lines sysbench printed
    latency: dict[float, float] = field(default_factory=dict)  # percentile -> ms of the measured window


# --- command lines ----------------------------------------------------------------------------------------


def test_script(workload: Workload) -> str:
    """The Lua file of the workload: a bundled test by name, or the user's path."""
    if workload.is_lua_path:
        return str(script_path(workload))
    return f"{SYSBENCH_SHARE}/{workload.test}.lua"


def lua_string(text: str) -> str:
    """text as a Lua long string literal ([==[...]==]) whose level no part of text can close early; nothing in
    it is interpreted (no escapes), so any path is embedded as it is."""
    if "\n" in text or "\r" in text:
        raise ValueError("a Lua long string would change its line breaks")  # the campaign refuses them
    level = 0
    while f"]{'=' * level}]" in text or text.endswith(f"]{'=' * level}"):
        level += 1
    return f"[{'=' * level}[{text}]{'=' * level}]"


def hook_script(workload: Workload) -> str:
    """The report hook around the test. Modules are looked up first in a user's script's own folder (as its
    prepare and cleanup find them through LUA_PATH: a copy of oltp_common.lua there wins in every step), then in
    sysbench's share folder."""
    path = f"{SYSBENCH_SHARE}/?.lua;"
    if workload.is_lua_path:
        folder = str(Path(test_script(workload)).parent).rstrip("/")
        path = f"{folder}/?.lua;{folder}/?/init.lua;{path}"
    return HOOK_LUA.format(path=lua_string(path), script=lua_string(test_script(workload)))


def config_file_text(endpoint: Endpoint) -> str:
    """sysbench options that carry credentials; written to a 0600 file and passed with --config-file."""
    lines = [
        "db-driver=mysql",
        f"mysql-host={endpoint.host}",
        f"mysql-port={endpoint.port}",
        f"mysql-user={endpoint.user}",
        f"mysql-password={endpoint.password.reveal()}",
        f"mysql-db={endpoint.database}",
    ]
    return "\n".join(lines) + "\n"


def _option(key: str, value: Any) -> str:
    if isinstance(value, bool):
        value = "on" if value else "off"
    return f"--{key.replace('_', '-')}={value}"


def workload_args(workload: Workload, threads: int) -> list[str]:
    """Options shared by prepare and run: dataset shape (a script of the user's gets only the flags it declares:
    custom_script.py), randomness, the user's extra options."""
    args = [_option(flag, getattr(workload, flag)) for flag in dataset_flags(workload)] + [f"--threads={threads}"]
    if workload.rand_type:
        args.append(f"--rand-type={workload.rand_type}")
    if workload.rand_seed is not None:
        args.append(f"--rand-seed={workload.rand_seed}")
    args += [_option(k, v) for k, v in workload.options.items()]
    return args


def sysbench_argv(workload: Workload) -> list[str]:
    """`sysbench`, after `env LUA_PATH=<the script's folder>;;` for a script of the user's."""
    return [*env_prefix(workload), "sysbench"]


def prepare_command(workload: Workload, config_file: Path, threads: int, script: str | None = None) -> list[str]:
    """`prepare` with one thread per table (sysbench 1.0 prepares tables in parallel); `script`: a wrapper that
    runs instead of the test (the subset prepare of a resumed build)."""
    return [*sysbench_argv(workload), f"--config-file={config_file}", script or test_script(workload),
            *workload_args(workload, threads), "prepare"]


def cleanup_command(workload: Workload, config_file: Path) -> list[str]:
    """`cleanup`: drops the workload's tables (DROP TABLE IF EXISTS: harmless on an empty server)."""
    return [*sysbench_argv(workload), f"--config-file={config_file}", test_script(workload),
            *workload_args(workload, 1), "cleanup"]


def run_command(workload: Workload, config_file: Path, hook_file: Path, threads: int) -> list[str]:
    """The measured run, warm-up included in the same process and connections.

    sysbench 1.0 has no --warmup-time; `--report-checkpoints=W` dumps and resets every counter W seconds in,
    so the last cumulative report covers exactly the `duration` seconds after the warm-up; `--histogram`
    prints that window's latency histogram (latency_histogram.py) just before it.
    """
    cmd = [*sysbench_argv(workload), f"--config-file={config_file}", str(hook_file), *workload_args(workload, threads),
           f"--time={workload.warmup + workload.duration}", "--events=0",
           f"--report-interval={workload.report_interval}", f"--percentile={workload.percentile}",
           "--histogram=on"]
    if workload.warmup > 0:
        cmd.append(f"--report-checkpoints={workload.warmup}")
    return [*cmd, "run"]


# --- parsing ----------------------------------------------------------------------------------------------


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


NEEDED_KEYS = frozenset({"kind", "time", "interval", "events", "reads", "writes", "other", "errors", "reconnects"})
_decoder = json.JSONDecoder()


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
    """Machine lines first; totals from the human summary when the machine total is missing; for an imported
    log without machine lines, the human text alone."""
    parsed = ParsedOutput(errors=fatal_lines(text))
    for line in text.splitlines():
        for record in parse_mark_records(line):
            try:
                if record["kind"] == "interval":
                    parsed.intervals.append(interval_from_record(record))
                elif record["kind"] == "total":
                    parsed.totals = totals_from_record(record)
            except (TypeError, ValueError, KeyError):
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


# --- the human text (sysbench 1.0.x "General statistics" and 1.1 "Throughput" layouts) --------------------

_NUM = r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
_INTERVAL_10 = re.compile(
    r"^\[\s*" + _NUM + r"s\s*\]\s*thds:\s*(\d+)\s+tps:\s*" + _NUM + r"\s+qps:\s*" + _NUM
    + r"\s*\(r/w/o:\s*" + _NUM + "/" + _NUM + "/" + _NUM + r"\)\s+lat\s*\(ms,\s*\d+%\):\s*" + _NUM
    + r"\s+err/s:?\s*" + _NUM + r"\s+reconn/s:\s*" + _NUM
)


def _find(pattern: str, text: str) -> float | None:
    match = re.search(pattern, text, re.MULTILINE)
    if not match:
        return None
    try:
        return float(match.group(1))
    except ValueError:
        return None


def parse_intervals(text: str) -> list[Interval]:
    out = []
    for line in text.splitlines():
        m = _INTERVAL_10.match(line.strip())
        if m:
            g = [float(x) for x in m.groups()]
            out.append(Interval(g[0], int(g[1]), g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9]))
    return out


def parse_human(text: str) -> ParsedOutput:
    """Totals from sysbench's own summary (1.0.x layout, or the 1.1 layout with a Throughput block)."""
    parsed = ParsedOutput(intervals=parse_intervals(text), errors=fatal_lines(text))
    transactions = _find(r"^\s*transactions:\s+(\d+)", text)
    queries = _find(r"^\s*queries:\s+(\d+)", text)
    duration = _find(r"^\s*total time:\s+" + _NUM + r"s", text) or _find(r"^\s*time elapsed:\s+" + _NUM + r"s", text)
    if transactions is None or queries is None or not duration:
        return parsed
    pct = _find(r"^\s*\d+(?:th)? percentile:\s+" + _NUM, text)
    parsed.totals = Totals(
        duration=duration, transactions=int(transactions), queries=int(queries),
        reads=int(_find(r"^\s*read:\s+(\d+)", text) or 0), writes=int(_find(r"^\s*write:\s+(\d+)", text) or 0),
        other=int(_find(r"^\s*other:\s+(\d+)", text) or 0),
        tps=_find(r"^\s*transactions:\s+\d+\s+\(" + _NUM, text) or _find(r"^\s*events/s \(eps\):\s+" + _NUM, text)
        or transactions / duration,
        qps=_find(r"^\s*queries:\s+\d+\s+\(" + _NUM, text) or queries / duration,
        errors=int(_find(r"^\s*ignored errors:\s+(\d+)", text) or 0),
        reconnects=int(_find(r"^\s*reconnects:\s+(\d+)", text) or 0),
        events=int(_find(r"^\s*total number of events:\s+(\d+)", text) or transactions),
        latency_min_ms=_find(r"^\s*min:\s+" + _NUM, text), latency_avg_ms=_find(r"^\s*avg:\s+" + _NUM, text),
        latency_max_ms=_find(r"^\s*max:\s+" + _NUM, text), latency_pct_ms=pct,
        latency_sum_ms=_find(r"^\s*sum:\s+" + _NUM, text),
    )
    return parsed
