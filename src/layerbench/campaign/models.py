"""The campaign file: Pydantic models, `extends:` resolution, and loading with one-line errors.

A campaign is one study: a baseline variant, other variants, one or more workloads, repetitions.
Unknown keys are errors everywhere (a typo must never be silently ignored).
"""

from __future__ import annotations

import copy
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_serializer, model_validator

from layerbench import settings
from layerbench.backends.registry import KINDS, REMOTE_CLIENT_KINDS, REMOTE_SERVER_KINDS, VARIANT
from layerbench.backends.variant_base import (  # noqa: F401 - the campaign file's vocabulary, imported from here too
    MAX_CPU,
    MAX_SECONDS,
    MAX_TEXT,
    MAX_VALUE,
    NAME_RE,
    OPTION_NAME,
    OWNED_BY_LAYERBENCH,
    ConfigValue,
    ServerSettings,
    Strict,
    VariantBase,
    canonical_option,
    check_option_value,
    refuse_secret_names,
)
from layerbench.bounded_read import CAMPAIGN_FILE, read_yaml_file
from layerbench.campaign.published import Published
from layerbench.envvars import env_setting
from layerbench.errors import BadInput, shown
from layerbench.hosts.inventory import HostEntry
from layerbench.neighbours.model import Neighbour, NeighbourList, check_neighbour_count, neighbours_of
from layerbench.records.campaign import ROUNDS_MAX, ROUNDS_MIN, AdaptiveRepetitions
from layerbench.sysbench.options import check_sysbench_options

# Bounds on what one campaign may ask for (docs/campaign.md, "Limits"; those of one variant: variant.py).
MAX_RUNS = 20_000  # runs in one plan: 20,000 runs of 10 s are more than two days
MAX_VARIANTS = 100
MAX_WORKLOADS = 50
MAX_THREAD_POINTS = 64
MAX_THREADS = 4096


Variant = VARIANT
BACKENDS = KINDS


def recorded_percentiles(value: Any) -> list[float]:
    """compare_percentiles: a list of the percentiles each run records, each once."""
    from layerbench.sysbench.histogram import PERCENTILES

    allowed = (*PERCENTILES, 100.0)
    values = value if isinstance(value, list) else [value]
    for item in values:
        if isinstance(item, bool) or not isinstance(item, int | float) or float(item) not in allowed:
            raise ValueError(f"{shown(item)} is not a recorded percentile; choose from "
                             f"{', '.join(f'{p:g}' for p in allowed)} (100 is the maximum)")
    if len(set(values)) < len(values):
        raise ValueError("a percentile is listed twice; list each once")
    return [float(v) for v in values]


class Workload(Strict):
    name: Annotated[str, Field(pattern=NAME_RE)] = "default"
    test: str = Field(default="oltp_read_write", pattern=r"^[^\x00-\x1f\x7f]{1,4096}$")
    tables: int = Field(default=4, ge=1, le=10_000)
    table_size: int = Field(default=10_000, ge=1, le=1_000_000_000)
    threads: list[int] = Field(default_factory=lambda: [2])
    duration: int = Field(default=10, ge=1, le=MAX_SECONDS, description="seconds of measured run")
    warmup: int = Field(default=5, ge=0, le=MAX_SECONDS, description="seconds of unmeasured run before it")
    report_interval: int = Field(default=1, ge=1, le=MAX_SECONDS)
    percentile: int = Field(default=95, ge=1, le=100)
    compare_percentiles: list[float] = Field(default_factory=list, description="latency percentiles compared "
                                             "besides `percentile`: 50, 90, 95, 99, 99.9 or 100 (the maximum)")
    rand_type: Literal["uniform", "gaussian", "special", "pareto", "zipfian"] | None = None
    rand_seed: int | None = Field(default=0, ge=0, le=2**32 - 1)
    buffer_pool: str | None = Field(default=None, description="buffer pool relative to data size, e.g. 10%")
    reset: Literal["snapshot", "reprepare", "none"] = "snapshot"
    verify: Literal["files", "checksum"] = Field(
        default="files", description="per run with reset: snapshot: files (the restored files against the "
        "snapshot's manifest) or checksum (also CHECKSUM TABLE of every table in a private server; docs/datasets.md)")
    options: dict[str, str | int | float | bool] = Field(default_factory=dict, max_length=100)
    dataset_flags: Literal["auto", "always", "never"] | None = Field(
        default=None, description="a Lua script of your own: whether sysbench gets --tables/--table-size (auto, "
        "the default: each one the script declares in sysbench.cmdline.options; docs/campaign.md). Unset is auto "
        "and is not stored, so the definitions of campaigns that do not use it stay as they were")

    @field_validator("threads", mode="before")
    @classmethod
    def _threads_list(cls, value: Any) -> Any:
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, bool) or not isinstance(item, int) or not 0 < item <= MAX_THREADS:
                raise ValueError(f"threads must be whole numbers from 1 to {MAX_THREADS}, got {shown(item)}")
        if not values:
            raise ValueError("threads needs at least one value")
        if len(values) > MAX_THREAD_POINTS:
            raise ValueError(f"{len(values)} thread counts; a sweep has at most {MAX_THREAD_POINTS}")
        repeated = sorted({t for t in values if values.count(t) > 1})
        if repeated:
            raise ValueError(f"thread count {repeated[0]} is listed twice; list each count once "
                             "(repetitions repeats every point)")
        return values

    @field_validator("compare_percentiles", mode="before")
    @classmethod
    def _recorded_percentiles(cls, value: Any) -> Any:
        return recorded_percentiles(value)

    @model_validator(mode="after")
    def _not_the_main_percentile(self) -> Workload:
        if self.percentile in self.compare_percentiles:
            raise ValueError(f"compare_percentiles: {self.percentile:g} is already the workload's `percentile`; "
                             "list only the others")
        return self

    @field_validator("buffer_pool")
    @classmethod
    def _percent(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\d{1,4}(\.\d{1,3})?%", value.strip()):
            raise ValueError(f"{shown(value)} is not a percentage of the data size; write it like 10% or 150%")
        return value

    @field_validator("options")
    @classmethod
    def _no_credentials(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_sysbench_options(value)  # what layerbench sets, in any spelling (sysbench_options.py)
        for key, item in value.items():
            if not re.fullmatch(OPTION_NAME, key):
                fix = "write it without the leading dashes" if key.startswith("-") else "letters, digits, _ and -"
                raise ValueError(f"{shown(key)} is not a sysbench option name ({fix})")
            check_option_value(key, item)
        refuse_secret_names(value, "set the password with the variant's password_env or password_file "
                                   "(backend external); layerbench passes it to sysbench in a private file")
        return value

    @model_validator(mode="after")
    def _interval_fits(self) -> Workload:
        if self.report_interval > self.warmup + self.duration:
            raise ValueError(f"report_interval: {self.report_interval} s is longer than the run "
                             f"({self.warmup + self.duration} s); use at most the duration")
        return self

    @model_validator(mode="after")
    def _dataset_flags_of_a_script(self) -> Workload:
        if self.dataset_flags not in (None, "auto") and not self.is_lua_path:
            raise ValueError(f"workloads.{self.name}.dataset_flags: {self.test} is a built-in test, which always "
                             "gets --tables and --table-size; remove dataset_flags")
        return self

    @property
    def is_lua_path(self) -> bool:
        return self.test.endswith(".lua") or "/" in self.test


@dataclass(frozen=True)
class ResetChoice:
    """One variant's reset of one workload: `snapshot`, `reprepare` or `none`, and where that came from (the
    variant's own `reset:`, the workload's, or the variant's backend that cannot restore)."""

    method: Literal["snapshot", "reprepare", "none"]
    source: str

    @property
    def own(self) -> bool:
        """Not the workload's own reset: set on the variant, or forced by what it cannot restore."""
        return not self.source.startswith("workloads.")


def refuse_unrestorable(variants: list[VariantBase], workloads: list[Workload]) -> None:
    """A snapshot can only be restored into a server layerbench starts itself; the variant's own `reset:` or its
    workloads' must say what else to do with a server it does not own."""
    for variant in variants:
        problem = variant.restore_problem()
        if problem is None:
            continue
        if variant.reset == "snapshot":
            raise ValueError(f"variants.{variant.name}.reset: 'snapshot' cannot be restored into this variant "
                             f"({problem}); set reset: none (its tables are prepared already) or reset: "
                             "reprepare (cleanup + prepare before every run)")
        asking = [w for w in workloads if w.reset == "snapshot"]
        if variant.reset is None and asking and not variant.owns_server:
            raise ValueError(
                f"workloads.{asking[0].name}.reset: 'snapshot' cannot be restored into variant {variant.name!r} "
                f"({problem}); set variants.{variant.name}.reset: none (its tables are prepared already) or "
                "reprepare (cleanup + prepare before each of its runs; the other variants still restore)")


WALL_TIME = r"^\d{1,6}(\.\d{1,3})?\s?[smh]$"  # 90s, 30m, 2h


def seconds_of(text: str) -> float:
    return float(text.strip()[:-1]) * {"s": 1, "m": 60, "h": 3600}[text.strip()[-1]]


class Adaptive(Strict):
    """`repetitions: {auto: true, min: 6, max: 30, budget: 30m}`: rounds go on until every comparison is decided
    (analysis/sequential.py), `max` rounds are done, or the budget of wall time would be passed."""

    auto: Literal[True]
    min: int = Field(default=ROUNDS_MIN, ge=2, le=1000)
    max: int = Field(default=ROUNDS_MAX, ge=2, le=1000)
    budget: str | None = Field(default=None, pattern=WALL_TIME, description="wall time, like 90s, 30m or 2h")

    @model_validator(mode="after")
    def _ordered(self) -> Adaptive:
        if self.max < self.min:
            raise ValueError(f"repetitions: max {self.max} is below min {self.min}; set max >= min")
        if self.budget_seconds is not None and not 0 < self.budget_seconds <= 30 * MAX_SECONDS:
            raise ValueError(f"repetitions: budget {self.budget} is not between 1 s and 30 days")
        return self

    @property
    def budget_seconds(self) -> float | None:
        return None if self.budget is None else seconds_of(self.budget)

    def record(self) -> AdaptiveRepetitions:
        """The stored record of these settings (records/campaign.py): what the store keeps and the analysis reads."""
        return AdaptiveRepetitions(self.min, self.max, self.budget)

    @model_serializer
    def _as_record(self) -> dict[str, Any]:
        return self.record().to_json()  # the record writes the stored JSON (campaign_as_dict)


def checked_wait(value: str | None, no_wait: bool) -> str | None:
    """A wait for a quiet machine (`wait_for_quiet`, `busy.wait`): a wall time from the quiet check's one sample
    (QUIET_STEP: a shorter wait would be waited as one whole sample, more than the plan says) to 1 h, or `0s` where
    `no_wait` (no wait at all)."""
    from layerbench.measure.cpu import QUIET_STEP

    try:
        seconds = seconds_of(value) if value is not None and re.fullmatch(WALL_TIME, value) else None
    except ValueError:  # a character \s or \d takes that float() does not
        seconds = None
    if value is None or (seconds is not None and (QUIET_STEP <= seconds <= 3600 or (no_wait and seconds == 0))):
        return value
    step = f"{QUIET_STEP:g} s"
    if no_wait:
        raise ValueError(f"{shown(value)} is not a wait from 0 s to 1 h; write it like 30s or 5m (0s: no wait; else "
                         f"at least {step}, the quiet check's one sample)")
    raise ValueError(f"{shown(value)} is not a wait from {step} to 1 h; write it like 30s or 5m (at least {step}, "
                     "the quiet check's one sample)")


BUSY_POLICIES = ("rerun", "keep", "fail")
BUSY_WAIT_SECONDS = 30.0  # busy: rerun's default wait for quiet after a replaced run (BusyPolicy.wait)


def default_busy_policy() -> BusyPolicy:
    """What a campaign without `busy:` does: $LAYERBENCH_BUSY (`rerun`, `keep` or `fail`) when it is set, else
    `rerun`. For a shared machine that is busy during nearly every run (a CI runner), where replacing runs would
    only use up the rerun limit."""
    word = env_setting("LAYERBENCH_BUSY")
    if word is None:
        return BusyPolicy()
    if word not in BUSY_POLICIES:
        raise BadInput(f"LAYERBENCH_BUSY: {shown(word)} is not a policy; set it to rerun, keep or fail, or unset it")
    return BusyPolicy(policy=word)  # type: ignore[arg-type]


class BusyPolicy(Strict):
    """`busy: rerun` (the default), `keep` or `fail`, or `busy: {policy: rerun, max_reruns: 4, wait: 30s}`: what
    happens to a run whose measured window was busy (analysis/busy.py). `rerun` replaces it by an extra run of the
    same variant at the end of its round, at most `max_reruns` times per campaign (default: a quarter of the planned
    runs, rounded up), and the next run first waits up to `wait` (default 30 s) for the machine to be quiet, so that
    the rerun budget is not spent inside the same busy spell; `keep` keeps it (flagged in the warnings); `fail` stops
    the campaign."""

    policy: Literal["rerun", "keep", "fail"] = "rerun"
    max_reruns: int | None = Field(default=None, ge=0, le=MAX_RUNS, strict=True)
    wait: str | None = Field(default=None, max_length=20)

    @field_validator("wait")
    @classmethod
    def _bounded_wait(cls, value: str | None) -> str | None:
        return checked_wait(value, no_wait=True)

    @model_validator(mode="after")
    def _limit_is_for_reruns(self) -> BusyPolicy:
        for key, value in (("max_reruns", self.max_reruns), ("wait", self.wait)):
            if value is not None and self.policy != "rerun":
                raise ValueError(f"busy.{key}: is for reruns, but policy is {self.policy!r}; set policy: rerun or "
                                 f"remove {key}")
        return self

    def wait_after_replaced(self) -> float:
        """Seconds the run after a replaced one waits, at most, for a quiet machine (0: it does not wait)."""
        return seconds_of(self.wait) if self.wait is not None else BUSY_WAIT_SECONDS

    def reruns_allowed(self, planned_runs: int) -> int:
        """The most runs one campaign may replace: max_reruns, else a quarter of the planned runs (at least 1)."""
        if self.policy != "rerun":
            return 0
        return self.max_reruns if self.max_reruns is not None else max(1, math.ceil(planned_runs / 4))


class Campaign(Strict):
    name: Annotated[str, Field(pattern=NAME_RE)]
    description: str = Field(default="", max_length=MAX_TEXT)
    baseline: str = Field(max_length=63)
    variants: list[Variant] = Field(min_length=1, max_length=MAX_VARIANTS)
    workloads: list[Workload] = Field(min_length=1, max_length=MAX_WORKLOADS)
    repetitions: Annotated[int, Field(ge=1, le=1000)] | Adaptive = 10
    order: Literal["rounds", "sequential"] = "rounds"
    seed: int = Field(default=settings.DEFAULTS.seed, ge=0, le=2**63 - 1)
    output: str = Field(default="results", min_length=1, max_length=4096, pattern=r"^[^\x00-\x1f\x7f]+$")
    formats: list[Literal["md", "html", "json", "csv"]] = Field(default_factory=lambda: list(settings.REPORT_FORMATS))
    noise_threshold: float = Field(default=settings.DEFAULTS.noise_threshold, ge=0, lt=1)
    alpha: float = Field(default=settings.DEFAULTS.alpha, gt=0, lt=1)
    min_runs: int | None = Field(default=None, ge=2, le=1000, description="an optional floor of runs per side for "
                                 "a verdict, on top of what alpha needs (docs/import.md)")
    estimator: Literal["paired", "unpaired"] = Field(default=settings.DEFAULTS.estimator, description="paired: each "
                                                     "variant against the baseline by round (docs/statistics.md)")
    correction: Literal["point", "sweep"] = Field(default=settings.DEFAULTS.correction, description="the family over "
                                                   "which p is Holm-corrected: the variants of each point, or "
                                                   "every variant and thread count of a workload (docs/statistics.md)")
    compare_percentiles: list[float] = Field(default_factory=list, description="latency percentiles compared "
                                             "in every workload besides its `percentile` (docs/campaign.md)")
    unstable_ratio: float = Field(default=settings.DEFAULTS.unstable_ratio, gt=1, le=1000,
                                  description="flag a run whose interval TPS swings wider")
    max_failures: int | None = Field(default=None, ge=0, le=MAX_RUNS)
    hosts: dict[Annotated[str, Field(pattern=NAME_RE)], HostEntry] | None = None  # none: this machine only
    wait_for_quiet: str | None = Field(default=None, max_length=20, description="before each run, wait up to "
                                       "this long (at most 1 h) for other processes to leave the CPUs idle")
    busy: BusyPolicy | None = None  # None: the default, BusyPolicy() (rerun); kept out of the stored definition
    neighbours: NeighbourList | None = None  # load beside every variant's server (docs/neighbours.md)
    published: Published | None = None  # a published study's numbers and size (campaign/published.py)
    scale: Literal["published", "machine"] | None = None  # run at the study's size (campaign/scaling.py)

    @model_validator(mode="after")
    def _published(self) -> Campaign:
        """The published numbers name this campaign's variants and workloads."""
        if self.published is not None:
            self.published.check_names([v.name for v in self.variants], self.baseline,
                                       [w.name for w in self.workloads])
        return self

    @model_validator(mode="wrap")
    @classmethod
    def _scaled(cls, data: Any, handler: Any) -> Campaign:
        """`scale:` sets the workloads' size from published.size (campaign/scaling.py), after every other check."""
        from layerbench.campaign.scaling import with_scale

        campaign: Campaign = handler(data)
        return campaign if campaign.scale is None else with_scale(campaign, campaign.scale)

    @field_validator("compare_percentiles", mode="before")
    @classmethod
    def _recorded_percentiles(cls, value: Any) -> Any:
        return recorded_percentiles(value)

    @field_validator("formats")
    @classmethod
    def _some_report(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("[] writes no report at all; list at least one of md, html, json, csv, or remove "
                             f"formats: for the default ({', '.join(settings.REPORT_FORMATS)})")
        return value

    @model_validator(mode="after")
    def _placement(self) -> Campaign:
        from layerbench.hosts.placement import check_placement

        check_placement(self.hosts, self.variants, REMOTE_SERVER_KINDS, REMOTE_CLIENT_KINDS)
        return self

    @field_validator("wait_for_quiet")
    @classmethod
    def _bounded_wait(cls, value: str | None) -> str | None:
        return checked_wait(value, no_wait=False)

    @field_validator("busy", mode="before")
    @classmethod
    def _busy_word(cls, value: Any) -> Any:
        """`busy: rerun` is `busy: {policy: rerun}`; anything but a policy word or a mapping is one line."""
        if isinstance(value, str) and value in BUSY_POLICIES:
            return {"policy": value}
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"busy: {shown(value)} is not a policy; use rerun, keep or fail, or "
                             "{policy: rerun, max_reruns: N}")
        return value

    @property
    def busy_policy(self) -> BusyPolicy:
        return self.busy or default_busy_policy()

    @property
    def planned_runs(self) -> int:
        """Runs in the schedule: variants x (workload, threads) points x rounds (replacements come on top)."""
        return len(self.variants) * sum(len(w.threads) for w in self.workloads) * self.rounds

    @field_validator("repetitions", mode="before")
    @classmethod
    def _repetitions(cls, value: Any) -> Any:
        """A whole number, `auto`, or a mapping with auto: true; each error one line naming the key."""
        if value == "auto":
            value = {"auto": True}
        if not isinstance(value, dict):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
                raise ValueError(f"repetitions: {shown(value)} is not a number of rounds; give 1 to 1000, or auto")
            return value
        try:
            return Adaptive.model_validate(value)
        except ValidationError as error:
            first = error.errors()[0]
            key = "".join(f".{p}" for p in first["loc"])
            problem = {"extra_forbidden": "unknown key (use auto, min, max, budget)",
                       "string_pattern_mismatch": "not a wall time; write it like 90s, 30m or 2h"}.get(
                first["type"], first["msg"].removeprefix("Value error, ").removeprefix("repetitions: "))
            raise ValueError(f"repetitions{key}: {shown(problem, 200, quote=False)}") from None

    @model_validator(mode="after")
    def _bounded_plan(self) -> Campaign:
        """The number of runs, computed without building the schedule."""
        points = sum(len(w.threads) for w in self.workloads)
        runs = self.planned_runs
        if runs > MAX_RUNS:
            raise ValueError(f"repetitions: the plan holds {runs:,} runs ({len(self.variants)} variants x {points} "
                             f"points x {self.rounds} repetitions), more than the limit of {MAX_RUNS:,}; "
                             "split it into several campaigns")
        if self.min_runs is not None and self.min_runs > self.rounds:
            raise ValueError(f"min_runs: {self.min_runs} is more than repetitions ({self.rounds}), so no "
                             f"verdict could ever be given; set repetitions: {self.min_runs} or more")
        return self

    @property
    def rounds(self) -> int:
        """Rounds planned: the fixed repetitions, or the most an adaptive campaign may run."""
        return self.repetitions.max if isinstance(self.repetitions, Adaptive) else self.repetitions

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
        refuse_unrestorable(self.variants, self.workloads)
        return self

    def reset_for(self, variant: VariantBase, workload: Workload) -> ResetChoice:
        """How this variant's runs of this workload get their data, and who said so (plan, runs and report)."""
        if variant.reset is not None:
            return ResetChoice(variant.reset, f"variants.{variant.name}.reset")
        problem = variant.restore_problem() if workload.reset == "snapshot" else None
        if problem is not None:
            return ResetChoice("reprepare", f"this variant cannot restore a snapshot: {problem}")
        return ResetChoice(workload.reset, f"workloads.{workload.name}.reset")

    def resets_of(self, workload: Workload) -> dict[str, ResetChoice]:
        """Each variant's reset of this workload, by variant name."""
        return {v.name: self.reset_for(v, workload) for v in self.variants}

    @model_validator(mode="after")
    def _scripts_reach_clients(self) -> Campaign:
        """A Lua script of the user's is a file on this host: sysbench in a client container or Job cannot read it."""
        elsewhere = [v for v in self.variants if not v.client_reads_host_files]
        for workload in self.workloads:
            for v in elsewhere:
                if workload.is_lua_path:
                    raise ValueError(
                        f"variants.{v.name}.client: {v.client_kind} runs sysbench where workloads.{workload.name}.test "
                        f"({workload.test}, a file on this host) cannot be read; use client: host")
        return self

    def variant(self, name: str) -> VariantBase:
        return next(v for v in self.variants if v.name == name)

    def workload(self, name: str) -> Workload:
        return next(w for w in self.workloads if w.name == name)

    @model_validator(mode="after")
    def _neighbours_per_variant(self) -> Campaign:
        for variant in self.variants:
            check_neighbour_count(variant.name, self.neighbours or [], variant.neighbours)
        return self

    def neighbours_of(self, variant: VariantBase) -> list[Neighbour]:
        """The load generators beside this variant's server: the campaign's and the variant's own."""
        return neighbours_of(self.neighbours or [], variant.neighbours)


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
    by_name = {v["name"]: v for v in variants if isinstance(v, dict) and isinstance(v.get("name"), str)}
    resolved: dict[str, dict[str, Any]] = {}

    def resolve(name: str, chain: tuple[str, ...], index: int) -> dict[str, Any]:
        if name in resolved:
            return resolved[name]
        raw = by_name[name]
        parent = raw.get("extends")
        if parent is None:
            result = dict(raw)
        elif not isinstance(parent, str):
            raise BadInput(f"variants[{index}].extends: {shown(parent)} is not a variant name; give one name")
        elif parent in chain:
            raise BadInput(f"variants[{index}].extends: cycle {shown(' -> '.join((*chain, parent)), 200, False)}; "
                           "remove one link")
        elif parent not in by_name:
            names = shown(", ".join(sorted(by_name)), 120, quote=False)
            raise BadInput(f"variants[{index}].extends: {shown(parent)} names no variant; use one of: {names}")
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
    if isinstance(variants, list) and len(variants) > MAX_VARIANTS:
        raise BadInput(f"variants: {len(variants)} variants; a campaign has at most {MAX_VARIANTS}, split it")
    if isinstance(variants, list):
        data["variants"] = resolve_extends(variants)
    return data


def _location(loc: tuple[Any, ...], data: Any) -> str:
    parts: list[str] = []
    for position, item in enumerate(loc):
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item in BACKENDS and position and isinstance(loc[position - 1], int):
            continue  # pydantic names the union member; the user never wrote it (a field `host` they did)
        else:
            name = str(item) if re.fullmatch(r"[\w.-]{1,64}", str(item)) else shown(item, 40)
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
        return f"{where}.backend: {shown(value)} is not a backend; use one of: {', '.join(BACKENDS)}"
    if kind == "union_tag_not_found":
        return f"{where}.backend: missing; add backend: one of {', '.join(BACKENDS)}"
    message = first["msg"].removeprefix("Value error, ")
    value = _value_at(loc, data)
    got = "" if value is None or isinstance(value, dict | list) or shown(value) in message else f" (got {shown(value)})"
    if re.match(r"(variants|workloads|repetitions|busy|published)[\w.\[\]-]*: |(repetitions|min_runs|busy|scale): ",
                message):
        return message  # a cross-field check names its own field
    return f"{where}: {shown(message, 300, quote=False)}{got}"


def parse_campaign(data: Any) -> Campaign:
    normalised = normalise(data)
    try:
        return Campaign.model_validate(normalised)
    except ValidationError as error:
        raise BadInput(describe_validation_error(error, normalised)) from None


def load_campaign(path: str | os.PathLike[str]) -> Campaign:
    """Read and validate a campaign file within bounds (bounded_read.py); every problem is a one-line BadInput."""
    file = Path(path)
    name = shown(str(file), 100, quote=False, keep_end=True)
    data = read_yaml_file(file, CAMPAIGN_FILE)
    try:
        return parse_campaign(data)
    except BadInput as error:
        raise BadInput(f"{name}: {error}") from None


def stored_campaign(definition: dict[str, Any]) -> Campaign:
    """A campaign as a store holds it, for `resume`. Versions before 0.2 stored the then-default `min_runs: 6`
    with every campaign; a rule that now refuses a `min_runs` above `repetitions` must not stop such a campaign
    from being resumed, so that stale default is dropped (its report keeps the stored floor)."""
    data = dict(definition)
    floor, repetitions = data.get("min_runs"), data.get("repetitions")
    if isinstance(floor, int) and isinstance(repetitions, int) and floor > repetitions:
        data.pop("min_runs")
    return parse_campaign(data)


def campaign_as_dict(campaign: Campaign) -> dict[str, Any]:
    return campaign.model_dump(mode="json", exclude_none=True)


def smoke_dataset(workload: Workload) -> dict[str, int]:
    """1 x 1000 rows; a script of the user's makes its own tables: only the dataset fields its workload sets
    are shrunk (preflight makes sure each of those reaches the script: custom_script.check_script)."""
    small = {"tables": 1, "table_size": 1000}
    return {k: v for k, v in small.items() if not workload.is_lua_path or k in workload.model_fields_set}


def smoke_version(campaign: Campaign) -> Campaign:
    """The same campaign, tiny: 1 x 1000 rows, 1 repetition of 3 s, the smallest thread count, busy runs kept (a
    rerun would only cost time). For checking that a campaign runs end to end (`layerbench run --smoke`), never for
    numbers."""
    workloads = [w.model_copy(update={**smoke_dataset(w), "duration": 3, "warmup": 0, "threads": [min(w.threads)]})
                 for w in campaign.workloads]
    return campaign.model_copy(update={"workloads": workloads, "repetitions": 1, "name": f"{campaign.name}-smoke",
                                      "busy": BusyPolicy(policy="keep")})
