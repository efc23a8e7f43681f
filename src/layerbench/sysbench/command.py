"""sysbench's command lines (argument lists: built here, run by a client runner of sysbench/client.py) and the
Lua report hook (its output is read by sysbench/output.py).

The measured run goes through a small wrapper script that loads the real test (a bundled oltp_* test or
the user's Lua file) and installs `sysbench.hooks.report_intermediate` / `report_cumulative` (sysbench 1.0
API), which print one `LAYERBENCH {json}` line per interval and one at the end (output.MARK). Credentials reach
sysbench through `--config-file` (a 0600 file), never argv.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from layerbench.endpoint import Endpoint
from layerbench.sysbench.custom_script import dataset_flags, env_prefix, script_path

if TYPE_CHECKING:  # the campaign's Workload model, for type hints only: campaign/ imports sysbench/
    from layerbench.campaign.workload import Workload

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
    """sysbench options that carry credentials; written to a 0600 file and passed with --config-file. The driver
    (and so the options' prefix) is the server's: mysql, or pgsql for PostgreSQL."""
    prefix = endpoint.driver
    lines = [
        f"db-driver={endpoint.driver}",
        f"{prefix}-host={endpoint.host}",
        f"{prefix}-port={endpoint.port}",
        f"{prefix}-user={endpoint.user}",
        f"{prefix}-password={endpoint.password.reveal()}",
        f"{prefix}-db={endpoint.database}",
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


def prepare_argv(workload: Workload, config_file: Path, threads: int, script: str | None = None) -> list[str]:
    """The argument list of `sysbench prepare`, with one thread per table (sysbench 1.0 prepares tables in
    parallel); `script`: a wrapper that runs instead of the test (the subset prepare of a resumed build)."""
    return [*sysbench_argv(workload), f"--config-file={config_file}", script or test_script(workload),
            *workload_args(workload, threads), "prepare"]


def cleanup_argv(workload: Workload, config_file: Path) -> list[str]:
    """The argument list of `sysbench cleanup`, which drops the workload's tables (DROP TABLE IF EXISTS: harmless
    on an empty server)."""
    return [*sysbench_argv(workload), f"--config-file={config_file}", test_script(workload),
            *workload_args(workload, 1), "cleanup"]


def run_argv(workload: Workload, config_file: Path, hook_file: Path, threads: int) -> list[str]:
    """The argument list of the measured run, warm-up included in the same process and connections.

    sysbench 1.0 has no --warmup-time; `--report-checkpoints=W` dumps and resets every counter W seconds in,
    so the last cumulative report covers exactly the `duration` seconds after the warm-up; `--histogram`
    prints that window's latency histogram (histogram.py) just before it.
    """
    cmd = [*sysbench_argv(workload), f"--config-file={config_file}", str(hook_file), *workload_args(workload, threads),
           f"--time={workload.warmup + workload.duration}", "--events=0",
           f"--report-interval={workload.report_interval}", f"--percentile={workload.percentile}",
           "--histogram=on"]
    if workload.warmup > 0:
        cmd.append(f"--report-checkpoints={workload.warmup}")
    return [*cmd, "run"]
