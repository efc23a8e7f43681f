"""What every variant has, whatever its backend: its name, its server (flavour, version, my.cnf overlay), its
CPU lists and hosts; and the questions the core asks a variant's backend (plan text, preflight and placement
rules, resources), each with its default given once here. Each backend's own variant model subclasses
VariantBase in backends/<name>/variant.py and overrides what differs; backends/registry.py lists them.

A leaf of the campaign package: the campaign model (models.py) and the backends' variant models both import it.
"""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from layerbench.campaign.neighbours import NeighbourList
from layerbench.errors import shown
from layerbench.hosts.placement import Placement, tcp_path

if TYPE_CHECKING:
    from layerbench.server.servers import ServerChoice

NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"
ConfigValue = str | int | float | bool | None

# Bounds on what one variant may ask for (docs/campaign.md, "Limits"; those of the whole campaign: models.py).
MAX_SECONDS = 86_400  # a duration or warm-up of one run: a day
MAX_CPU = 4095  # the highest CPU number a CPU list may name
MAX_TEXT = 2000  # a description
MAX_VALUE = 1000  # a my.cnf or sysbench option value
# Set by layerbench for every backend, so the variant cannot move them (the backend owns where things live).
OWNED_BY_LAYERBENCH = frozenset(
    {"port", "socket", "datadir", "bind-address", "pid-file", "log-error", "user", "init-file", "basedir"}
)
# Names that carry a secret: never in a campaign file, which is stored with the results.
SECRET_NAME = re.compile(r"(^|[-_])(password|passwd|pwd|pass|secret|token|api-?key|credentials?)$", re.IGNORECASE)
NOT_SECRETS = frozenset({"disconnect-on-expired-password"})  # a real server option: a boolean
OPTION_NAME = r"[A-Za-z][A-Za-z0-9_-]{0,63}"
# A Docker image reference: [registry[:port]/]path[:tag][@digest], lower-case path components.
IMAGE_RE = (r"^(?:[A-Za-z0-9.-]+(?::\d{1,5})?/)?[a-z0-9]+(?:[._-]+[a-z0-9]+)*(?:/[a-z0-9]+(?:[._-]+[a-z0-9]+)*)*"
            r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")


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


class VariantBase(Strict):
    """The fields every variant has, and the questions plan, preflight, placement, the harness and the campaign
    model ask its backend: the class attributes and methods below, whose defaults each backend's variant model
    (backends/<name>/variant.py) overrides where it differs."""

    name: Annotated[str, Field(pattern=NAME_RE)]
    server: ServerSettings = Field(default_factory=ServerSettings)
    cpus: str | None = Field(default=None, description="CPU list for the server (taskset syntax: 0,1 or 0-1)")
    client_cpus: str | None = Field(default=None, description="CPU list for sysbench")
    cost_per_month: float | None = Field(default=None, ge=0, le=1e12)
    description: str = Field(default="", max_length=MAX_TEXT)
    extends: str | None = None
    server_host: str | None = Field(default=None, description="the host of `hosts:` the server runs on")
    client_host: str | None = Field(default=None, description="the host of `hosts:` sysbench runs on")
    data_dir: str | None = Field(default=None, max_length=4096, pattern=r"^/[^\x00-\x1f\x7f]*$",
                                 description="an absolute directory on the filesystem the run's datadir lives on "
                                 "(default: the work folder); docs/datasets.md")
    neighbours: NeighbourList | None = None  # load beside this variant's server, besides the campaign's (#32)

    @field_validator("cpus", "client_cpus", mode="before")
    @classmethod
    def _cpu_list(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValueError(f"{shown(value)} is not a CPU list; write it like 0 or 0,1 or 0-3")
        text = str(value).replace(" ", "")
        if len(text) > 200 or not re.fullmatch(r"\d{1,5}(-\d{1,5})?(,\d{1,5}(-\d{1,5})?)*", text):
            raise ValueError(f"{shown(value)} is not a CPU list; write it like 0 or 0,1 or 0-3")
        for part in text.split(","):
            low, _, high = part.partition("-")
            if int(high or low) > MAX_CPU or int(high or low) < int(low):
                raise ValueError(f"{shown(part)} is not a CPU range; write low-high with CPUs up to {MAX_CPU}")
        return text

    # --- what the core asks the variant's backend (defaults: a server layerbench starts, sysbench on a host) ---
    if TYPE_CHECKING:
        backend: str  # each backend's variant declares it as its Literal (the discriminator of the union)

    local_backend: ClassVar[str] = ""  # "module:Class" of the backend that runs this variant's server here
    remote_backend: ClassVar[str | None] = None  # ... on an ssh: host; None: it runs on this machine only
    remote_client: ClassVar[bool] = False  # sysbench may run on another host than the server's
    owns_server: ClassVar[bool] = True  # layerbench starts (and resets) the server; False: an existing one
    run_overhead: ClassVar[float] = 5  # seconds a run costs beyond warm-up and duration (start, restore, stop)
    leftovers: ClassVar[str | None] = None  # module whose LEFTOVERS (backends.base.Leftovers) `clean` removes
    own_size: ClassVar[bool] = False  # its CPUs and memory are its own (a guest's), compared with the baseline's

    @property
    def client_kind(self) -> str:
        """Where sysbench runs: `host` (a host of the inventory) or the backend's own (container, job, ...)."""
        return "host"

    @property
    def client_reads_host_files(self) -> bool:
        """sysbench can read a file of this host (a Lua script of the user's)."""
        return True

    @property
    def builds_server_here(self) -> bool:
        """The server is this machine's MariaDB package, or an image built here from it (so its version and
        option names are those of this machine's mariadbd)."""
        return False

    def client_words(self) -> str | None:
        """Where sysbench runs when that is not simply a host (a container, a Job), for the plan; else None."""
        return None

    def describe_plan(self) -> str:
        """What a run of this variant creates, in the plan's words."""
        return self.backend

    def where_text(self, server: str, client: str, same_host: bool) -> str:
        """Where the server and sysbench run, in the plan's words, given the words for their hosts."""
        words = self.client_words()
        if words is not None:
            return f"server on {server}, {words}"
        return f"server and sysbench on {server}" if same_host else f"server on {server}, sysbench on {client}"

    def network_path(self, placement: Placement) -> str:
        """The way sysbench's packets reach the server, in words: what `validate` previews and each run records."""
        return tcp_path(placement)

    def remote_client_problem(self) -> str | None:
        """Why sysbench on another host cannot reach this variant's server (with the fix), or None."""
        return None

    def checks_options_here(self, local: bool) -> bool:
        """Preflight checks server.config's names against this machine's server binary (`local`: the server runs
        on this machine)."""
        return self.builds_server_here

    def runs_mysql(self, local: bool) -> bool:
        """`server: {flavour: mysql}` is supported for this variant so far."""
        return False

    def check_server_here(self) -> None:
        """Preflight, first for a server on this machine: refuse a server that is not there or not known."""

    def server_command_here(self) -> tuple[str, ...] | None:
        """The command of the server binary whose option names server.config is checked against, if installed."""
        return which_server("mariadbd")

    def memory_limit(self) -> tuple[str, str] | None:
        """(field, size) of the memory the variant gives its server, like ("resources.memory", "2g"); None: none."""
        return None

    def server_cpu_list(self) -> str | None:
        """The CPUs the server is pinned to on this machine, or None."""
        return self.cpus

    def first_time_costs(self) -> list[FirstTimeCost]:
        """What is built once and cached on this machine before this variant's first run."""
        return []

    def snapshot_server(self) -> ServerChoice | None:
        """The server that prepares this variant's dataset snapshot (its datadir format); None: this host's
        MariaDB (the server the images are built from)."""
        return None


def which_server(program: str) -> tuple[str, ...] | None:
    binary = shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")
    return (binary,) if binary else None


@dataclass(frozen=True)
class FirstTimeCost:
    """Something built once and cached (an image, boot files, a cluster): shared by the variants that need it."""

    what: str
    seconds: float
    rank: int  # the plan lists costs in this order
    cached: Callable[[], bool]

