"""What a running server holds of a workload's tables: row counts, CHECKSUM TABLE values, existing tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from layerbench.endpoint import Endpoint
from layerbench.server.datadir import query

if TYPE_CHECKING:  # type hints only: campaign/ and backends/ import server/
    from layerbench.campaign.workload import Workload


def table_names(workload: Workload) -> list[str]:
    return [f"sbtest{i}" for i in range(1, workload.tables + 1)]


def base_tables(endpoint: Endpoint) -> list[str]:
    """Every base table of the benchmark's database, by name (what a script of the user's prepared)."""
    rows = query(endpoint, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                 "TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME", database=endpoint.database)
    return [str(name) for (name,) in rows]


def workload_tables(endpoint: Endpoint, workload: Workload) -> list[str]:
    """The tables that hold a workload's data: sbtest1..N of a built-in test; those a user's script made."""
    return base_tables(endpoint) if workload.is_lua_path else table_names(workload)


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def row_counts(endpoint: Endpoint, workload: Workload) -> dict[str, int]:
    """Rows per table (COUNT(*): a scan of the smallest index)."""
    return {name: int(query(endpoint, f"SELECT COUNT(*) FROM {quoted(name)}", database=endpoint.database)[0][0])
            for name in workload_tables(endpoint, workload)}


def existing_tables(endpoint: Endpoint, workload: Workload) -> dict[str, int]:
    """With `reset: none`: which of the workload's tables the server holds, with InnoDB's row estimate (cheap,
    approximate; recorded so a report can tell what data a run worked on)."""
    rows = query(endpoint, "SELECT TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                 "DATABASE() AND TABLE_TYPE = 'BASE TABLE'", database=endpoint.database)
    wanted = set(table_names(workload))  # a script of the user's: every table, it names its own
    return {str(name): int(count or 0) for name, count in rows if name in wanted or workload.is_lua_path}


def complete_tables(endpoint: Endpoint, workload: Workload) -> list[str]:
    """Tables a `sysbench prepare` finished: all rows there and the secondary index k_<n> built (its last step)."""
    indexed = {str(t) for (t,) in query(
        endpoint, "SELECT DISTINCT TABLE_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() "
        "AND INDEX_NAME REGEXP '^k_[0-9]+$'", database=endpoint.database)}
    present = existing_tables(endpoint, workload)
    done = []
    for name in table_names(workload):
        if name in present and name in indexed:
            count = int(query(endpoint, f"SELECT COUNT(*) FROM {name}", database=endpoint.database)[0][0])
            if count == workload.table_size:
                done.append(name)
    return done


def table_checksums(endpoint: Endpoint, tables: list[str]) -> dict[str, int]:
    """CHECKSUM TABLE of the given tables (reads every row through the server); none for no tables."""
    if not tables:
        return {}
    rows = query(endpoint, f"CHECKSUM TABLE {', '.join(map(quoted, tables))}", database=endpoint.database)
    return {str(name).split(".")[-1]: int(value) for name, value in rows}
