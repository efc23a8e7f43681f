"""The campaign as a store keeps it and the analysis reads it: a typed view of the stored definition JSON
(what campaign/models.py validated, or what an importer knows of results measured elsewhere), which keeps that
JSON whole so `resume` and the "campaign as run" section see exactly what was stored.

Format history of the definition JSON (its `format` key, written by stored_json()): none (before #28): the same
keys without a number, read as format 0; 1: `format` added. A later format must read every earlier one
(tests/unit/test_records.py reads stores of both)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from layerbench.records.json import (
    JSONObject,
    as_float,
    as_int,
    as_list,
    as_object,
    as_str,
    opt_float,
    opt_int,
    opt_str,
)
from layerbench.statistics_settings import DEFAULTS, REPORT_FORMATS, Overrides, Settings

IMPORTED = "imported"  # the backend and workload name of results measured elsewhere
CAMPAIGN_FORMAT = 1  # of the campaign definition JSON (see the history above)
ROUNDS_MIN, ROUNDS_MAX = 6, 30  # repetitions: auto's defaults (campaign/rounds.py Adaptive takes them from here)


@dataclass(frozen=True)
class AdaptiveRepetitions:
    """repetitions: auto: rounds from `min` to `max`, stopped early when every comparison is decided, or before
    the wall-time `budget` would be passed. The one description of adaptive repetitions: the campaign model
    (campaign/rounds.py Adaptive) validates the file's mapping and produces this record, whose JSON is what the
    store keeps; the orchestrator and the analysis read this record."""

    rounds_min: int = ROUNDS_MIN
    rounds_max: int = ROUNDS_MAX
    budget: str | None = None  # wall time, like 90s, 30m or 2h

    @property
    def looks(self) -> int:
        return max(1, self.rounds_max - self.rounds_min + 1)

    @classmethod
    def from_json(cls, data: JSONObject) -> AdaptiveRepetitions:
        return cls(as_int(data.get("min"), ROUNDS_MIN), as_int(data.get("max"), ROUNDS_MAX),
                   opt_str(data.get("budget")))

    def to_json(self) -> JSONObject:
        budget = {} if self.budget is None else {"budget": self.budget}
        return {"auto": True, "min": self.rounds_min, "max": self.rounds_max, **budget}


@dataclass(frozen=True)
class VariantRecord:
    name: str
    backend: str
    extends: str | None = None
    cost_per_month: float | None = None
    config_keys: frozenset[str] = frozenset()  # the server settings the campaign sets for it
    cpus: str | None = None  # its server's CPU list
    memory_limit: str | None = None  # resources.memory or limits.memory
    vcpus: int = 1  # a guest's (own_size)
    vm_memory: str = "2G"  # a guest's (own_size)
    own_size: bool = False  # its CPUs and memory are its own (a guest's), compared with the baseline's (fairness.py)

    @classmethod
    def from_json(cls, data: JSONObject) -> VariantRecord:
        """A variant stored with `vcpus` is a guest with a size of its own: only such a variant model has that
        field, and the stored definition keeps every field (campaign_as_dict), so this holds for every store."""
        config = as_object(as_object(data.get("server")).get("config"))
        memory = as_object(data.get("resources")).get("memory") or as_object(data.get("limits")).get("memory")
        return cls(as_str(data.get("name")), as_str(data.get("backend")), opt_str(data.get("extends")),
                   opt_float(data.get("cost_per_month")), frozenset(config), opt_str(data.get("cpus")),
                   opt_str(memory), as_int(data.get("vcpus"), 1), as_str(data.get("memory"), "2G"), "vcpus" in data)


@dataclass(frozen=True)
class WorkloadRecord:
    name: str
    test: str = ""
    tables: int | None = None
    table_size: int | None = None
    threads: tuple[int, ...] = ()
    duration: int | None = None  # seconds, as campaign.py validates them
    warmup: int = 0
    percentile: float | None = None
    compare_percentiles: tuple[float, ...] = ()
    buffer_pool: str | None = None
    report_interval: int = 1
    tool: str | None = None  # None: sysbench; "pgbench" (its dataset is `scale`)
    scale: int | None = None

    @classmethod
    def from_json(cls, data: JSONObject) -> WorkloadRecord:
        get = data.get
        return cls(as_str(get("name")), as_str(get("test")), opt_int(get("tables")), opt_int(get("table_size")),
                   tuple(as_int(t) for t in as_list(get("threads"))), opt_int(get("duration")),
                   as_int(get("warmup"), 0), opt_float(get("percentile")),
                   tuple(as_float(p) for p in as_list(get("compare_percentiles"))), opt_str(get("buffer_pool")),
                   as_int(get("report_interval"), 1), opt_str(get("tool")), opt_int(get("scale")))


@dataclass(frozen=True)
class CampaignRecord:
    """A campaign's definition as stored: typed fields for the analysis, `document` for display and resume."""

    name: str
    baseline: str
    variants: tuple[VariantRecord, ...]
    workloads: tuple[WorkloadRecord, ...]
    repetitions: int | AdaptiveRepetitions
    description: str | None = None
    order: str | None = None
    noise_threshold: float = DEFAULTS.noise_threshold
    alpha: float = DEFAULTS.alpha
    min_runs: int = DEFAULTS.min_runs
    seed: int = DEFAULTS.seed
    unstable_ratio: float = DEFAULTS.unstable_ratio
    compare_percentiles: tuple[float, ...] = ()
    formats: tuple[str, ...] | None = None
    imported_from: str | None = None
    imported_layouts: tuple[str, ...] = ()  # sysbench output layouts of imported log files
    estimator: str = DEFAULTS.stored_estimator  # paired | unpaired; stored before it existed: unpaired
    correction: str = DEFAULTS.correction  # the Holm family: "point" or "sweep" (stores before it: "point")
    estimates_only: bool = False  # the campaign asked for estimates, not verdicts (estimates_only: true)
    document: JSONObject = field(default_factory=dict, compare=False, repr=False)
    format: int = 0  # the stored definition's format (0: stored before it had one, or not stored yet)

    @classmethod
    def from_json(cls, data: JSONObject) -> CampaignRecord:
        get = data.get
        formats = get("formats")
        return cls(as_str(get("name")), as_str(get("baseline")),
                   tuple(VariantRecord.from_json(as_object(v)) for v in as_list(get("variants"))),
                   tuple(WorkloadRecord.from_json(as_object(w)) for w in as_list(get("workloads"))),
                   _repetitions(get("repetitions")), opt_str(get("description")), opt_str(get("order")),
                   as_float(get("noise_threshold"), DEFAULTS.noise_threshold),
                   as_float(get("alpha"), DEFAULTS.alpha),
                   as_int(get("min_runs") or DEFAULTS.min_runs), as_int(get("seed"), DEFAULTS.seed),
                   as_float(get("unstable_ratio"), DEFAULTS.unstable_ratio),
                   tuple(as_float(p) for p in as_list(get("compare_percentiles"))),
                   None if formats is None else tuple(as_str(f) for f in as_list(formats)),
                   opt_str(get("imported_from")), tuple(as_str(x) for x in as_list(get("imported_layouts"))),
                   as_str(get("estimator"), DEFAULTS.stored_estimator),
                   opt_str(get("correction")) or DEFAULTS.correction, get("estimates_only") is True,
                   {k: v for k, v in data.items() if k != "format"}, as_int(get("format"), 0))

    def to_json(self) -> JSONObject:
        """The definition as validated (what resume parses again and the report shows), without its format."""
        return dict(self.document)

    def stored_json(self) -> JSONObject:
        """The JSON the store keeps: the definition with the current format number."""
        return {"format": CAMPAIGN_FORMAT, **self.document}

    @classmethod
    def imported(cls, name: str, baseline: str, origin: str, variants: list[str], threads: list[int],
                 percentile: float | None, repetitions: int, extra: JSONObject | None = None) -> CampaignRecord:
        """Results measured elsewhere (a CSV table, sysbench logs): what is known of their campaign."""
        document: JSONObject = {
            "name": name, "baseline": baseline, "imported_from": origin, "order": IMPORTED, **(extra or {}),
            "repetitions": repetitions, "variants": [{"name": v, "backend": IMPORTED} for v in variants],
            "workloads": [{"name": IMPORTED, "test": IMPORTED, "threads": list(threads), "percentile": percentile}]}
        return cls.from_json(document)

    def settings(self) -> Settings:
        """The statistics settings; an adaptive campaign tests at each look's share of alpha (sequential.py)."""
        alpha = self.alpha
        if isinstance(self.repetitions, AdaptiveRepetitions):
            alpha = alpha / self.repetitions.looks
        return Settings(self.noise_threshold, alpha, self.min_runs, self.seed, self.estimator)

    def with_statistics(self, overrides: Overrides) -> CampaignRecord:
        """The same campaign analysed with other settings (`report --alpha ...`); the store keeps its own."""
        return replace(CampaignRecord.from_json({**self.document, **overrides.campaign_keys()}), format=self.format)

    @property
    def report_formats(self) -> tuple[str, ...]:
        """The formats `run`, `resume` and `report` write (the campaign's `formats`, else the default)."""
        return self.formats or REPORT_FORMATS

    def variant(self, name: str) -> VariantRecord | None:
        return next((v for v in self.variants if v.name == name), None)

    def workload(self, name: str) -> WorkloadRecord | None:
        return next((w for w in self.workloads if w.name == name), None)

    @property
    def variant_names(self) -> list[str]:
        return [v.name for v in self.variants]


def _repetitions(value: object) -> int | AdaptiveRepetitions:
    return AdaptiveRepetitions.from_json(value) if isinstance(value, dict) else as_int(value, 0)
