"""Live servers: connect, query, wait until a server accepts connections (restoring a datadir: restore.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pymysql

from layerbench.endpoint import Endpoint
from layerbench.errors import RunFailed


def connect(endpoint: Endpoint, timeout: float = 5.0, database: str | None = None) -> Any:
    """A connection over TCP (the same path sysbench uses): PyMySQL, or psycopg for PostgreSQL (which always
    names a database: the benchmark's when none is given). Both give cursor(), execute() and fetchall()."""
    if endpoint.is_postgresql:
        import psycopg

        return psycopg.connect(host=endpoint.host, port=endpoint.port, user=endpoint.user,
                               password=endpoint.password.reveal(), dbname=database or endpoint.database,
                               connect_timeout=max(2, int(timeout)), autocommit=True)
    return pymysql.connect(
        host=endpoint.host, port=endpoint.port, user=endpoint.user, password=endpoint.password.reveal(),
        database=database, connect_timeout=max(1, int(timeout)), read_timeout=600, write_timeout=600,
        autocommit=True,
    )


def query(endpoint: Endpoint, sql: str, database: str | None = None) -> list[tuple[Any, ...]]:
    conn = connect(endpoint, database=database)
    try:
        with conn.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall()) if cursor.description is not None else []  # psycopg: none to fetch
    finally:
        conn.close()


def is_psycopg_operational(endpoint: Endpoint, error: BaseException) -> bool:
    """Whether `error` is psycopg's OperationalError or one of its kinds (ConnectionTimeout: a server whose port
    takes the connection but does not answer yet, as a pod's Service may), for a PostgreSQL endpoint."""
    if not endpoint.is_postgresql:
        return False
    import psycopg

    return isinstance(error, psycopg.OperationalError)


def connection_failure(error: BaseException) -> str | None:
    """A run's cause for a database connection or query that failed (PyMySQL's or psycopg's OperationalError: the
    server went away, a timeout), in words; None for any other error, which stays an internal one."""
    import sys

    psycopg = sys.modules.get("psycopg")  # imported only when a PostgreSQL endpoint was connected to
    if isinstance(error, pymysql.err.OperationalError) or (
            psycopg is not None and isinstance(error, psycopg.OperationalError)):
        said = " ".join(str(error).split()) or type(error).__name__
        return f"the connection to the server failed ({type(error).__name__}: {said})"
    return None


def startup_error(log: str) -> str:
    """The most telling line of a failed start: the first [ERROR] that is not the closing 'Aborting'."""
    lines = [line for line in log.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "[ERROR]" in line and not line.rstrip().endswith("Aborting")]
    chosen = errors[0] if errors else (lines[-1] if lines else "no server log")
    return chosen.split("[ERROR]", 1)[-1].strip()


def wait_until_ready(
    endpoint: Endpoint, *, alive: Callable[[], bool], timeout: float, log_tail: Callable[[int], str],
) -> float:
    """Poll until the server accepts the benchmark account's login; returns the seconds it took."""
    started = time.monotonic()
    last_error = "no answer"
    while time.monotonic() - started < timeout:
        if not alive():
            cause = startup_error(log_tail(30))
            raise RunFailed(f"server exited during start-up: {cause.strip()}")
        try:
            connect(endpoint, timeout=2).close()
            return time.monotonic() - started
        except pymysql.err.OperationalError as error:
            last_error = str(error.args[-1]) if error.args else str(error)
        except Exception as error:  # psycopg's OperationalError (imported only for a PostgreSQL endpoint)
            if not is_psycopg_operational(endpoint, error):
                raise
            last_error = (str(error).strip().splitlines() or [type(error).__name__])[0]
        time.sleep(0.2)
    raise RunFailed(f"server did not accept connections within {timeout:.0f} s (last: {last_error})")
