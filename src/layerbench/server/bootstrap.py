"""The files a server starts with, for every backend: its my.cnf (the shared benchmark defaults, the flavour's,
the variant's overlay, then the settings layerbench owns) and its init SQL (the benchmark account, read through
--init-file). Each backend only says where they go (a folder, a ConfigMap and a Secret, a config disk)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from layerbench.secrets import write_private
from layerbench.server.flavour import MARIADB, Flavour, init_sql, install_db_command, sql_string
from layerbench.server.mycnf import merged_settings, render_mycnf
from layerbench.server.settings import ConfigValue
from layerbench.server.spec import ServerSpec


@dataclass(frozen=True)
class ServerFiles:
    mycnf: str
    init_sql: str = field(repr=False)  # holds the password: only ever written to private places


def server_files(spec: ServerSpec, owned: Mapping[str, ConfigValue], flavour: Flavour = MARIADB) -> ServerFiles:
    """The run's my.cnf and init SQL; the my.cnf (no secret in it) is also kept in the run's folder."""
    text = render_mycnf(merged_settings(owned, spec.config, flavour.defaults))
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    (spec.run_dir / "my.cnf").write_text(text, encoding="utf-8")
    return ServerFiles(text, flavour.account_sql(spec.user, spec.password, spec.database))


def write_server_files(files: ServerFiles, folder: Path) -> tuple[Path, Path]:
    """my.cnf and init.sql into a private (0700) folder; returns their paths."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    mycnf = folder / "my.cnf"
    mycnf.write_text(files.mycnf, encoding="utf-8")
    return mycnf, write_private(folder / "init.sql", files.init_sql)


__all__ = ["ServerFiles", "init_sql", "install_db_command", "server_files", "sql_string", "write_server_files"]
