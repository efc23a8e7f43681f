"""Results measured elsewhere: which importer reads a source, a CSV table (importing/table.py) or raw sysbench output
files (importing/logs.py). Both store an `imported` campaign that goes through the same statistics."""

from __future__ import annotations

from pathlib import Path

from layerbench.importing.logs import import_logs
from layerbench.importing.table import import_csv
from layerbench.statistics_settings import Overrides
from layerbench.store import Store


def is_csv(source: str) -> bool:
    return Path(source).suffix.lower() == ".csv" and Path(source).is_file()


def import_results(store: Store, source: str, name: str, baseline: str, options: Overrides) -> int:
    """A CSV table, or raw sysbench output files (a folder, a glob, a YAML mapping file, or one file)."""
    if is_csv(source):
        return import_csv(store, Path(source), name, baseline, options)
    return import_logs(store, source, name, baseline, options)
