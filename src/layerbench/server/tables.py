"""What a running server holds of a workload's tables: row counts, CHECKSUM TABLE values, existing tables. A
PostgreSQL server (endpoint.is_postgresql) is asked its own catalogs, and has no CHECKSUM TABLE: its checksum of a
table is the sum over its rows of the first 60 bits of md5(row as text), which no row order changes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from layerbench.endpoint import Endpoint
from layerbench.pgbench.dataset import TABLES as PGBENCH_TABLES
from layerbench.server.datadir import query

if TYPE_CHECKING:  # type hints only: campaign/ and backends/ import server/
    from layerbench.campaign.workload import Workload


def table_names(workload: Workload) -> list[str]:
    """A built-in sysbench test's sbtest1..N, or pgbench's four tables."""
    if workload.is_pgbench:
        return list(PGBENCH_TABLES)
    return [f"sbtest{i}" for i in range(1, workload.tables + 1)]


PG_TABLES = "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"


def base_tables(endpoint: Endpoint) -> list[str]:
    """Every base table of the benchmark's database, by name (what a script of the user's prepared)."""
    if endpoint.is_postgresql:
        return [str(name) for (name,) in query(endpoint, PG_TABLES, database=endpoint.database)]
    rows = query(endpoint, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                 "TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME", database=endpoint.database)
    return [str(name) for (name,) in rows]


def workload_tables(endpoint: Endpoint, workload: Workload) -> list[str]:
    """The tables that hold a workload's data: sbtest1..N of a built-in test, pgbench's four; those a user's
    script made."""
    return base_tables(endpoint) if workload.is_lua_path else table_names(workload)


def quoted(name: str, endpoint: Endpoint | None = None) -> str:
    """A table name as the server's SQL quotes it: `name` (MariaDB, MySQL), "name" (PostgreSQL)."""
    if endpoint is not None and endpoint.is_postgresql:
        return '"' + name.replace('"', '""') + '"'
    return "`" + name.replace("`", "``") + "`"


def row_counts(endpoint: Endpoint, workload: Workload) -> dict[str, int]:
    """Rows per table (COUNT(*): a scan of the smallest index)."""
    return {name: int(query(endpoint, f"SELECT COUNT(*) FROM {quoted(name, endpoint)}",
                            database=endpoint.database)[0][0])
            for name in workload_tables(endpoint, workload)}


def existing_tables(endpoint: Endpoint, workload: Workload) -> dict[str, int]:
    """With `reset: none`: which of the workload's tables the server holds, with InnoDB's row estimate (cheap,
    approximate; recorded so a report can tell what data a run worked on); PostgreSQL's from pg_class."""
    if endpoint.is_postgresql:
        rows = query(endpoint, "SELECT c.relname, GREATEST(c.reltuples, 0)::bigint FROM pg_class c JOIN pg_namespace n "
                     "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'",
                     database=endpoint.database)
        wanted = set(table_names(workload))
        return {str(name): int(count or 0) for name, count in rows if name in wanted or workload.is_lua_path}
    rows = query(endpoint, "SELECT TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                 "DATABASE() AND TABLE_TYPE = 'BASE TABLE'", database=endpoint.database)
    wanted = set(table_names(workload))  # a script of the user's: every table, it names its own
    return {str(name): int(count or 0) for name, count in rows if name in wanted or workload.is_lua_path}


def complete_tables(endpoint: Endpoint, workload: Workload) -> list[str]:
    """Tables a `sysbench prepare` finished: all rows there and the secondary index k_<n> built (its last step)."""
    indexes = ("SELECT DISTINCT tablename FROM pg_indexes WHERE schemaname = 'public' AND indexname ~ '^k_[0-9]+$'"
               if endpoint.is_postgresql else "SELECT DISTINCT TABLE_NAME FROM information_schema.STATISTICS WHERE "
               "TABLE_SCHEMA = DATABASE() AND INDEX_NAME REGEXP '^k_[0-9]+$'")
    indexed = {str(t) for (t,) in query(endpoint, indexes, database=endpoint.database)}
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
    if endpoint.is_postgresql:
        return {name: int(query(endpoint, postgresql_checksum_sql(name), database=endpoint.database)[0][0])
                for name in tables}
    rows = query(endpoint, f"CHECKSUM TABLE {', '.join(map(quoted, tables))}", database=endpoint.database)
    return {str(name).split(".")[-1]: int(value) for name, value in rows}


def postgresql_checksum_sql(table: str) -> str:
    """A PostgreSQL table's checksum: the sum over its rows of md5(row as text)'s first 60 bits (0 when empty)."""
    name = '"' + table.replace('"', '""') + '"'
    return (f"SELECT COALESCE(SUM(('x' || SUBSTR(MD5(t::text), 1, 15))::bit(60)::bigint), 0) % 18446744073709551616 "
            f"FROM {name} AS t")
