"""A campaign's `published:` block: the numbers a published study printed, as data (its citation, its baseline,
its size, and per variant and metric the delta it reported), validated with one-line errors. The report's
"Published vs measured" section puts each one beside ours (analysis/published.py); `--scale` runs an example at
the study's size or at a size scaled to this machine (campaign/scaling.py). docs/studies.md."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from layerbench.errors import shown
from layerbench.vocabulary.base import NAME_RE, Strict, Text
from layerbench.vocabulary.limits import MAX_SECONDS, MAX_TABLE_ROWS, MAX_TABLES
from layerbench.vocabulary.sizes import published_size_bytes

MAX_NUMBERS = 200
DELTA_RE = re.compile(r"([+-]?[0-9]{1,6}(?:\.[0-9]{1,3})?)\s?%")  # -10%, +100 %, 0%
DIRECTIONS = ("slower", "faster")  # a study that gave a direction without a number
METRICS = ("tps", "qps", "avg_latency", "pct_latency")  # pct_latency: the workload's `percentile`


def checked_size(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, str) or not published_size_bytes(value):
        raise ValueError(f"{shown(value)} is not a size; write it like 256M, 2.3G or 45G (powers of 1024)")
    return value.strip()


StudySize = Annotated[str | None, BeforeValidator(checked_size)]  # 2.3G, 256M, 45GiB (vocabulary/sizes.py)


def checked_delta(value: Any) -> Any:
    """A percent (`-10%`) or a direction word; a bare number is refused: -0.1 and -10 would both be read."""
    if isinstance(value, str) and value.strip() in DIRECTIONS:
        return value.strip()
    match = DELTA_RE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None or not -100 <= float(match.group(1)) <= 10_000:
        raise ValueError(f"{shown(value)} is not a published delta; write a percent from -100% to 10000% "
                         "(like -10% or +100%), or slower or faster when the study gave only a direction")
    return f"{float(match.group(1)) + 0.0:+g}%"  # + 0.0: -0% is 0%


def one_line(value: str) -> str:
    if not value.strip() or not value.isprintable():
        raise ValueError(f"{shown(value)} must be one line of printable text")
    return value.strip()


class PublishedNumber(Strict):
    """One number of the study: `variant`'s `metric` against the study's baseline, as a percent or a direction."""

    variant: Annotated[str, Field(pattern=NAME_RE)]
    metric: Literal["tps", "qps", "avg_latency", "pct_latency"] = "tps"
    delta: Annotated[str, BeforeValidator(checked_delta)]  # `-10%` (normalised to `-10%`/`+100%`), or slower / faster
    workload: Annotated[str, Field(pattern=NAME_RE)] | None = None  # None: every workload of the campaign
    said: Text = ""  # how the study put it, quoted

    @field_validator("said")
    @classmethod
    def _said(cls, value: str) -> str:
        return one_line(value) if value else value

    @property
    def fraction(self) -> float | None:
        """The delta as a fraction (-0.1), or None for a direction word."""
        return None if self.delta in DIRECTIONS else float(self.delta.rstrip("%")) / 100


class PublishedSize(Strict):
    """The study's size: its sysbench dataset, buffer pool, machine memory and run length, as far as it said."""

    tables: int | None = Field(default=None, ge=1, le=MAX_TABLES)
    table_size: int | None = Field(default=None, ge=1, le=MAX_TABLE_ROWS)
    data: StudySize = None  # the dataset's size as the study gave it (else tables x table_size x bytes per row)
    buffer_pool: StudySize = None
    ram: StudySize = None  # the study machine's memory; needed for `--scale machine`
    duration: int | None = Field(default=None, ge=1, le=MAX_SECONDS)
    warmup: int | None = Field(default=None, ge=0, le=MAX_SECONDS)

    @model_validator(mode="after")
    def _some_data(self) -> PublishedSize:
        if self.data is None and (self.tables is None or self.table_size is None):
            raise ValueError("size: give the study's data (like 2.3G) or its tables and table_size")
        return self


class Published(Strict):
    """`published:`: where the numbers come from, what they were measured against, and the numbers."""

    source: Text = Field(min_length=1)  # the citation: title, author, year, address
    baseline: Text = Field(min_length=1)  # the study's baseline, in its words
    size: PublishedSize | None = None
    numbers: list[PublishedNumber] = Field(min_length=1, max_length=MAX_NUMBERS)

    @field_validator("source", "baseline")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return one_line(value)

    def check_names(self, variants: list[str], baseline: str, workloads: list[str]) -> None:
        """Every number names a variant other than the baseline and, if any, a workload of the campaign."""
        for i, number in enumerate(self.numbers):
            where = f"published.numbers[{i}]"
            if number.variant == baseline:
                raise ValueError(f"{where}.variant: {shown(number.variant)} is the baseline; a published delta "
                                 "belongs to a variant compared with it")
            if number.variant not in variants:
                raise ValueError(f"{where}.variant: {shown(number.variant)} names no variant; use one of: "
                                 f"{shown(', '.join(v for v in variants if v != baseline), 200, quote=False)}")
            if number.workload is not None and number.workload not in workloads:
                raise ValueError(f"{where}.workload: {shown(number.workload)} names no workload; use one of: "
                                 f"{shown(', '.join(workloads), 200, quote=False)}")
        keys = [(n.variant, n.metric, n.workload) for n in self.numbers]
        if len(set(keys)) < len(keys):
            twice = next(k for k in keys if keys.count(k) > 1)
            raise ValueError(f"published.numbers: {twice[0]} {twice[1]} is given twice"
                             f"{'' if twice[2] is None else ' for workload ' + twice[2]}; give each once")
