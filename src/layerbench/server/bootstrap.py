"""Bootstrap of a server's datadir and of the benchmark account (through --init-file, for any backend)."""

from __future__ import annotations

from pathlib import Path

from layerbench.secrets import Secret


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def init_sql(user: str, password: Secret, database: str) -> str:
    """SQL run by the server at start (--init-file): the benchmark database and account, password fresh.

    The account is re-created at every start, so a cached dataset snapshot never carries a usable password.
    """
    account = f"{sql_string(user)}@'%'"
    return "\n".join(
        [
            f"CREATE DATABASE IF NOT EXISTS `{database}`;",
            f"CREATE OR REPLACE USER {account} IDENTIFIED BY {sql_string(password.reveal())};",
            f"GRANT ALL PRIVILEGES ON *.* TO {account};",
            "",
        ]
    )


def install_db_command(install_db: str, datadir: Path, extra: list[str] | None = None) -> list[str]:
    """mariadb-install-db for a private datadir: no test db, root only through the unix socket."""
    return [
        install_db, "--no-defaults", f"--datadir={datadir}", "--user=root",
        "--auth-root-authentication-method=socket", "--skip-test-db", *(extra or []),
    ]
