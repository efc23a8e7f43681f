"""The `server:` block of a variant: which server (a flavour and a version) and its my.cnf overlay, with the
checks every option name and value passes (no secrets, no newlines, nothing layerbench owns)."""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from layerbench.errors import shown
from layerbench.vocabulary.base import Strict
from layerbench.vocabulary.sizes import in_mib, size_in_bytes

MAX_VALUE = 1000  # a my.cnf or sysbench option value
ConfigValue = str | int | float | bool | None

# Set by layerbench for every backend, so the variant cannot move them (the backend owns where things live).
OWNED_BY_LAYERBENCH = frozenset(
    {"port", "socket", "datadir", "bind-address", "pid-file", "log-error", "user", "init-file", "basedir"}
)
# Names that carry a secret: never in a campaign file, which is stored with the results.
SECRET_NAME = re.compile(r"(^|[-_])(password|passwd|pwd|pass|secret|token|api-?key|credentials?)$", re.IGNORECASE)
NOT_SECRETS = frozenset({"disconnect-on-expired-password"})  # a real server option: a boolean
OPTION_NAME = r"[A-Za-z][A-Za-z0-9_-]{0,63}"
# Memory: a limit layerbench derives holds the buffer pool plus this much (connections and their buffers at
# sysbench's thread counts, the log buffer, the data dictionary, the server's own code), and never less than the
# backend's old fixed default (2 GiB), so a variant that leaves the buffer pool alone gets what it always got.
SERVER_MEMORY_OVERHEAD = 512 << 20
DEFAULT_BUFFER_POOL = 128 << 20  # MariaDB's and MySQL's innodb_buffer_pool_size when my.cnf does not set it
MEMORY_FLOOR = 2 << 30


def canonical_option(key: str) -> str:
    return key.replace("_", "-").lower()


def refuse_secret_names(keys: Any, fix: str) -> None:
    for key in keys:
        if SECRET_NAME.search(key) and canonical_option(key) not in NOT_SECRETS:
            raise ValueError(f"{shown(key)} looks like a password; a campaign file is stored with its results, so "
                             f"{fix}")


def check_option_value(key: str, value: Any) -> None:
    """No newline, control character, character past ASCII or overlong text: a value must never add lines to a
    config file, and what sysbench and the server read is what the plan shows."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{key}: {shown(value)} is not a finite number")
    if isinstance(value, str):
        if len(value) > MAX_VALUE:
            raise ValueError(f"{key}: a value of {len(value):,} characters; the limit is {MAX_VALUE}")
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ValueError(f"{key}: {shown(value)} contains a newline or control character; write it on one line")
        if not value.isascii():  # C1 controls, digits sysbench and mysqld read as letters: ASCII only (issue #44)
            raise ValueError(f"{key}: {shown(value)} is not ASCII (it goes on a command line or into a config "
                             "file); write it in ASCII")


# my.cnf names people carry over to a PostgreSQL variant, with what PostgreSQL has instead (validate's fix).
MYSQL_EQUIVALENTS = {
    "innodb_buffer_pool_size": "shared_buffers", "innodb_flush_log_at_trx_commit": "synchronous_commit",
    "innodb_doublewrite": "full_page_writes", "innodb_log_file_size": "max_wal_size",
    "innodb_redo_log_capacity": "max_wal_size", "innodb_flush_method": "wal_sync_method",
    "innodb_io_capacity": "bgwriter_lru_maxpages", "sync_binlog": "none (PostgreSQL has no binary log)",
    "log_bin": "none (PostgreSQL has no binary log)", "skip_log_bin": "none (PostgreSQL has no binary log)",
    "performance_schema": "none (its pg_stat_* views are always on)", "skip_name_resolve": "none (remove it)",
    "max_prepared_stmt_count": "none (remove it)", "thread_handling": "none (a process per connection)",
}
MYSQL_PREFIXES = ("innodb", "mysql", "mariadb", "aria", "myisam", "binlog", "wsrep", "rocksdb")


def mysql_only_refusal(key: str) -> str | None:
    """Why `key` is a my.cnf option, not a postgresql.conf setting (one line with the fix), or None: a `-` in its
    name (PostgreSQL's names have none), an engine's prefix (innodb_...), or a MySQL name listed above."""
    name = key.replace("-", "_").lower()
    if "-" not in key and not name.startswith(MYSQL_PREFIXES) and name not in MYSQL_EQUIVALENTS:
        return None
    instead = MYSQL_EQUIVALENTS.get(name)
    fix = f"PostgreSQL's nearest is {instead}" if instead else "write a postgresql.conf setting"
    return (f"{shown(key)} is a MySQL/MariaDB (my.cnf) option; a postgresql variant's server.config holds "
            f"postgresql.conf settings: {fix}")


VERSION_RE = re.compile(r"^[0-9]{1,4}(\.[0-9]{1,4}){0,2}$")
PG_MEMORY_RE = re.compile(r"\s*([0-9]{1,19})\s*(kB|MB|GB|TB)?\s*")
PG_UNITS = {"kB": 10, "MB": 20, "GB": 30, "TB": 40}
PG_BLOCK = 8192  # a memory setting without a unit counts PostgreSQL's blocks (shared_buffers)


def pg_memory_bytes(value: ConfigValue) -> int | None:
    """A PostgreSQL memory setting such as shared_buffers in bytes: a number of 8 kB blocks, or a number with kB,
    MB, GB or TB (powers of 1024, PostgreSQL's spelling); None when it is no such value (postgres -C says why)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    match = PG_MEMORY_RE.fullmatch(str(value))
    if not match:
        return None
    size = int(match.group(1)) << PG_UNITS[match.group(2)] if match.group(2) else int(match.group(1)) * PG_BLOCK
    return size if size < 2**63 else None


class ServerSettings(Strict):
    """Which server (a flavour and a version: docs/servers.md) and how it is configured: a my.cnf overlay for
    the [mysqld] section, or for PostgreSQL postgresql.conf settings (server/postgresql.py checks their names)."""

    flavour: Literal["mariadb", "mysql", "postgresql"] | None = Field(
        default=None, description="the server family; default: the host's MariaDB (or the variant's mysqld:)")
    version: str | None = Field(default=None, description="its version, like 9.7 or 10.11 (docs/servers.md)")
    config: dict[str, ConfigValue] = Field(default_factory=dict, max_length=500)

    @field_validator("version", mode="before")
    @classmethod
    def _is_a_version(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, float):  # YAML reads 10.10 as the number 10.1: only a string keeps the version
            raise ValueError(f"{shown(value)} is a number; write the version quoted, like '9.7' or '10.11'")
        if isinstance(value, bool) or not isinstance(value, str | int) or not VERSION_RE.match(str(value)):
            raise ValueError(f"{shown(value)} is not a version; write it like '9.7' or '10.11'")
        return str(value)

    @model_validator(mode="after")
    def _version_needs_flavour(self) -> ServerSettings:
        if self.version is not None and self.flavour is None:
            raise ValueError("version: give the flavour too, like server: {flavour: mysql, version: '9.7'}")
        return self

    def buffer_pool_option(self) -> tuple[str, ConfigValue] | None:
        """(name as written, value) of innodb_buffer_pool_size in the overlay, in any spelling (PostgreSQL's
        shared_buffers, its cache of pages); None when unset."""
        name = "shared-buffers" if self.flavour == "postgresql" else "innodb-buffer-pool-size"
        return next(((k, v) for k, v in self.config.items() if canonical_option(k) == name), None)

    def page_size(self) -> str | None:
        """innodb_page_size as the overlay sets it (any spelling), or None: it changes the dataset's bytes."""
        return next((str(v) for k, v in self.config.items() if canonical_option(k) == "innodb-page-size"), None)

    def buffer_pool_bytes(self) -> int | None:
        """The buffer pool this server is configured with, in bytes; None when my.cnf leaves it at the default or
        its value is no size (the server refuses that at start)."""
        option = self.buffer_pool_option()
        if option is None:
            return None
        return pg_memory_bytes(option[1]) if self.flavour == "postgresql" else size_in_bytes(option[1])

    def memory_for(self, extra: int = 0) -> int:
        """The memory a limit layerbench derives gives this server: the buffer pool (the server's default when
        unset) + SERVER_MEMORY_OVERHEAD + `extra` (a guest's kernel), and at least MEMORY_FLOOR, in whole MiB."""
        pool = self.buffer_pool_bytes() or DEFAULT_BUFFER_POOL  # PostgreSQL's default shared_buffers is the same
        return in_mib(max(MEMORY_FLOOR, pool + SERVER_MEMORY_OVERHEAD + extra)) << 20

    @field_validator("config")
    @classmethod
    def _keys_are_options(cls, value: dict[str, ConfigValue]) -> dict[str, ConfigValue]:
        for key, item in value.items():
            if not re.fullmatch(OPTION_NAME, key):
                raise ValueError(f"{shown(key)} is not a server option name (letters, digits, _ and -)")
            if canonical_option(key) in OWNED_BY_LAYERBENCH:
                raise ValueError(f"{key}: set by layerbench for each run; remove it")
            check_option_value(key, item)
            if canonical_option(key) == "innodb-buffer-pool-size" and size_in_bytes(item) is None:
                raise ValueError(f"{key}: {shown(item)} is not a size the server takes (bytes below 2^63, or a "
                                 "number with K, M, G or T); write it like 2G")
        refuse_secret_names(value, "remove it (the server's passwords are generated for each run)")
        return value
