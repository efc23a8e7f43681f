"""Where sysbench connects: the value a started server hands to everything that talks to it (sysbench, the
environment record, the dataset checks). A leaf: the server, sysbench, measure and backend packages all use it."""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.secrets import Secret


@dataclass(frozen=True)
class Endpoint:
    """Where sysbench connects. The password is a Secret and never prints."""

    host: str
    port: int
    user: str
    password: Secret
    database: str = "sbtest"
    socket: str | None = None
    driver: str = "mysql"  # sysbench's --db-driver: "mysql" (MariaDB, MySQL) or "pgsql" (PostgreSQL)

    @property
    def is_postgresql(self) -> bool:
        return self.driver == "pgsql"

    def describe(self) -> str:
        return f"{self.user}@{self.host}:{self.port}/{self.database}"
