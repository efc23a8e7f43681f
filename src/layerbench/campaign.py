"""The campaign file: Pydantic models, `extends:` resolution, and loading with one-line errors.

A campaign is one study: a baseline variant, other variants, one or more workloads, repetitions.
Unknown keys are errors everywhere (a typo must never be silently ignored).
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from layerbench.errors import BadInput

NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"
ConfigValue = str | int | float | bool | None
SIZE_RE = re.compile(r"^\d+(\.\d+)?\s*[KMGT]?i?B?$", re.IGNORECASE)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSettings(Strict):
    """How the server itself is configured: a my.cnf overlay for the [mysqld] section."""

    config: dict[str, ConfigValue] = Field(default_factory=dict)

    @field_validator("config")
    @classmethod
    def _keys_are_options(cls, value: dict[str, ConfigValue]) -> dict[str, ConfigValue]:
        for key in value:
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", key):
                raise ValueError(f"{key!r} is not a server option name (letters, digits, _ and -)")
        return value


class VariantBase(Strict):
    name: Annotated[str, Field(pattern=NAME_RE)]
    server: ServerSettings = Field(default_factory=ServerSettings)
    cpus: str | None = Field(default=None, description="CPU list for the server (taskset syntax: 0,1 or 0-1)")
    client_cpus: str | None = Field(default=None, description="CPU list for sysbench")
    cost_per_month: float | None = Field(default=None, ge=0)
    description: str = ""
    extends: str | None = None

    @field_validator("cpus", "client_cpus", mode="before")
    @classmethod
    def _cpu_list(cls, value: Any) -> Any:
        if value is None:
            return None
        text = str(value).replace(" ", "")
        if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text):
            raise ValueError(f"{value!r} is not a CPU list; write it like 0 or 0,1 or 0-3")
        return text


class HostVariant(VariantBase):
    backend: Literal["host"]
    mysqld: str | None = Field(default=None, description="server binary; default: mariadbd on PATH")


class ExternalVariant(VariantBase):
    backend: Literal["external"]
    host: str = "127.0.0.1"
    port: int = Field(default=3306, ge=1, le=65535)
    user: str = "sbtest"
    database: str = "sbtest"
    password_env: str | None = Field(default=None, description="environment variable holding the password")
    password_file: str | None = Field(default=None, description="file holding the password")

    @model_validator(mode="after")
    def _one_password_source(self) -> ExternalVariant:
        if self.password_env and self.password_file:
            raise ValueError("give password_env or password_file, not both")
        return self


class DockerResources(Strict):
    cpus: float | None = Field(default=None, gt=0)
    cpuset: str | None = None
    cpu_shares: int | None = Field(default=None, ge=2)
    memory: str | None = None

    @field_validator("cpuset", mode="before")
    @classmethod
    def _cpuset(cls, value: Any) -> Any:
        return VariantBase._cpu_list(value)

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\d+(\.\d+)?[bkmgBKMG]?", value.strip()):
            raise ValueError(f"{value!r} is not a memory size; write it like 512m or 2g")
        return value


class DockerVariant(VariantBase):
    backend: Literal["docker"]
    image: str | None = Field(default=None, description="default: the locally built layerbench image")
    network: Literal["bridge", "bridge-direct", "host"] = "bridge"
    storage: Literal["volume", "bind", "data-container", "container-fs", "tmpfs"] = "volume"
    resources: DockerResources = Field(default_factory=DockerResources)
    qos: Literal["besteffort", "burstable", "guaranteed", "guaranteed-pinned"] | None = None
    client: Literal["host", "container"] = "host"


class VMVariant(VariantBase):
    backend: Literal["vm"]
    vcpus: int = Field(default=1, ge=1)
    memory: str = "2G"
    accel: Literal["auto", "kvm", "tcg"] = "auto"
    disk_cache: Literal["none", "writeback"] = "none"
    network: Literal["tap", "user"] = "user"
    boot_timeout: int = Field(default=300, ge=5)


class KubernetesVariant(VariantBase):
    backend: Literal["kubernetes"]
    context: str | None = None
    kubeconfig: str | None = None
    image: str | None = None
    qos: Literal["besteffort", "burstable", "guaranteed"] = "guaranteed"
    requests: dict[str, str] = Field(default_factory=dict)
    limits: dict[str, str] = Field(default_factory=dict)
    kind: Literal["statefulset", "pod"] = "statefulset"
    storage: Literal["pvc", "emptydir", "hostpath"] = "emptydir"
    storage_class: str | None = None
    storage_size: str = "2Gi"
    node_selector: dict[str, str] = Field(default_factory=dict)
    client: Literal["host", "job", "port-forward"] = "host"
    client_node_selector: dict[str, str] | None = Field(
        default=None, description="node labels for the sysbench Job (client: job); default: node_selector")
    client_anti_affinity: bool = Field(default=False, description="keep the sysbench Job off the server's node")
    cpu_manager_static: bool = False
    ready_timeout: int = Field(default=180, ge=5)


Variant = Annotated[
    HostVariant | ExternalVariant | DockerVariant | VMVariant | KubernetesVariant,
    Field(discriminator="backend"),
]
BACKENDS = ("host", "external", "docker", "vm", "kubernetes")


class Workload(Strict):
    name: Annotated[str, Field(pattern=NAME_RE)] = "default"
    test: str = "oltp_read_write"
    tables: int = Field(default=4, ge=1, le=10_000)
    table_size: int = Field(default=10_000, ge=1)
    threads: list[int] = Field(default_factory=lambda: [2])
    duration: int = Field(default=10, ge=1, description="seconds of measured run")
    warmup: int = Field(default=5, ge=0, description="seconds of unmeasured run before it")
    report_interval: int = Field(default=1, ge=1)
    percentile: int = Field(default=95, ge=1, le=100)
    rand_type: Literal["uniform", "gaussian", "special", "pareto", "zipfian"] | None = None
    rand_seed: int | None = Field(default=0, ge=0)
    buffer_pool: str | None = Field(default=None, description="buffer pool relative to data size, e.g. 10%")
    reset: Literal["snapshot", "reprepare", "none"] = "snapshot"
    options: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @field_validator("threads", mode="before")
    @classmethod
    def _threads_list(cls, value: Any) -> Any:
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, bool) or not isinstance(item, int) or item <= 0:
                raise ValueError(f"threads must be whole numbers > 0, got {item!r}")
        if not values:
            raise ValueError("threads needs at least one value")
        return values

    @field_validator("buffer_pool")
    @classmethod
    def _percent(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\d+(\.\d+)?%", value.strip()):
            raise ValueError(f"{value!r} is not a percentage of the data size; write it like 10% or 150%")
        return value

    @field_validator("options")
    @classmethod
    def _no_credentials(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in value:
            if key.replace("_", "-") in {"mysql-password", "pgsql-password", "mysql-user", "mysql-host"}:
                raise ValueError(f"{key!r} is set by layerbench from the variant; remove it from options")
        return value

    @property
    def is_lua_path(self) -> bool:
        return self.test.endswith(".lua") or "/" in self.test


class Campaign(Strict):
    name: Annotated[str, Field(pattern=NAME_RE)]
    description: str = ""
    baseline: str
    variants: list[Variant] = Field(min_length=1)
    workloads: list[Workload] = Field(min_length=1)
    repetitions: int = Field(default=10, ge=1, le=1000)
    order: Literal["rounds", "sequential"] = "rounds"
    seed: int = 1
    output: str = "results"
    formats: list[Literal["md", "html", "json", "csv"]] = Field(default_factory=lambda: ["md", "html"])
    noise_threshold: float = Field(default=0.02, ge=0, lt=1)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    min_runs: int | None = Field(default=None, ge=2, description="an optional floor of runs per side for a "
                                 "verdict, on top of what alpha needs (docs/import.md)")
    unstable_ratio: float = Field(default=1.5, gt=1, description="flag a run whose interval TPS swings wider")
    max_failures: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _names(self) -> Campaign:
        names = [v.name for v in self.variants]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"variant names must be unique; repeated: {', '.join(dupes)}")
        if self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} names no variant; choose one of: {', '.join(names)}")
        wnames = [w.name for w in self.workloads]
        if len(set(wnames)) != len(wnames):
            raise ValueError("workload names must be unique; give each workload its own name")
        return self

    @model_validator(mode="after")
    def _resets(self) -> Campaign:
        """A snapshot can only be restored into a server layerbench starts itself."""
        external = [v.name for v in self.variants if v.backend == "external"]  # type: ignore[attr-defined]
        for workload in self.workloads:
            if external and workload.reset == "snapshot":
                raise ValueError(
                    f"workloads.{workload.name}.reset: 'snapshot' cannot be restored into variant {external[0]!r} "
                    "(backend external: a server layerbench does not own); set reset: none (its tables are "
                    "prepared already) or reset: reprepare (cleanup + prepare before every run)")
        return self

    @model_validator(mode="after")
    def _scripts_reach_clients(self) -> Campaign:
        """A Lua script of the user's is a file on this host: sysbench in a client container or Job cannot read it."""
        clients = [(v.name, getattr(v, "client", "host")) for v in self.variants]
        for workload in self.workloads:
            for name, client in clients:
                if workload.is_lua_path and client in ("container", "job"):
                    raise ValueError(
                        f"variants.{name}.client: {client} runs sysbench where workloads.{workload.name}.test "
                        f"({workload.test}, a file on this host) cannot be read; use client: host")
        return self

    @model_validator(mode="after")
    def _client_placement_needs_a_job(self) -> Campaign:
        """Only a Job is placed by the scheduler: placement options for any other client would be ignored."""
        for v in self.variants:
            if not isinstance(v, KubernetesVariant) or v.client == "job":
                continue
            for key in ("client_node_selector", "client_anti_affinity"):
                if getattr(v, key) not in (None, False):
                    raise ValueError(f"variants.{v.name}.{key}: places the sysbench Job, but client is "
                                     f"{v.client!r}; set client: job or remove {key}")
        return self

    def variant(self, name: str) -> VariantBase:
        return next(v for v in self.variants if v.name == name)

    def workload(self, name: str) -> Workload:
        return next(w for w in self.workloads if w.name == name)


# --- loading ---------------------------------------------------------------------------------------------


def deep_merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """Overlay wins; nested mappings merge key by key (so `extends` adds to a parent's server.config)."""
    merged = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def resolve_extends(variants: list[Any]) -> list[Any]:
    """Replace each variant that `extends` another by the merge of its ancestors and itself."""
    by_name = {v.get("name"): v for v in variants if isinstance(v, dict)}
    resolved: dict[str, dict[str, Any]] = {}

    def resolve(name: str, chain: tuple[str, ...], index: int) -> dict[str, Any]:
        if name in resolved:
            return resolved[name]
        raw = by_name[name]
        parent = raw.get("extends")
        if parent is None:
            result = dict(raw)
        elif parent in chain:
            raise BadInput(f"variants[{index}].extends: cycle {' -> '.join((*chain, parent))}; remove one link")
        elif parent not in by_name:
            raise BadInput(f"variants[{index}].extends: {parent!r} names no variant; use one of {sorted(by_name)}")
        else:
            base = {k: v for k, v in resolve(parent, (*chain, name), index).items() if k != "description"}
            result = deep_merge(base, raw)
            result["extends"] = parent
        resolved[name] = result
        return result

    out = []
    for index, raw in enumerate(variants):
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            out.append(resolve(raw["name"], (raw["name"],), index))
        else:
            out.append(raw)
    return out


def normalise(data: Any) -> Any:
    """Accept `workload:` (one) as well as `workloads:` (a list), and resolve `extends:`."""
    if not isinstance(data, dict):
        raise BadInput("campaign: the file must be a mapping with name, baseline, variants and workload")
    data = dict(data)
    if "workload" in data:
        if "workloads" in data:
            raise BadInput("workload: give `workload` (one) or `workloads` (a list), not both")
        data["workloads"] = [data.pop("workload")]
    variants = data.get("variants")
    if isinstance(variants, list):
        data["variants"] = resolve_extends(variants)
    return data


def _location(loc: tuple[Any, ...], data: Any) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item in BACKENDS and parts and parts[-1].endswith("]"):
            continue  # pydantic names the union member; the user never wrote it
        else:
            name = str(item) if re.fullmatch(r"[\w.-]+", str(item)) else repr(item)
            parts.append(("." if parts else "") + name)
    return "".join(parts) or "campaign"


def _value_at(loc: tuple[Any, ...], data: Any) -> Any:
    node = data
    for item in loc:
        in_dict = isinstance(node, dict) and item in node
        if in_dict or (isinstance(node, list) and isinstance(item, int) and item < len(node)):
            node = node[item]
        elif item in BACKENDS:
            continue
        else:
            return None
    return node


def describe_validation_error(error: ValidationError, data: Any) -> str:
    """The first error as one line: field path, the value, what is wrong."""
    first = error.errors()[0]
    loc = tuple(first["loc"])
    where = _location(loc, data)
    kind = first["type"]
    if kind == "extra_forbidden":
        return f"{where}: unknown key; remove it or check its spelling (see docs/campaign.md)"
    if kind == "missing":
        return f"{where}: required but missing; add it (see docs/campaign.md)"
    if kind == "union_tag_invalid":
        value = _value_at((*loc, "backend"), data)
        return f"{where}.backend: {value!r} is not a backend; use one of: {', '.join(BACKENDS)}"
    if kind == "union_tag_not_found":
        return f"{where}.backend: missing; add backend: one of {', '.join(BACKENDS)}"
    message = first["msg"].removeprefix("Value error, ")
    value = _value_at(loc, data)
    shown = "" if value is None or isinstance(value, dict | list) else f" (got {value!r})"
    if not loc and re.match(r"(variants|workloads)\.[\w.-]+: ", message):
        return message  # a cross-field check names its own field
    return f"{where}: {message}{shown}"


def parse_campaign(data: Any) -> Campaign:
    normalised = normalise(data)
    try:
        return Campaign.model_validate(normalised)
    except ValidationError as error:
        raise BadInput(describe_validation_error(error, normalised)) from None


def load_campaign(path: str | os.PathLike[str]) -> Campaign:
    """Read and validate a campaign file; every problem becomes a one-line BadInput."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{file}: no such campaign file; check the path or run `layerbench init`") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BadInput(f"{file}: cannot be read ({error.__class__.__name__}); check the file") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise BadInput(f"{file}: malformed YAML{where}: {problem}; fix the syntax") from None
    try:
        return parse_campaign(data)
    except BadInput as error:
        raise BadInput(f"{file}: {error}") from None


def campaign_as_dict(campaign: Campaign) -> dict[str, Any]:
    return campaign.model_dump(mode="json", exclude_none=True)


def smoke_version(campaign: Campaign) -> Campaign:
    """The same campaign, tiny: 1 x 1000 rows, 2 repetitions of 3 s, the smallest thread count. For checking
    that a campaign runs end to end (`layerbench run --smoke`), never for numbers."""
    workloads = [w.model_copy(update={"tables": 1, "table_size": 1000, "duration": 3, "warmup": 0,
                                      "threads": [min(w.threads)]}) for w in campaign.workloads]
    return campaign.model_copy(update={"workloads": workloads, "repetitions": 2, "name": f"{campaign.name}-smoke"})
