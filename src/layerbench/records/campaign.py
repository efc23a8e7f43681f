"""The campaign as a store keeps it and the analysis reads it: a typed view of the stored definition JSON
(what `campaign.py` validated, or what an importer knows of results measured elsewhere), which keeps that JSON
whole so `resume` and the "campaign as run" section see exactly what was stored."""

from __future__ import annotations

from dataclasses import dataclass, field

from layerbench.campaign.settings import DEFAULTS, REPORT_FORMATS, Overrides, Settings
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

IMPORTED = "imported"  # the backend and workload name of results measured elsewhere


@dataclass(frozen=True)
class AdaptiveRepetitions:
    """repetitions: auto: rounds from `min` to `max`, stopped early when every comparison is decided."""

    rounds_min: int = 6
    rounds_max: int = 30
    budget: str | None = None

    @property
    def looks(self) -> int:
        return max(1, self.rounds_max - self.rounds_min + 1)


@dataclass(frozen=True)
class VariantRecord:
    name: str
    backend: str
    extends: str | None = None
    cost_per_month: float | None = None
    config_keys: frozenset[str] = frozenset()  # the server settings the campaign sets for it
    cpus: str | None = None  # its server's CPU list
    memory_limit: str | None = None  # resources.memory or limits.memory
    vcpus: int = 1  # vm only
    vm_memory: str = "2G"  # vm only

    @classmethod
    def from_json(cls, data: JSONObject) -> VariantRecord:
        config = as_object(as_object(data.get("server")).get("config"))
        memory = as_object(data.get("resources")).get("memory") or as_object(data.get("limits")).get("memory")
        return cls(as_str(data.get("name")), as_str(data.get("backend")), opt_str(data.get("extends")),
                   opt_float(data.get("cost_per_month")), frozenset(config), opt_str(data.get("cpus")),
                   opt_str(memory), as_int(data.get("vcpus"), 1), as_str(data.get("memory"), "2G"))


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

    @classmethod
    def from_json(cls, data: JSONObject) -> WorkloadRecord:
        get = data.get
        return cls(as_str(get("name")), as_str(get("test")), opt_int(get("tables")), opt_int(get("table_size")),
                   tuple(as_int(t) for t in as_list(get("threads"))), opt_int(get("duration")),
                   as_int(get("warmup"), 0), opt_float(get("percentile")),
                   tuple(as_float(p) for p in as_list(get("compare_percentiles"))), opt_str(get("buffer_pool")),
                   as_int(get("report_interval"), 1))


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
    document: JSONObject = field(default_factory=dict, compare=False, repr=False)

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
                   opt_str(get("correction")) or DEFAULTS.correction, dict(data))

    def to_json(self) -> JSONObject:
        return dict(self.document)

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
        return CampaignRecord.from_json({**self.document, **overrides.campaign_keys()})

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
    if isinstance(value, dict):
        return AdaptiveRepetitions(as_int(value.get("min"), 6), as_int(value.get("max"), 30),
                                   opt_str(value.get("budget")))
    return as_int(value, 0)
