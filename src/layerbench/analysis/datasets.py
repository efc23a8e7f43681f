"""How each variant's runs got their data and where it lived: restore path, what was verified, the reset's
time, the buffer pool's state at the start, and the datadir's filesystem (docs/datasets.md)."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from layerbench.analysis.runs import RunRow
from layerbench.records.run import Environment, Reset

DATA_COLUMNS = ("variant", "data reset", "verified", "reset s (median)", "buffer pool at start", "datadir storage")


@dataclass(frozen=True)
class DataRow:
    variant: str
    restore: str  # e.g. "clone x10" or "copy x8, clone x2"; "reprepare x4", "none x4"
    verified: str
    reset_seconds: float | None  # median over the variant's runs: restore + checks
    start_state: str
    storage: str  # filesystem on device (options) at path


def counted(values: list[str]) -> str:
    counts = Counter(v for v in values if v)
    return ", ".join(f"{value} x{n}" for value, n in sorted(counts.items())) or "-"


def restore_method(reset: Reset) -> str:
    """The restore path or the reset method; with where it came from when the variant's reset was its own (its
    `reset:`, or reprepare because it cannot restore) rather than its workload's; and, for a dataset an ssh: host
    prepared with its own server, that host, binary and version."""
    method = reset.restore.method if reset.method == "snapshot" and reset.restore else reset.method
    source = reset.document.get("reset_from")
    said = f"{method} ({source})" if isinstance(source, str) and not source.startswith("workloads.") else method
    return said + prepared_text(reset.document.get("dataset_prepared"))


def prepared_text(prepared: object) -> str:
    """`; prepared on host db by /usr/sbin/mariadbd (mariadbd  Ver 11.8.3-MariaDB ...)` for a dataset an ssh: host
    prepared (run records since issue #42); nothing for one this machine prepared."""
    if not isinstance(prepared, dict) or not isinstance(prepared.get("host"), str):
        return ""
    version = str(prepared.get("version") or "").splitlines()[0][:80] if prepared.get("version") else "?"
    return f"; prepared on host {prepared['host']} by {prepared.get('binary')} ({version})"


def restore_seconds(reset: Reset) -> float:
    """The snapshot's restore (clone, copy, overlay, a copy inside the container), made as the backend started the
    server, so outside the reset's own time."""
    return (reset.restore.seconds or 0.0) if reset.method == "snapshot" and reset.restore else 0.0


def verified_text(reset: Reset) -> str:
    parts = [reset.restore.verified] if reset.restore else []
    if reset.verify == "checksum":
        parts.append("table checksums in a private server")  # CHECKSUM TABLE, or PostgreSQL's md5 of the rows
    if reset.legacy_checksum:  # runs stored before file-level verification
        parts.append("CHECKSUM TABLE through the variant's server")
    return " + ".join(p for p in parts if p)


def storage_words(storage: dict[str, object]) -> str:
    """A run's datadir storage in words: its filesystem on its device (options), or the backend's storage mode."""
    if storage.get("fstype") or storage.get("device"):
        return f"{storage.get('fstype') or '?'} on {storage.get('device') or '?'} ({storage.get('options') or '?'})"
    if storage.get("volume"):
        return f"{storage['volume']} (the backend's storage; its filesystem is not read)"
    return "not recorded"


def storage_text(env: Environment | None) -> str:
    s = env.storage if env else {}
    if not s:
        return ""
    where = f" at {s['path']}" if s.get("path") else ""
    return f"{storage_words(s)}{where}"


def data_row(variant: str, runs: list[RunRow]) -> DataRow:
    resets = [r.facts.reset for r in runs if r.facts.reset is not None]
    seconds = [x.seconds + (x.check_seconds or 0.0) + restore_seconds(x) for x in resets if x.seconds is not None]
    return DataRow(variant, counted([restore_method(x) for x in resets]), counted([verified_text(x) for x in resets]),
                   statistics.median(seconds) if seconds else None,
                   counted([(x.buffer_pool_at_start or "").split(" (")[0] for x in resets]),
                   counted([storage_text(r.facts.environment) for r in runs]))


def recorded_here(run: RunRow) -> bool:
    """A run recorded by a version that records its restore and datadir folder (older stores report as they did)."""
    env, reset = run.facts.environment, run.facts.reset
    return bool((env and env.storage.get("path")) or (reset and reset.restore))


def dataset_rows(runs: list[RunRow]) -> list[DataRow]:
    """One row per variant, over its successful runs, in the order the variants first appear; nothing when no run
    recorded these facts (imported results, stores written before them)."""
    if not any(recorded_here(r) for r in runs):
        return []
    variants = list(dict.fromkeys(r.variant for r in runs))
    rows = [data_row(v, [r for r in runs if r.variant == v and r.status == "ok"]) for v in variants]
    return [d for d in rows if (d.restore, d.storage) != ("-", "-")]
