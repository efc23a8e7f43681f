"""Import raw sysbench or pgbench output files (one file per run) as a stored campaign: which file is which
variant, iteration and thread count (from a folder's layout, the file names, or a mapping file), each parsed by
sysbench/output.py or pgbench/output.py (the parsers the live runs use too), stored with its percentile and
interval series. Files
that report different latency percentiles (95th, 100th) are imported together: TPS, QPS and average latency
are compared, the percentile latency is shown per file and marked "not compared: 95th vs 100th" (analysis/aggregate.py).

Without a mapping file a file is named `VARIANT-ITERATION.ext` (or `VARIANT_ITERATION`, `VARIANT-run3.log`),
or lies in a folder named after its variant with the iteration as the last number of its name
(`host/run-3.log`); the thread count comes from the file (`Number of threads:`). A mapping file (YAML) names
each file:

    runs:
      - {file: logs/a.txt, variant: host, iteration: 1, threads: 8}
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerbench.bounded_read import CAMPAIGN_FILE, FileKind, read_user_file, read_yaml_file
from layerbench.errors import BadInput, shown
from layerbench.importing.table import check_name
from layerbench.pgbench.output import PgbenchRun, is_pgbench_output
from layerbench.pgbench.output import parse_log as parse_pgbench
from layerbench.records import CampaignRecord, RunRecord
from layerbench.statistics_settings import Overrides
from layerbench.store import Store
from layerbench.sysbench.output import LogRun, parse_log
from layerbench.vocabulary.limits import MAX_RUNS

MAX_LOG_BYTES = 64 << 20  # a sysbench log of hours with 1 s intervals is a few MB
SYSBENCH_LOG = FileKind("sysbench log", MAX_LOG_BYTES, "check the path", encoding="utf-8-sig")
MAPPING_FILE = FileKind("mapping file", CAMPAIGN_FILE.limit, "check the path", encoding="utf-8-sig")
LARGEST = 100_000  # iterations and threads: far above any study, far below what breaks arithmetic
MAPPING_KEYS = {"file", "variant", "iteration", "threads"}
NAME_RE = re.compile(r"^(?P<variant>.+?)[-_.](?:run|iter|iteration|rep|r)?[-_]?(?P<iteration>\d+)$", re.IGNORECASE)


@dataclass(frozen=True)
class LogFile:
    path: Path
    variant: str
    iteration: int
    threads: int | None  # from the mapping; else from the file


def looks_like_mapping(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in (".yaml", ".yml")


def files_of(source: str) -> list[Path]:
    """The files of a folder (recursively), of a glob pattern, or the one file given."""
    if any(c in source for c in "*?["):
        found = sorted(Path(p) for p in glob.glob(source, recursive=True) if Path(p).is_file())
        if not found:
            raise BadInput(f"{source}: the pattern matches no file; check it (quote it so the shell keeps it)")
        return found
    path = Path(source)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
        if not found:
            raise BadInput(f"{source}: the folder holds no file")
        return found
    if not path.is_file():
        raise BadInput(f"{source}: no such file or folder; check the path")
    return [path]


def identify(path: Path, root: Path | None) -> LogFile:
    """Variant and iteration from the path: `host/run-3.log`, or `host-3.log` / `host_3.txt`."""
    relative = path.relative_to(root) if root is not None and path.is_relative_to(root) else Path(path.name)
    stem = path.name.split(".")[0] if path.suffix else path.name
    if len(relative.parts) > 1:
        numbers = re.findall(r"\d+", stem)
        if numbers:
            return LogFile(path, relative.parts[0], int(numbers[-1][-9:]), None)
    match = NAME_RE.match(stem)
    if not match:
        raise BadInput(f"{path}: cannot tell the variant and iteration from the name; name it VARIANT-ITERATION "
                       "(host-1.log), put it in a folder named after its variant, or use a mapping file")
    iteration = int(match.group("iteration")[-9:])  # a 5,000-digit run number is no run number
    return LogFile(path, match.group("variant"), iteration, None)


def mapping_entry(entry: Any, index: int, where: Path) -> LogFile:
    at = f"{where}: runs[{index}]"
    if not isinstance(entry, dict) or not {"file", "variant", "iteration"} <= entry.keys():
        raise BadInput(f"{at}: needs file, variant and iteration (and optionally threads)")
    unknown = sorted(str(k) for k in set(entry) - MAPPING_KEYS)
    if unknown:
        raise BadInput(f"{at}.{shown(unknown[0], quote=False)}: unknown key; use {', '.join(sorted(MAPPING_KEYS))}")
    for key in ("iteration", "threads"):
        value = entry.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= LARGEST):
            raise BadInput(f"{at}.{key}: {shown(str(value))} must be a whole number from 1 to {LARGEST}")
    path = (where.parent / str(entry["file"])).resolve()
    if not path.is_file():
        raise BadInput(f"{at}.file: {shown(str(entry['file']))} does not exist (paths are relative to the mapping "
                       "file)")
    return LogFile(path, str(entry["variant"]), int(entry["iteration"]), entry.get("threads"))


def read_mapping(path: Path) -> list[LogFile]:
    data = read_yaml_file(path, MAPPING_FILE)
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list) or not data["runs"]:
        raise BadInput(f"{path}: a mapping file is `runs:` followed by a list of {{file, variant, iteration}}")
    return [mapping_entry(entry, i, path) for i, entry in enumerate(data["runs"])]


def glob_root(source: str) -> Path:
    """The folder a glob pattern starts from (`logs/*/*.txt` -> `logs`): variants are its sub-folders."""
    head = re.split(r"[*?\[]", source, maxsplit=1)[0]
    return Path(head) if head.endswith("/") else Path(head).parent


def log_files(source: str) -> list[LogFile]:
    path = Path(source)
    if looks_like_mapping(path):
        return read_mapping(path)
    root = path if path.is_dir() else glob_root(source) if any(c in source for c in "*?[") else None
    return [identify(p, root) for p in files_of(source)]


def read_log(entry: LogFile) -> LogRun:
    """A sysbench log, or pgbench's output (its banner or summary: pgbench/output.py reads it)."""
    text = read_user_file(entry.path, SYSBENCH_LOG)
    if is_pgbench_output(text):
        return parse_pgbench(str(entry.path), text)
    return parse_log(str(entry.path), text)


def imported_facts(path: Path, run: LogRun) -> dict[str, Any]:
    """What a run's record keeps of its file: where it was, its layout and program version, its percentile; a
    pgbench run's transaction type, scale and statements' mean latencies (`-r`)."""
    if isinstance(run, PgbenchRun):
        return {"file": str(path.resolve()), "layout": run.layout, "pgbench": run.version, "percentile": None,
                "transaction_type": run.transaction_type, "scale": run.scale,
                "statements": [{"command": s.command, "latency_ms": s.latency_ms} for s in run.statements]}
    return {"file": str(path.resolve()), "layout": run.layout, "sysbench": run.version, "percentile": run.percentile}


def checked_runs(entries: list[LogFile]) -> list[tuple[LogFile, LogRun, int | None]]:
    """Each file parsed, with its thread count; no run given twice. Files may report different latency
    percentiles: each run keeps its own, and the analysis compares no percentile latency across them."""
    out, seen = [], {}
    for entry in entries:
        run = read_log(entry)
        threads = entry.threads or run.threads
        if entry.threads and run.threads and entry.threads != run.threads:
            raise BadInput(f"{entry.path}: the mapping says {entry.threads} threads, the file says {run.threads}; "
                           "fix the mapping")
        key = (entry.variant, threads, entry.iteration)
        if key in seen:
            raise BadInput(f"{entry.path}: variant {entry.variant!r} iteration {entry.iteration} (threads "
                           f"{threads}) is also {seen[key]}; rename one or fix the mapping")
        seen[key] = entry.path
        out.append((entry, run, threads))
    return out


def campaign_percentile(runs: list[tuple[LogFile, LogRun, int | None]], baseline: str) -> float | None:
    """The percentile the campaign is labelled with: the baseline's (its first file that reports one), else the
    first file's; runs that report another keep theirs and are marked in the report."""
    found = [(entry.variant, run.percentile) for entry, run, _ in runs if run.percentile is not None]
    return next((p for v, p in found if v == baseline), found[0][1] if found else None)


def import_logs(store: Store, source: str, name: str, baseline: str, options: Overrides) -> int:
    """Store the files as a campaign with status `imported`; returns its id."""
    check_name(name, "--name")
    entries = log_files(source)
    if len(entries) > MAX_RUNS:
        raise BadInput(f"{shown(source)}: {len(entries):,} files, more than the {MAX_RUNS:,} runs a campaign may hold; "
                       "split it")
    for entry in entries:
        check_name(entry.variant, f"{shown(str(entry.path))}: variant")
    runs = checked_runs(entries)
    variants = list(dict.fromkeys(entry.variant for entry, _, _ in runs))
    if baseline not in variants:
        raise BadInput(f"--baseline: {shown(baseline)} is not a variant of {shown(source)}; use one of "
                       f"{shown(', '.join(variants), 200, quote=False)}")
    percentile = campaign_percentile(runs, baseline)
    origin = Path(source).resolve() if not any(c in source for c in "*?[") else Path(source).absolute()
    threads = sorted({t for _, _, t in runs if t is not None})
    extra = {**options.campaign_keys(), "imported_layouts": sorted({run.layout for _, run, _ in runs})}
    definition = CampaignRecord.imported(name, baseline, str(origin), variants, threads, percentile,
                                         max(entry.iteration for entry, _, _ in runs), extra)
    folder = origin if origin.is_dir() else origin.parent
    records = []
    for entry, run, t in runs:
        record = RunRecord(0, entry.variant, "imported", t, entry.iteration, totals=run.totals,
                           percentile=run.percentile, intervals=run.intervals)
        record.facts.other["imported"] = imported_facts(entry.path, run)
        records.append(record)
    return store.import_campaign(definition, str(folder), str(origin), records)
