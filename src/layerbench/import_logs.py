"""Import raw sysbench output files (one file per run) as a stored campaign: which file is which variant,
iteration and thread count (from a folder's layout, the file names, or a mapping file), each parsed by
sysbench_logs, stored with its percentile and interval series.

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

import yaml

from layerbench.errors import BadInput
from layerbench.store import RunRecord, Store
from layerbench.sysbench_logs import LogRun, parse_log

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
            return LogFile(path, relative.parts[0], int(numbers[-1]), None)
    match = NAME_RE.match(stem)
    if not match:
        raise BadInput(f"{path}: cannot tell the variant and iteration from the name; name it VARIANT-ITERATION "
                       "(host-1.log), put it in a folder named after its variant, or use a mapping file")
    return LogFile(path, match.group("variant"), int(match.group("iteration")), None)


def mapping_entry(entry: Any, index: int, where: Path) -> LogFile:
    at = f"{where}: runs[{index}]"
    if not isinstance(entry, dict) or not {"file", "variant", "iteration"} <= entry.keys():
        raise BadInput(f"{at}: needs file, variant and iteration (and optionally threads)")
    unknown = sorted(set(entry) - MAPPING_KEYS)
    if unknown:
        raise BadInput(f"{at}.{unknown[0]}: unknown key; use {', '.join(sorted(MAPPING_KEYS))}")
    for key in ("iteration", "threads"):
        value = entry.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise BadInput(f"{at}.{key}: {value!r} must be a whole number >= 1")
    path = (where.parent / str(entry["file"])).resolve()
    if not path.is_file():
        raise BadInput(f"{at}.file: {entry['file']} does not exist (paths are relative to the mapping file)")
    return LogFile(path, str(entry["variant"]), int(entry["iteration"]), entry.get("threads"))


def read_mapping(path: Path) -> list[LogFile]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise BadInput(f"{path}: not a readable YAML mapping ({type(error).__name__}); fix the file") from None
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
    try:
        text = entry.path.read_bytes().decode("utf-8-sig", errors="strict")
    except UnicodeDecodeError:
        raise BadInput(f"{entry.path}, line 1: not UTF-8 text; sysbench writes plain text") from None
    except OSError as error:
        raise BadInput(f"{entry.path}: cannot be read ({error.strerror})") from None
    return parse_log(str(entry.path), text)


def checked_runs(entries: list[LogFile]) -> list[tuple[LogFile, LogRun, int | None]]:
    """Each file parsed, with its thread count; one percentile across the files, no run given twice."""
    out, seen, percentiles = [], {}, {}
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
        if run.percentile is not None:
            percentiles.setdefault(run.percentile, entry.path)
        out.append((entry, run, threads))
    if len(percentiles) > 1:
        (p1, f1), (p2, f2) = list(percentiles.items())[:2]
        raise BadInput(f"{f2}: reports the {p2:g}th latency percentile, {f1} the {p1:g}th; a comparison never "
                       "mixes percentiles: import the files of each percentile as a campaign of its own")
    return out


def import_logs(store: Store, source: str, name: str, baseline: str, options: dict[str, Any]) -> int:
    """Store the files as a campaign with status `imported`; returns its id."""
    runs = checked_runs(log_files(source))
    variants = list(dict.fromkeys(entry.variant for entry, _, _ in runs))
    if baseline not in variants:
        raise BadInput(f"--baseline: {baseline!r} is not a variant of {source}; use one of {', '.join(variants)}")
    percentile = next((run.percentile for _, run, _ in runs if run.percentile is not None), None)
    origin = Path(source).resolve() if not any(c in source for c in "*?[") else Path(source).absolute()
    threads = sorted({t for _, _, t in runs if t is not None})
    definition = {"name": name, "baseline": baseline, "imported_from": str(origin), "order": "imported",
                  "repetitions": max(entry.iteration for entry, _, _ in runs), **options,
                  "imported_layouts": sorted({run.layout for _, run, _ in runs}),
                  "variants": [{"name": v, "backend": "imported"} for v in variants],
                  "workloads": [{"name": "imported", "test": "imported", "threads": threads,
                                 "percentile": percentile}]}
    folder = origin if origin.is_dir() else origin.parent
    campaign_id = store.create_campaign(name, definition, baseline, str(folder), str(origin), status="imported")
    for entry, run, t in runs:
        record = RunRecord(campaign_id, entry.variant, "imported", t, entry.iteration, totals=run.totals,
                           percentile=run.percentile, intervals=run.intervals)
        record.details = {"imported": {"file": str(entry.path.resolve()), "layout": run.layout,
                                       "sysbench": run.version, "percentile": run.percentile}}
        store.save_run(record)
    return campaign_id
