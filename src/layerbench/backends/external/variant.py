"""An external variant: a server layerbench does not start, reached at an address with a password from an
environment variable or a file."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from layerbench.backends.variant_base import VariantBase
from layerbench.hosts.inventory import check_host_address
from layerbench.hosts.placement import Placement
from layerbench.vocabulary.base import PrintableLine


class ExternalVariant(VariantBase):
    backend: Literal["external"]
    host: str = Field(default="127.0.0.1", max_length=253)
    port: int = Field(default=3306, ge=1, le=65535)
    user: PrintableLine = Field(default="sbtest", pattern=r"^[^\x00-\x1f\x7f-\x9f]{1,80}$")
    database: str = Field(default="sbtest", pattern=r"^[A-Za-z0-9_$]{1,64}$")
    password_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$",
                                     description="environment variable holding the password")
    password_file: str | None = Field(default=None, max_length=4096, description="file holding the password")

    local_backend: ClassVar[str] = "layerbench.backends.external.backend:ExternalBackend"
    owns_server: ClassVar[bool] = False
    run_overhead: ClassVar[float] = 2

    @field_validator("host")
    @classmethod
    def _an_address(cls, value: str) -> str:
        check_host_address(value, "give the server's address")  # it goes into sysbench's config file
        return value

    @model_validator(mode="after")
    def _one_password_source(self) -> ExternalVariant:
        if self.password_env and self.password_file:
            raise ValueError("give password_env or password_file, not both")
        if self.data_dir:
            raise ValueError("data_dir: an external server keeps its datadir where it is; remove data_dir")
        return self

    @model_validator(mode="after")
    def _only_what_applies(self) -> ExternalVariant:
        """Keys every variant has that an external server does not take (the plan would print them as if they
        applied): it runs where it is, unpinned by layerbench, and is whatever server answers there."""
        if self.cpus is not None:
            raise ValueError(f"variants.{self.name}.cpus: backend external: the server runs where it is and layerbench "
                             "does not pin it; pin it on its own machine and remove cpus (client_cpus pins sysbench)")
        if self.server.flavour == "mariadb":  # mysql: refused by preflight, with the backends that run it
            raise ValueError(f"variants.{self.name}.server.flavour: backend external: the server is whatever "
                             f"answers at {self.host}:{self.port} (each run records its version); remove "
                             "server.flavour and version")
        return self

    def describe_plan(self) -> str:
        return f"nothing: uses the server at {self.host}:{self.port}, database {self.database} as {self.user}"

    def fixed_port(self) -> int | None:
        return self.port

    def where_text(self, server: str, client: str, same_host: bool) -> str:
        return f"sysbench on {client}"

    def network_path(self, placement: Placement) -> str:
        return f"TCP to the external server {self.host}:{self.port}"
