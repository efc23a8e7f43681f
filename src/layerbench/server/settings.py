"""The `server:` block of a variant: which server (a flavour and a version) and its my.cnf overlay, with the
checks every option name and value passes (no secrets, no newlines, nothing layerbench owns)."""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from layerbench.errors import shown

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
def canonical_option(key: str) -> str:
    return key.replace("_", "-").lower()


def refuse_secret_names(keys: Any, fix: str) -> None:
    for key in keys:
        if SECRET_NAME.search(key) and canonical_option(key) not in NOT_SECRETS:
            raise ValueError(f"{shown(key)} looks like a password; a campaign file is stored with its results, so "
                             f"{fix}")


def check_option_value(key: str, value: Any) -> None:
    """No newline, control character or overlong text: a value must never add lines to a config file."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{key}: {shown(value)} is not a finite number")
    if isinstance(value, str):
        if len(value) > MAX_VALUE:
            raise ValueError(f"{key}: a value of {len(value):,} characters; the limit is {MAX_VALUE}")
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ValueError(f"{key}: {shown(value)} contains a newline or control character; write it on one line")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


VERSION_RE = re.compile(r"^\d{1,4}(\.\d{1,4}){0,2}$")


class ServerSettings(Strict):
    """Which server (a flavour and a version: docs/servers.md) and how it is configured: a my.cnf overlay for
    the [mysqld] section."""

    flavour: Literal["mariadb", "mysql"] | None = Field(
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

    @field_validator("config")
    @classmethod
    def _keys_are_options(cls, value: dict[str, ConfigValue]) -> dict[str, ConfigValue]:
        for key, item in value.items():
            if not re.fullmatch(OPTION_NAME, key):
                raise ValueError(f"{shown(key)} is not a server option name (letters, digits, _ and -)")
            if canonical_option(key) in OWNED_BY_LAYERBENCH:
                raise ValueError(f"{key}: set by layerbench for each run; remove it")
            check_option_value(key, item)
        refuse_secret_names(value, "remove it (the server's passwords are generated for each run)")
        return value
