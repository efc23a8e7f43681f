"""pgbench's command lines (argument lists: built here, run by a client runner of sysbench/client.py) and the
passfile that carries the password: pgbench reads it from PGPASSFILE (`env PGPASSFILE=<file> pgbench ...`), a
0600 file in the run's private folder, so no password is ever on a command line, in a log or in the store.

| step        | command                                                                              |
|-------------|--------------------------------------------------------------------------------------|
| the dataset | `pgbench -i -s SCALE -q` (drops and makes pgbench_accounts, _branches, _tellers, _history, vacuums) |
| warm-up     | `pgbench -n -c N -j N -T WARMUP -P INTERVAL -b SCRIPT` (its own process, counters of its own)    |
| measured    | `pgbench -n -c N -j N -T DURATION -P INTERVAL -r -b SCRIPT -l` (in LATENCY_SCRIPT)                |

`-n`: no VACUUM before a run: every run starts on a restored snapshot that `-i` vacuumed, with an empty history.

pgbench prints no latency percentile, only its mean; its per-transaction log (`-l`: one line per transaction, its
latency in microseconds in the third field) has every latency. The measured pgbench runs inside a short shell
script (LATENCY_SCRIPT: the same on this machine, an ssh: host or in a container, wherever the client runner starts
it) that gives the log a temporary folder of its own, then prints one line after pgbench's output: `layerbench
latency: p95 4.211 ms min 0.512 ms max 31.004 ms of 20480 transactions` (the percentile by the nearest-rank rule:
the smallest latency at or above which that share of the transactions lies), removes the folder and exits with
pgbench's status. The log is written by pgbench's own threads, buffered: a line of about 40 bytes a transaction.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from layerbench.endpoint import Endpoint

if TYPE_CHECKING:  # the campaign's Workload model, for type hints only: campaign/ imports pgbench/
    from layerbench.campaign.workload import Workload

BIN = Path("/usr/lib/postgresql/15/bin/pgbench")  # Debian 12's postgresql-client-15 (scripts/setup installs it)
# a -D variable the scripts never read: it puts the run's marker in pgbench's command line (pgbench cuts its own
# argument at the `=`, so /proc shows `lb_run <marker>`: the marker is found whole, `lb_run=<marker>` is not)
MARK = "lb_run"


def passfile_field(text: str) -> str:
    """A field of a libpq passfile: `:` and `\\` escaped with a backslash."""
    return text.replace("\\", "\\\\").replace(":", "\\:")


def passfile_text(endpoint: Endpoint) -> str:
    """`host:port:database:user:password`, the one line libpq reads for this server (secrets.write_private
    writes it 0600: libpq ignores a passfile others can read)."""
    fields = [endpoint.host, str(endpoint.port), endpoint.database, endpoint.user, endpoint.password.reveal()]
    return ":".join(passfile_field(f) for f in fields) + "\n"


def connection_args(endpoint: Endpoint) -> list[str]:
    return [f"--host={endpoint.host}", f"--port={endpoint.port}", f"--username={endpoint.user}"]


def with_passfile(passfile: Path, cmd: list[str]) -> list[str]:
    return ["env", f"PGPASSFILE={passfile}", *cmd]


# $1: the percentile; then pgbench's argument list. Its log goes to a folder of its own; the latencies (third field,
# microseconds; a failed transaction's is a word, left out) sorted; the nearest rank; the folder removed whatever
# pgbench's status, which is the script's.
LATENCY_SCRIPT = r"""p=$1; shift
d=$(mktemp -d) || exit 70
"$@" --log --log-prefix="$d/tx"
status=$?
cat "$d"/tx.* 2>/dev/null | awk '$3 ~ /^[0-9]+$/ {print $3}' | sort -n | awk -v p="$p" '
  { v[NR] = $1 }
  END { if (NR > 0) { i = int(p * NR / 100); if (i < p * NR / 100) i++; if (i < 1) i = 1;
        printf "layerbench latency: p%s %.3f ms min %.3f ms max %.3f ms of %d transactions\n",
               p, v[i] / 1000, v[1] / 1000, v[NR] / 1000, NR } }'
rm -rf "$d"
exit $status"""
LATENCY_LINE = "layerbench latency:"  # what pgbench/output.py reads


def with_latency_log(percentile: float, cmd: list[str]) -> list[str]:
    """`cmd` (pgbench and its arguments) run in LATENCY_SCRIPT: its output, then the latency line."""
    return ["sh", "-c", LATENCY_SCRIPT, "pgbench-latency", f"{percentile:g}", *cmd]


def init_argv(workload: Workload, endpoint: Endpoint, passfile: Path) -> list[str]:
    """The dataset: pgbench's four tables at the workload's scale, in the benchmark database."""
    return with_passfile(passfile, [str(BIN), "--initialize", f"--scale={workload.pgbench_scale}", "--quiet",
                                    *connection_args(endpoint), endpoint.database])


def run_argv(workload: Workload, endpoint: Endpoint, passfile: Path, clients: int, seconds: int, marker: Path, *,
             per_statement: bool) -> list[str]:
    """One pgbench run of `seconds` with `clients` connections (a thread each), progress every report_interval;
    `per_statement` adds -r (the measured run: its statements' latencies and the query mix) and runs it in
    LATENCY_SCRIPT (its latency percentile)."""
    cmd = [str(BIN), "--no-vacuum", f"--client={clients}", f"--jobs={clients}", f"--time={seconds}",
           f"--progress={workload.report_interval}", f"--builtin={workload.test}", f"--define={MARK}={marker}",
           *(["--report-per-command"] if per_statement else []), *connection_args(endpoint), endpoint.database]
    if per_statement:  # the measured run: its latency percentile from its per-transaction log
        return with_passfile(passfile, with_latency_log(workload.percentile, cmd))
    return with_passfile(passfile, cmd)
