"""The external backend: an existing server. Nothing is started or stopped; the password comes from an
environment variable or a file named in the campaign, never from the campaign itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymysql

from layerbench.backends.base import ClientRunner, Endpoint, ServerSpec, host_client_processes
from layerbench.backends.external.variant import ExternalVariant
from layerbench.errors import BadInput, RunFailed
from layerbench.secrets import Secret, read_secret_from
from layerbench.server.datadir import connect


class ExternalBackend:
    kind = "external"

    def __init__(self, variant: ExternalVariant) -> None:
        self.variant = variant

    def check(self) -> None:
        variant = self.variant
        read_secret_from(variant.password_env, variant.password_file)
        if variant.server.config:
            raise BadInput(f"variants.{variant.name}.server.config: an external server is not configured by "
                           "layerbench; remove server.config and configure the server yourself")

    def prepare(self, say: Callable[[str], None]) -> None:
        """Nothing to build."""

    def up(self, spec: ServerSpec) -> Endpoint:
        variant = self.variant
        password = read_secret_from(variant.password_env, variant.password_file) or Secret("")
        endpoint = Endpoint(variant.host, variant.port, variant.user, password, variant.database)
        try:
            connect(endpoint, timeout=10).close()
        except pymysql.err.MySQLError as error:
            raise RunFailed(f"external server {endpoint.describe()}: cannot connect ({error.args[-1]}); check "
                            "host, port, user and password") from None
        return endpoint

    def down(self) -> None:
        """Nothing to stop: the server is not ours."""

    def exit_cause(self) -> str | None:
        """The server is not ours to watch."""
        return None

    def components(self) -> dict[str, list[int]]:
        return {}

    def client_processes(self, hook: Path) -> list[int]:
        return host_client_processes(hook)

    def cgroups(self) -> list[Path]:
        return []

    def describe(self) -> dict[str, Any]:
        return {"backend": "external", "host": self.variant.host, "port": self.variant.port}

    def client(self) -> ClientRunner | None:
        return None

    def server_log_tail(self, lines: int = 20) -> str:
        return ""
