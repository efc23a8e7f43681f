"""The latency distribution of a run's measured window, from sysbench's own `--histogram` output.

sysbench 1.0 counts every event's latency in a log-scale histogram (sb_histogram.c: 1024 buckets between
0.001 ms and 100,000 ms, bucket i holds values that round to exp(i / mult + ln 0.001)). Our run command resets
it at the end of the warm-up (`--report-checkpoints`) and asks for `--histogram`, which prints the buckets of
the measured window just before the final report. The percentiles here follow sysbench's own rule
(get_pct_cumulative: the first bucket whose running count reaches floor(n * p / 100 + 0.5)), so the one that
sysbench reports (`--percentile`) is reproduced exactly; their resolution is one bucket (about 1.8 %). The
maximum is sysbench's exact timer maximum, not a bucket, and no percentile is shown above it (the middle of the
top bucket can lie above the real maximum: then the maximum is the better bound). sysbench prints a bucket's
value with 3 decimals, which names the bucket exactly from 0.054 ms up; below that, neighbouring buckets print
alike and merge.
"""

from __future__ import annotations

import math
import re

BUCKETS = 1024
RANGE_MIN_MS, RANGE_MAX_MS = 1e-3, 1e5
_DEDUCT = math.log(RANGE_MIN_MS)
_MULT = (BUCKETS - 1) / (math.log(RANGE_MAX_MS) - _DEDUCT)

PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0, 99.9)  # recorded per run, plus the maximum (100)
TITLE = "Latency histogram (values are in milliseconds)"
_ROW = re.compile(r"^\s*([0-9]+\.[0-9]+)\s+\|\**\s+([0-9]+)\s*$")


def bucket_of(value_ms: float) -> int:
    """The bucket a printed value (%12.3f of the bucket's value) belongs to."""
    return min(BUCKETS - 1, max(0, round((math.log(value_ms) - _DEDUCT) * _MULT)))


def bucket_value(bucket: int) -> float:
    return math.exp(bucket / _MULT + _DEDUCT)


def parse_histogram(text: str) -> dict[int, int] | None:
    """bucket -> count of the histogram sysbench printed, or None when the output has none."""
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if TITLE in line), None)
    if start is None:
        return None
    counts: dict[int, int] = {}
    for line in lines[start + 2:]:
        row = _ROW.match(line)
        if row is None:
            break
        value = float(row.group(1))
        if value > 0:
            bucket = bucket_of(value)
            counts[bucket] = counts.get(bucket, 0) + int(row.group(2))
    return counts


def percentile_ms(counts: dict[int, int], percentile: float) -> float | None:
    """sysbench's percentile of a histogram: the first bucket whose running count reaches the rank."""
    total = sum(counts.values())
    if total == 0:
        return None
    rank = math.floor(total * percentile / 100 + 0.5)
    running = 0
    for bucket in sorted(counts):
        running += counts[bucket]
        if running >= rank:
            return bucket_value(bucket)
    return bucket_value(max(counts))


def distribution(counts: dict[int, int], max_ms: float | None) -> dict[float, float]:
    """percentile -> ms for PERCENTILES, and 100 -> the exact maximum; empty when no event was counted."""
    if not counts or sum(counts.values()) == 0:
        return {}
    out = {p: value for p in PERCENTILES if (value := percentile_ms(counts, p)) is not None}
    if max_ms is not None:  # a bucket's value is its middle: in the maximum's bucket it can exceed the maximum
        out = {p: min(value, float(max_ms)) for p, value in out.items()} | {100.0: float(max_ms)}
    return out


def percentile_key(percentile: float) -> str:
    """'p99.9' for 99.9, 'p95' for 95, 'max' for 100: the name reports and exports use."""
    return "max" if percentile >= 100 else f"p{percentile:g}"
