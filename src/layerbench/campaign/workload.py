"""A campaign's workloads: the sysbench test, its dataset, thread counts, run lengths and options, as the
`workloads:` list of the campaign file (campaign/models.py) gives them."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from layerbench.errors import shown
from layerbench.server.settings import OPTION_NAME, check_option_value, refuse_secret_names
from layerbench.sysbench.options import check_sysbench_options
from layerbench.vocabulary.base import NAME_RE, PrintableLine, Strict
from layerbench.vocabulary.limits import (
    MAX_PGBENCH_SCALE,
    MAX_SECONDS,
    MAX_TABLE_ROWS,
    MAX_TABLES,
    MAX_THREAD_POINTS,
    MAX_THREADS,
)


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


RecordedPercentiles = Annotated[list[float], BeforeValidator(recorded_percentiles)]

PGBENCH_SCRIPTS = ("tpcb-like", "select-only")  # pgbench's built-in scripts a `tool: pgbench` workload runs
# keys of a sysbench workload that pgbench has no use for: its dataset is `scale`, it reports no histogram
SYSBENCH_ONLY = {
    "tables": "a pgbench dataset is its `scale` (pgbench -i -s N)", "table_size": "a pgbench dataset is its `scale`",
    "options": "sysbench's options; pgbench takes none from the campaign yet",
    "rand_type": "sysbench's random distribution; pgbench's scripts draw uniformly",
    "rand_seed": "sysbench's --rand-seed", "dataset_flags": "a sysbench Lua script's",
    "buffer_pool": "InnoDB's buffer pool; set the variant's server.config.shared_buffers",
    "compare_percentiles": "a sysbench histogram's; a pgbench run records one percentile (`percentile`)",
}


def scale_factor(value: Any) -> Any:
    """`scale:` is a whole number from 1 (pgbench -i -s N: N x 100,000 rows of pgbench_accounts)."""
    if value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PGBENCH_SCALE:
        raise ValueError(f"{shown(value)} is not a pgbench scale factor; write a whole number from 1 to "
                         f"{MAX_PGBENCH_SCALE:,} (pgbench -i -s N: N x 100,000 rows), like scale: 10")
    return value


class Workload(Strict):
    name: Annotated[str, Field(pattern=NAME_RE)] = "default"
    test: PrintableLine = Field(default="oltp_read_write", pattern=r"^[^\x00-\x1f\x7f-\x9f]{1,4096}$")
    tables: int = Field(default=4, ge=1, le=MAX_TABLES)
    table_size: int = Field(default=10_000, ge=1, le=MAX_TABLE_ROWS)
    threads: list[int] = Field(default_factory=lambda: [2])
    duration: int = Field(default=10, ge=1, le=MAX_SECONDS, description="seconds of measured run")
    warmup: int = Field(default=5, ge=0, le=MAX_SECONDS, description="seconds of unmeasured run before it")
    report_interval: int = Field(default=1, ge=1, le=MAX_SECONDS)
    percentile: int = Field(default=95, ge=1, le=100)
    compare_percentiles: RecordedPercentiles = Field(
        default_factory=list, description="latency percentiles compared besides `percentile`: 50, 90, 95, 99, 99.9 "
        "or 100 (the maximum)")
    rand_type: Literal["uniform", "gaussian", "special", "pareto", "zipfian"] | None = None
    rand_seed: int | None = Field(default=0, ge=0, le=2**32 - 1)
    buffer_pool: str | None = Field(default=None, description="buffer pool relative to data size, e.g. 10%")
    reset: Literal["snapshot", "reprepare", "none"] = "snapshot"
    verify: Literal["files", "checksum"] = Field(
        default="files", description="per run with reset: snapshot: files (the restored files against the "
        "snapshot's manifest) or checksum (also CHECKSUM TABLE of every table in a private server; docs/datasets.md)")
    options: dict[str, str | int | float | bool] = Field(default_factory=dict, max_length=100)
    tool: Literal["sysbench", "pgbench"] | None = Field(
        default=None, description="the load generator: sysbench (unset, the default) or pgbench (a PostgreSQL "
        "variant's; `test` is then tpcb-like or select-only, the dataset its `scale`). Unset is not stored")
    scale: Annotated[int | None, BeforeValidator(scale_factor)] = Field(
        default=None, description="pgbench's scale factor (tool: pgbench): the dataset pgbench -i -s N makes, "
        "N x 100,000 accounts rows; 1 when unset")
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

    @model_validator(mode="after")
    def _not_the_main_percentile(self) -> Workload:
        if self.percentile in self.compare_percentiles:
            raise ValueError(f"compare_percentiles: {self.percentile:g} is already the workload's `percentile`; "
                             "list only the others")
        return self

    @model_validator(mode="before")
    @classmethod
    def _pgbench_default_script(cls, data: Any) -> Any:
        """A pgbench workload without a `test` runs pgbench's own default, tpcb-like (written so that the stored
        definition and the report say it)."""
        if isinstance(data, dict) and data.get("tool") == "pgbench" and "test" not in data:
            return {**data, "test": PGBENCH_SCRIPTS[0]}
        return data

    @model_validator(mode="after")
    def _keys_of_its_tool(self) -> Workload:
        """A pgbench workload takes pgbench's keys (test: one of its scripts, scale), a sysbench one sysbench's."""
        where = f"workloads.{self.name}"
        if not self.is_pgbench:
            if self.scale is not None:
                raise ValueError(f"{where}.scale: pgbench's scale factor, and this workload runs sysbench (its dataset "
                                 "is tables x table_size); remove it, or set tool: pgbench")
            if self.test in PGBENCH_SCRIPTS:
                raise ValueError(f"{where}.test: {self.test} is a pgbench script; set tool: pgbench")
            return self
        for key in sorted(SYSBENCH_ONLY.keys() & self.model_fields_set):
            raise ValueError(f"{where}.{key}: a sysbench key ({SYSBENCH_ONLY[key]}), and this workload runs pgbench; "
                             "remove it")
        if self.test not in PGBENCH_SCRIPTS:
            raise ValueError(f"{where}.test: {shown(self.test)} is not a pgbench script layerbench runs; use "
                             f"{' or '.join(PGBENCH_SCRIPTS)}")
        return self

    @property
    def is_pgbench(self) -> bool:
        return self.tool == "pgbench"

    @property
    def pgbench_scale(self) -> int:
        return self.scale or 1

    @property
    def dataset_rows(self) -> int:
        """The rows of its dataset (a size's estimates): tables x table_size, or pgbench's accounts."""
        return 100_000 * self.pgbench_scale if self.is_pgbench else self.tables * self.table_size

    @field_validator("test")
    @classmethod
    def _test_name(cls, value: str) -> str:
        """A bundled test's name goes on sysbench's command line: ASCII, as every one of them is named (a path,
        ending in .lua or holding a /, is the user's file, named as it is)."""
        if not (value.endswith(".lua") or "/" in value) and not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", value):
            raise ValueError(f"{shown(value)} is not a sysbench test (a name of letters, digits, _, . and -, like "
                             "oltp_read_write) nor a Lua script's path (ending in .lua)")
        return value

    @field_validator("buffer_pool")
    @classmethod
    def _percent(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[0-9]{1,4}(\.[0-9]{1,3})?%", value.strip()):
            raise ValueError(f"{shown(value)} is not a percentage of the data size; write it like 10% or 150%")
        return value

    @field_validator("options")
    @classmethod
    def _no_credentials(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_sysbench_options(value)  # what layerbench sets, in any spelling (sysbench/options.py)
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


def smoke_dataset(workload: Workload) -> dict[str, int]:
    """1 x 1000 rows (pgbench: scale 1); a script of the user's makes its own tables: only the dataset fields its
    workload sets are shrunk (preflight makes sure each of those reaches the script: custom_script.check_script)."""
    if workload.is_pgbench:
        return {"scale": 1}
    small = {"tables": 1, "table_size": 1000}
    return {k: v for k, v in small.items() if not workload.is_lua_path or k in workload.model_fields_set}
