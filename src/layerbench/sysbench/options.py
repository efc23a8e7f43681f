"""The sysbench options a workload's `options:` may not set: those layerbench sets from the campaign's own fields
or its own files, and those that change what a run measures behind the report's labels (another script than the
workload's `test`, help or a version instead of a run).

sysbench takes the last value of an option, and a workload's `options:` come after layerbench's own flags on
its command line, so `options: {threads: 64}` would run 64 threads in a run the report labels "2 threads".
Every name here is refused in any spelling (`table_size`, `table-size`, `TABLE-SIZE`, `--table-size`), with one
line naming the campaign field to use instead. docs/campaign.md lists them (a test renders the list from here).
"""

from __future__ import annotations

from typing import Any

from layerbench.errors import shown

# A backticked word in a reason is a field of the campaign file (a test checks each one exists).
_EXTERNAL = "a variant with backend `external` sets"
PGSQL_OWNED = ("a postgresql variant's backend sets every pgsql-* option (where the server is, its generated account "
               "and database); remove it")
OWNED_SYSBENCH_OPTIONS: dict[str, str] = {
    "threads": "set the workload's `threads` (one count or a sweep)",
    "num-threads": "set the workload's `threads` (one count or a sweep)",
    "tables": "set the workload's `tables`",
    "table-size": "set the workload's `table_size`",
    "time": "set the workload's `duration` (sysbench runs `warmup` + `duration` seconds)",
    "max-time": "set the workload's `duration` (sysbench runs `warmup` + `duration` seconds)",
    "events": "a run is timed by the workload's `duration` (layerbench sets --events=0)",
    "max-requests": "a run is timed by the workload's `duration` (layerbench sets --events=0)",
    "warmup-time": "set the workload's `warmup` (counters are reset after it)",
    "report-checkpoints": "set the workload's `warmup` (counters are reset after it)",
    "report-interval": "set the workload's `report_interval`",
    "percentile": "set the workload's `percentile`",
    "histogram": "layerbench always records it; list more latency percentiles in `compare_percentiles`",
    "rand-type": "set the workload's `rand_type`",
    "rand-seed": "set the workload's `rand_seed`",
    "config-file": "layerbench passes its own private file (each run's connection and password); remove it",
    "db-driver": "the variant's server flavour sets it (mysql, or pgsql for `flavour: postgresql`); remove it",
    "mysql-host": f"the variant's backend decides where the server is ({_EXTERNAL} `host`)",
    "mysql-port": f"the variant's backend decides where the server is ({_EXTERNAL} `port`)",
    "mysql-socket": f"the variant's backend decides where the server is ({_EXTERNAL} `host` and `port`)",
    "mysql-user": f"the variant's backend creates the user ({_EXTERNAL} `user`)",
    "mysql-password": f"the password is generated for each run ({_EXTERNAL} `password_env` or `password_file`)",
    "mysql-db": f"the variant's backend creates the database ({_EXTERNAL} `database`)",
    "mysql-dry-run": "it pretends every query succeeded, so nothing would be measured; remove it",
    "pgsql-host": PGSQL_OWNED,
    "pgsql-port": PGSQL_OWNED,
    "pgsql-user": PGSQL_OWNED,
    "pgsql-password": PGSQL_OWNED,
    "pgsql-db": PGSQL_OWNED,
    "test": "sysbench 1.0 runs the script --test names instead of the one on its command line; set the workload's "
            "`test`",
    "help": "sysbench prints its help and exits instead of running the test; remove it",
    "version": "sysbench prints its version and exits instead of running the test; remove it",
}


def option_name(key: str) -> str:
    """The one spelling of a sysbench option: no leading dashes, `-` for `_`, lower case."""
    return key.lstrip("-").replace("_", "-").lower()


def owned_option_refusal(key: str) -> str | None:
    """The one-line refusal of an option layerbench owns, or None for an option the user may set."""
    name = option_name(key)
    reason = OWNED_SYSBENCH_OPTIONS.get(name)
    if reason is None:
        return None
    return f"{shown(key)}: sysbench's --{name} belongs to layerbench; {reason}"


# Read only with --db-driver=mysql: sysbench 1.0.20's mysql driver options (`sysbench --help`) and the option the
# bundled scripts read in their MySQL branch only (oltp_common.lua: the tables' ENGINE=). Against PostgreSQL
# sysbench would take them and change nothing, so a run would be labelled with a setting it never had.
MYSQL_DRIVER_ONLY = {
    "mysql-storage-engine": "the bundled scripts read it for MySQL's CREATE TABLE ... ENGINE= only",
}


def pgsql_refusal(key: str) -> str | None:
    """Why a workload option cannot go to sysbench's pgsql driver (one line), or None: every mysql-* option is the
    mysql driver's (or the scripts' MySQL branch's), which the pgsql driver never reads."""
    name = option_name(key)
    if not name.startswith("mysql-"):
        return None
    why = MYSQL_DRIVER_ONLY.get(name, "an option of sysbench's mysql driver")
    return f"{shown(key)}: {why}; sysbench's pgsql driver never reads it"


def check_sysbench_options(options: dict[str, Any]) -> None:
    """ValueError (one line) for an owned option, or one option given twice in two spellings (the last would win)."""
    seen: dict[str, str] = {}
    for key in options:
        refusal = owned_option_refusal(key)
        if refusal:
            raise ValueError(refusal)
        name = option_name(key)
        if name in seen:
            raise ValueError(f"{shown(seen[name])} and {shown(key)} are one sysbench option (--{name}); "
                             "give it once")
        seen[name] = key


def owned_options_table() -> str:
    """The Markdown table of docs/campaign.md "Options layerbench owns", rendered from the list above."""
    rows = ["| sysbench option | instead |", "|---|---|"]
    rows += [f"| `{name}` | {reason} |" for name, reason in OWNED_SYSBENCH_OPTIONS.items()]
    return "\n".join(rows)
