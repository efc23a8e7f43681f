"""The campaign file: the `Campaign` model, `extends:` resolution, and loading with one-line errors.

A campaign is one study: a baseline variant, other variants (each backend's model: backends/registry.py), one or
more workloads (workload.py), repetitions and what becomes of a busy run (rounds.py). Unknown keys are errors
everywhere (a typo must never be silently ignored); the pieces every model is made of (the strict base model,
names, limits, sizes, CPU lists) are the vocabulary package's.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from layerbench.backends.registry import KINDS, REMOTE_CLIENT_KINDS, REMOTE_SERVER_KINDS, VARIANT
from layerbench.backends.variant_base import VariantBase
from layerbench.bounded_read import CAMPAIGN_FILE, read_yaml_file
from layerbench.campaign.published import Published
from layerbench.campaign.rounds import (
    BUSY_POLICIES,
    Adaptive,
    BusyPolicy,
    checked_wait,
    default_busy_policy,
)
from layerbench.campaign.workload import SYSBENCH_ONLY, RecordedPercentiles, Workload, smoke_dataset
from layerbench.errors import BadInput, shown
from layerbench.hosts.inventory import HostEntry
from layerbench.neighbours.model import Neighbour, NeighbourList, check_neighbour_count, neighbours_of
from layerbench.statistics_settings import DEFAULTS, REPORT_FORMATS
from layerbench.vocabulary.base import NAME_RE, PrintableLine, Strict, Text
from layerbench.vocabulary.limits import MAX_RUNS, MAX_VARIANTS, MAX_WORKLOADS

Variant = VARIANT
BACKENDS = KINDS


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


class Campaign(Strict):
    name: Annotated[str, Field(pattern=NAME_RE)]
    description: Text = ""
    baseline: str = Field(max_length=63)
    variants: list[Variant] = Field(min_length=1, max_length=MAX_VARIANTS)
    workloads: list[Workload] = Field(min_length=1, max_length=MAX_WORKLOADS)
    repetitions: Annotated[int, Field(ge=1, le=1000)] | Adaptive = 10
    order: Literal["rounds", "sequential"] = "rounds"
    seed: int = Field(default=DEFAULTS.seed, ge=0, le=2**63 - 1)
    output: PrintableLine = Field(default="results", min_length=1, max_length=4096, pattern=r"^[^\x00-\x1f\x7f-\x9f]+$")
    formats: list[Literal["md", "html", "json", "csv", "junit"]] = Field(
        default_factory=lambda: list(REPORT_FORMATS))
    noise_threshold: float = Field(default=DEFAULTS.noise_threshold, ge=0, lt=1)
    alpha: float = Field(default=DEFAULTS.alpha, gt=0, lt=1)
    min_runs: int | None = Field(default=None, ge=2, le=1000, description="an optional floor of runs per side for "
                                 "a verdict, on top of what alpha needs (docs/import.md)")
    estimator: Literal["paired", "unpaired"] = Field(default=DEFAULTS.estimator, description="paired: each "
                                                     "variant against the baseline by round (docs/statistics.md)")
    estimates_only: bool | None = Field(default=None, description="the plan wants estimates, not verdicts: validate "
                                        "takes a plan whose rounds are too few for a verdict (docs/validate.md)")
    correction: Literal["point", "sweep"] = Field(default=DEFAULTS.correction, description="the family over "
                                                   "which p is Holm-corrected: the variants of each point, or "
                                                   "every variant and thread count of a workload (docs/statistics.md)")
    compare_percentiles: RecordedPercentiles = Field(
        default_factory=list, description="latency percentiles compared in every workload besides its `percentile` "
        "(docs/campaign.md)")
    unstable_ratio: float = Field(default=DEFAULTS.unstable_ratio, gt=1, le=1000,
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
        campaign: Campaign = handler(data)
        return campaign if campaign.scale is None else with_scale(campaign, campaign.scale)

    @field_validator("formats")
    @classmethod
    def _some_report(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("[] writes no report at all; list at least one of md, html, json, csv, junit, or remove "
                             f"formats: for the default ({', '.join(REPORT_FORMATS)})")
        return value

    @model_validator(mode="after")
    def _placement(self) -> Campaign:
        from layerbench.hosts.placement import check_placement

        check_placement(self.hosts, self.variants, REMOTE_SERVER_KINDS, REMOTE_CLIENT_KINDS)
        return self

    @field_validator("estimates_only", mode="before")
    @classmethod
    def _yes_or_no(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, bool):
            raise ValueError(f"{shown(value)} is not true or false; write estimates_only: true (the plan wants "
                             "estimates, not verdicts), or leave it out")
        return value

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
        check_scripts_reach_clients(self)
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


# What a key refused by its pattern takes, in words (describe_validation_error); others: docs/campaign.md's.
IMAGE_FORM = ("an image reference ([registry[:port]/]name[:tag][@sha256:digest], like "
              "10.0.0.1:5000/layerbench/mariadb:1)")
PATTERN_FORMS = {"image": IMAGE_FORM, "client_image": IMAGE_FORM}


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
    if kind == "string_pattern_mismatch":  # pydantic would print the regular expression itself
        form = PATTERN_FORMS.get(str(loc[-1]), "the form docs/campaign.md gives for this key")
        return f"{where}: {shown(value)} is not {form}; fix it"
    got = "" if value is None or isinstance(value, dict | list) or shown(value) in message else f" (got {shown(value)})"
    if re.match(r"(variants|workloads|repetitions|busy|published)[\w.\[\]-]*( \(from [^)]*\))?: |"
                r"(repetitions|min_runs|busy|scale): ",
                message):
        return message  # a cross-field check names its own field
    return f"{where}: {shown(message, 300, quote=False)}{got}"


def with_scale(campaign: Campaign, mode: Literal["published", "machine"], ram_here: int | None = None,
               option: bool = False) -> Campaign:
    """`scale:` (`--scale` when `option`): the campaign at that size (campaign/scaling.py), saying so (`scale:` is
    stored with it and read by the report). The derived workloads go through the same models as written ones
    (issue #44, kind 7): a derived row count past the limit, a buffer pool past its grammar, a report interval
    longer than the derived run are refused in one line naming the key and the scale."""
    from layerbench.campaign.scaling import scaled_workloads

    data = campaign.model_dump(round_trip=True, exclude_unset=True)
    data |= {"scale": None, "workloads": scaled_workloads(campaign, mode, ram_here)}
    try:
        scaled = Campaign.model_validate(data)
    except ValidationError as error:
        key, _, problem = describe_validation_error(error, data).partition(": ")
        raise ValueError(f"{key} (from {'--scale ' if option else 'scale: '}{mode}): {problem}") from None
    return scaled.model_copy(update={"scale": mode})


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
    from being resumed, so that stale default is dropped (its report keeps the stored floor); nor must the refusal
    of rounds too few for a verdict."""
    data = dict(definition)
    floor, repetitions = data.get("min_runs"), data.get("repetitions")
    if isinstance(floor, int) and isinstance(repetitions, int) and floor > repetitions:
        data.pop("min_runs")
    data.setdefault("estimates_only", True)  # resume finishes what was started: the refusal of a plan with rounds
    # too few for a verdict (run/answerable.py) came after some stored campaigns; the stored record keeps its own
    return parse_campaign(data)


def check_scripts_reach_clients(campaign: Campaign) -> None:
    """A Lua script of the user's is a file on this host: sysbench in a client container or Job cannot read it
    (checked again on the campaign of run/preflight.py's resolve_defaults: a client chosen by where the harness
    stands)."""
    elsewhere = [v for v in campaign.variants if not v.client_reads_host_files]
    for workload in campaign.workloads:
        for v in elsewhere:
            if workload.is_lua_path:
                raise ValueError(
                    f"variants.{v.name}.client: {v.client_kind} runs sysbench where workloads.{workload.name}.test "
                    f"({workload.test}, a file on this host) cannot be read; use client: host")


def campaign_as_dict(campaign: Campaign) -> dict[str, Any]:
    """The stored definition. A pgbench workload's is stored without the sysbench keys it cannot have (their
    defaults would be refused as written keys when `resume` reads it back: campaign/workload.py)."""
    data = campaign.model_dump(mode="json", exclude_none=True)
    for workload in data.get("workloads", []):
        if workload.get("tool") == "pgbench":
            for key in SYSBENCH_ONLY:
                workload.pop(key, None)
    return data


def smoke_version(campaign: Campaign) -> Campaign:
    """The same campaign, tiny: 1 x 1000 rows, 1 repetition of 3 s, the smallest thread count, busy runs kept (a
    rerun would only cost time), estimates only (one round can give no verdict). For checking that a campaign runs
    end to end (`layerbench run --smoke`), never for numbers."""
    workloads = [w.model_copy(update={**smoke_dataset(w), "duration": 3, "warmup": 0, "threads": [min(w.threads)]})
                 for w in campaign.workloads]
    return campaign.model_copy(update={"workloads": workloads, "repetitions": 1, "name": f"{campaign.name}-smoke",
                                      "busy": BusyPolicy(policy="keep"), "estimates_only": True})
