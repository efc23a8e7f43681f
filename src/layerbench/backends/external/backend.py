"""The external backend: an existing server. Nothing is started or stopped; the password comes from an
environment variable or a file named in the campaign, never from the campaign itself."""

from __future__ import annotations

from typing import Any

import pymysql

from layerbench.backends.base import BackendBase, Endpoint, ServerSpec
from layerbench.backends.external.variant import ExternalVariant
from layerbench.errors import BadInput, RunFailed
from layerbench.secrets import Secret, read_secret_from
from layerbench.server.datadir import connect


class ExternalBackend(BackendBase):
    kind = "external"

    def __init__(self, variant: ExternalVariant) -> None:
        self.variant = variant

    def check(self) -> None:
        variant = self.variant
        read_secret_from(variant.password_env, variant.password_file, f"variants.{variant.name}.")
        if variant.server.config:
            raise BadInput(f"variants.{variant.name}.server.config: an external server is not configured by "
                           "layerbench; remove server.config and configure the server yourself")

    def up(self, spec: ServerSpec) -> Endpoint:
        variant = self.variant
        password = read_secret_from(variant.password_env, variant.password_file, f"variants.{variant.name}.") or \
            Secret("")
        endpoint = Endpoint(variant.host, variant.port, variant.user, password, variant.database)
        try:
            connect(endpoint, timeout=10).close()
        except pymysql.err.MySQLError as error:
            raise RunFailed(f"external server {endpoint.describe()}: cannot connect ({error.args[-1]}); check "
                            "host, port, user and password") from None
        return endpoint

    def describe(self) -> dict[str, Any]:
        return {"backend": "external", "host": self.variant.host, "port": self.variant.port}

