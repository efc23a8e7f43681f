"""The bounds on what one campaign file may ask for: docs/campaign.md, "Limits" (the file's own size and depth:
boundedyaml.py; a neighbour's: neighbours/model.py)."""

from __future__ import annotations

MAX_RUNS = 20_000  # runs in one plan: 20,000 runs of 10 s are more than two days
MAX_VARIANTS = 100
MAX_WORKLOADS = 50
MAX_THREAD_POINTS = 64  # thread counts of one workload
MAX_THREADS = 4096  # one thread count
MAX_SECONDS = 86_400  # a duration or warm-up of one run, a timeout: a day
MAX_TABLES = 10_000  # sysbench tables of one dataset
MAX_TABLE_ROWS = 1_000_000_000  # rows of one table
MAX_PGBENCH_SCALE = 100_000  # pgbench's scale factor: 10^10 accounts rows, about 1.5 TB
MAX_CPU = 4095  # the highest CPU number a CPU list may name
MAX_TEXT = 2000  # a description, a citation
MAX_PATH = 4096  # a path
