"""An `image:` with an entrypoint (mysql:8.4, mariadb:11, percona/percona-server:8.0, or an image of your own made
the same way) is started the way its users start it: through the documented contract of the docker-library
entrypoints (docker-library/mysql and MariaDB/mariadb-docker `docker-entrypoint.sh`), never by running one of
its programs by name:

| what                    | how layerbench gives it                                                            |
|-------------------------|------------------------------------------------------------------------------------|
| root password           | MYSQL_ROOT_PASSWORD_FILE and MARIADB_ROOT_PASSWORD_FILE: a file of a fresh password |
| root's host             | MYSQL_ROOT_HOST / MARIADB_ROOT_HOST = localhost (no root account over TCP)         |
| the benchmark database  | MYSQL_DATABASE / MARIADB_DATABASE                                                  |
| the benchmark account   | /docker-entrypoint-initdb.d/layerbench.sql (run once, by root, on an empty datadir)  |
| my.cnf                  | /etc/mysql/conf.d/layerbench.cnf (the folder mounted read-only)                    |
| the server's command    | the image's own CMD (mysqld, mariadbd)                                             |

So the password is in no environment variable's value, command line or label (`docker inspect` shows the file's
path); the entrypoint reads it as root before it drops to its `mysql` user. The entrypoint initialises the
datadir at every run, so a run starts from an empty datadir (`reset: reprepare`, campaign/models.py): a
dataset snapshot made by this machine's server is not restored into a server whose version the image decides.
The server's flavour is read from the server itself (SELECT VERSION(), @@version_comment) once it answers, and
recorded; the version an image declares (its MYSQL_VERSION, MARIADB_VERSION or PS_VERSION) is checked at
validate time, so a server layerbench does not know is refused before anything starts.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerbench.endpoint import Endpoint
from layerbench.errors import BadInput, RunFailed, shown
from layerbench.secrets import Secret, generate_password
from layerbench.server.datadir import query
from layerbench.server.flavour import SUPPORTED, Flavour, flavour_of_server, init_sql, parse_version
from layerbench.server.mycnf import merged_settings, render_mycnf
from layerbench.server.spec import ServerSpec

CONF_D = "/etc/mysql/conf.d"
INITDB_D = "/docker-entrypoint-initdb.d"
SECRETS = "/run/layerbench-secrets"
DATADIR = "/var/lib/mysql"  # where the docker-library images keep it (their VOLUME)
# The version each image family declares in its environment: (variable, the words of its `--version` line).
DECLARED = (("MARIADB_VERSION", "MariaDB"), ("PS_VERSION", "Percona Server"), ("MYSQL_VERSION", "MySQL"))
_NUMBERS = re.compile(r"(\d+\.\d+\.\d+)(-\d+)?")


@dataclass(frozen=True)
class UpstreamImage:
    """What layerbench reads from an image that has an entrypoint: the version it declares, its volumes."""

    name: str
    declared: tuple[str, str] | None  # (variable, value), like ("MYSQL_VERSION", "8.4.3-1.el9"); None: none
    volumes: tuple[str, ...]

    def declared_flavour(self) -> Flavour | None:
        """The flavour and version the image's environment names (None when it names none or one unknown)."""
        if self.declared is None:
            return None
        variable, value = self.declared
        match = _NUMBERS.search(value.split(":", 1)[-1])
        words = dict(DECLARED)[variable]
        return parse_version(f"Ver {match.group(0)} {words}") if match else None


def inspect_image(client: Any, image: str) -> UpstreamImage | None:
    """The image's entrypoint facts, or None when it has no entrypoint (layerbench starts it with its own
    command then: local.server_command)."""
    config = client.images.get(image).attrs.get("Config") or {}
    if not config.get("Entrypoint"):
        return None
    env = dict(item.split("=", 1) for item in config.get("Env") or [] if "=" in item)
    declared = next(((name, env[name]) for name, _ in DECLARED if env.get(name)), None)
    return UpstreamImage(image, declared, tuple(sorted(config.get("Volumes") or {})))


def check_upstream(variant: Any, image: UpstreamImage) -> None:
    """Validate's refusals for an entrypoint image, each one line: a server layerbench does not know, sysbench
    in a container of it, container-fs over a datadir the image declares as a volume."""
    where = f"variants.{variant.name}"
    if image.declared is not None and image.declared_flavour() is None:
        variable, value = image.declared
        raise BadInput(f"{where}.image: {shown(image.name)} declares {variable}={shown(value, quote=False)}, a "
                       f"server layerbench does not know how to measure; use an image of {SUPPORTED}")
    if variant.client == "container":
        raise BadInput(f"{where}.client: sysbench in a container of {shown(image.name)}: not yet (an image started "
                       "through its entrypoint has no sysbench); use client: host")
    if variant.storage == "container-fs" and DATADIR in image.volumes:
        raise BadInput(f"{where}.storage: {shown(image.name)} declares {DATADIR} a volume, so container-fs would "
                       "measure an anonymous volume, not the overlay layer; use storage: volume, bind or tmpfs")


@dataclass
class UpstreamStart:
    """What a container of an entrypoint image is created with: its environment (no secret in it), its mounts."""

    environment: dict[str, str]
    volumes: dict[str, dict[str, str]]
    root_password: Secret


def upstream_start(spec: ServerSpec, owned: dict[str, Any]) -> UpstreamStart:
    """The run's conf.d file, init SQL and root password file in folders of the private (0700) run folder; the
    folders and files are readable by the container's `mysql` user (the entrypoint reads them after dropping
    root), and by nobody else on this machine, since their parent is 0700."""
    root = generate_password()
    conf_d, initdb_d, secrets = (spec.private_dir / name for name in ("conf.d", "initdb.d", "secrets"))
    text = render_mycnf(merged_settings(owned, spec.config, {}))
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    (spec.run_dir / "my.cnf").write_text(text, encoding="utf-8")  # the run's record: no secret in it
    readable(conf_d / "layerbench.cnf", text)
    readable(initdb_d / "layerbench.sql", init_sql(spec.user, spec.password, spec.database))
    readable(secrets / "root-password", root.reveal())
    environment = {"MYSQL_DATABASE": spec.database, "MARIADB_DATABASE": spec.database,
                   "MYSQL_ROOT_HOST": "localhost", "MARIADB_ROOT_HOST": "localhost",
                   "MYSQL_ROOT_PASSWORD_FILE": f"{SECRETS}/root-password",
                   "MARIADB_ROOT_PASSWORD_FILE": f"{SECRETS}/root-password",
                   "MYSQL_INITDB_SKIP_TZINFO": "1", "MARIADB_INITDB_SKIP_TZINFO": "1"}
    volumes = {str(conf_d.resolve()): {"bind": CONF_D, "mode": "ro"},
               str(initdb_d.resolve()): {"bind": INITDB_D, "mode": "ro"},
               str(secrets.resolve()): {"bind": SECRETS, "mode": "ro"}}
    return UpstreamStart(environment, volumes, root)


def upstream_options(spec: ServerSpec, owned: dict[str, Any], volumes: dict[str, Any], conf: str,
                     ) -> tuple[dict[str, Any], list[Secret]]:
    """The container's environment and mounts (layerbench's own conf folder `conf` left out: the image's CMD runs,
    reading conf.d), and the secrets to redact from its output."""
    start = upstream_start(spec, owned)
    kept = {path: mount for path, mount in volumes.items() if mount["bind"] != conf}
    options = {"environment": start.environment, "volumes": {**kept, **start.volumes}}
    return options, [start.root_password, spec.password]


def upstream_facts(spec: ServerSpec, endpoint: Endpoint, image: str) -> dict[str, str]:
    """Once the server answers: its secrets' files removed, its flavour read and recorded."""
    forget_secrets(spec)
    return {"started_by": "the image's entrypoint", **read_flavour(endpoint, image).facts()}


def readable(path: Path, text: str) -> None:
    """A file the container's own user can read (0644 in a 0755 folder), written with that mode from the start."""
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    path.parent.chmod(0o755)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def forget_secrets(spec: ServerSpec) -> None:
    """The init SQL and root password file go as soon as the server answers (the entrypoint has read them)."""
    for path in (spec.private_dir / "initdb.d" / "layerbench.sql", spec.private_dir / "secrets" / "root-password"):
        path.unlink(missing_ok=True)


def read_flavour(endpoint: Endpoint, image: str) -> Flavour:
    """The flavour the running server names itself by; a server layerbench does not know is a failed run."""
    import pymysql

    try:
        rows = query(endpoint, "SELECT VERSION(), @@version_comment")
    except pymysql.Error as error:
        raise RunFailed(f"image {shown(image)}: its server did not say its version ({type(error).__name__})") from None
    version, comment = (str(value) for value in rows[0])
    flavour = flavour_of_server(version, comment)
    if flavour is None:
        raise RunFailed(f"image {shown(image)} runs {shown(f'{version} ({comment})', 80, quote=False)}, a server "
                        f"layerbench does not know how to measure; use an image of {SUPPORTED}")
    return flavour
