"""The SQLite store: a versioned schema for campaigns, their schedule, runs and interval samples.

Each run is written in one transaction the moment it ends, so an interrupted campaign keeps every run
that finished. Analysis and reports only read from here.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.errors import BadInput
from layerbench.records import (
    CampaignListing,
    CampaignRecord,
    RunMetrics,
    RunRecord,
    ScheduledRun,
    StoredCampaign,
    StoredFacts,
    StoredInterval,
    StoredRun,
)
from layerbench.records.estimate import TimeEstimate
from layerbench.records.stored import RUN_METRIC_COLUMNS

SCHEMA_VERSION = 3  # 2: run_latency (the measured window's latency distribution); a v1 store gains it empty
# 3: estimates (the plan's time estimate of each campaign, made when it starts); older campaigns have none

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS campaigns (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  status TEXT NOT NULL,                -- running | finished | interrupted | failed | imported
  started_at REAL NOT NULL,
  finished_at REAL,
  definition TEXT NOT NULL,            -- the validated campaign as JSON (no secrets: they never enter it)
  source_path TEXT,
  output_dir TEXT NOT NULL,
  baseline TEXT NOT NULL,
  message TEXT
);
CREATE TABLE IF NOT EXISTS schedule (
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  round INTEGER NOT NULL,
  variant TEXT NOT NULL,
  workload TEXT NOT NULL,
  threads INTEGER NOT NULL,
  repetition INTEGER NOT NULL,
  PRIMARY KEY (campaign_id, idx)
);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  idx INTEGER,
  variant TEXT NOT NULL,
  workload TEXT NOT NULL,
  threads INTEGER,
  repetition INTEGER NOT NULL,
  round INTEGER,
  status TEXT NOT NULL,                -- ok | failed | replaced (a busy run, re-run at another idx)
  error TEXT,
  started_at REAL,
  finished_at REAL,
  duration REAL,
  transactions INTEGER, queries INTEGER, reads INTEGER, writes INTEGER, other INTEGER,
  tps REAL, qps REAL,
  lat_min_ms REAL, lat_avg_ms REAL, lat_max_ms REAL, lat_pct_ms REAL, percentile INTEGER,
  errors INTEGER, reconnects INTEGER,
  run_dir TEXT,
  details TEXT,                        -- JSON: reset method and time, environment, resources, warnings
  UNIQUE (campaign_id, idx)
);
CREATE TABLE IF NOT EXISTS intervals (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  time REAL NOT NULL, threads INTEGER, tps REAL, qps REAL, reads_ps REAL, writes_ps REAL, other_ps REAL,
  lat_pct_ms REAL, errors_ps REAL, reconnects_ps REAL,
  warmup INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS run_latency (  -- the measured window's distribution, from sysbench's histogram
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  percentile REAL NOT NULL,            -- 50, 90, 95, 99, 99.9; 100 is the exact maximum
  value_ms REAL NOT NULL,
  PRIMARY KEY (run_id, percentile)
);
CREATE TABLE IF NOT EXISTS estimates (  -- the plan's time estimate, made as the campaign started (records/estimate.py)
  campaign_id INTEGER PRIMARY KEY REFERENCES campaigns(id) ON DELETE CASCADE,
  estimate TEXT NOT NULL               -- JSON: parts (seconds), past_runs, basis
);
"""

class Store:
    """A SQLite file; open it with Store(path) and use it as a context manager or call close()."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA foreign_keys = ON")
        self.db.execute("PRAGMA journal_mode = WAL")
        self._migrate()

    @classmethod
    def read_only(cls, path: Path) -> Store | None:
        """An existing store opened read-only, never created nor migrated (validate reads past campaigns); None when
        the file is missing, not a store, or of another schema version than this layerbench's."""
        if not path.is_file():
            return None
        store = cls.__new__(cls)
        store.path = path
        try:
            store.db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        except sqlite3.Error:
            return None
        try:
            store.db.row_factory = sqlite3.Row
            row = store.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.Error:
            row = None
        if row is None or str(row[0]) != str(SCHEMA_VERSION):
            store.close()
            return None
        return store

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def _migrate(self) -> None:
        with self.db:
            self.db.executescript(SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise BadInput(f"{self.path}: schema version {row[0]} is newer than this layerbench "
                               f"({SCHEMA_VERSION}); upgrade layerbench or use another --db")
            elif int(row[0]) < SCHEMA_VERSION:  # the new tables came with SCHEMA; older runs have no rows there
                self.db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self.db:
            yield self.db

    # --- campaigns -----------------------------------------------------------------------------------------

    def create_campaign(self, definition: CampaignRecord, output_dir: str, source_path: str | None = None,
                        status: str = "running") -> int:
        with self.transaction() as db:
            return _insert_campaign(db, definition, output_dir, source_path, status)

    def import_campaign(self, definition: CampaignRecord, output_dir: str, source_path: str,
                        runs: list[RunRecord]) -> int:
        """A campaign with status `imported` and all its runs, in one transaction: all or nothing."""
        with self.transaction() as db:
            campaign_id = _insert_campaign(db, definition, output_dir, source_path, "imported")
            for run in runs:
                run.campaign_id = campaign_id
                _insert_run(db, run)
        return campaign_id

    def finish_campaign(self, campaign_id: int, status: str, message: str | None = None) -> None:
        with self.transaction() as db:
            db.execute("UPDATE campaigns SET status=?, finished_at=?, message=? WHERE id=?",
                       (status, time.time(), message, campaign_id))

    def set_campaign_status(self, campaign_id: int, status: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE campaigns SET status=?, finished_at=NULL, message=NULL WHERE id=?",
                       (status, campaign_id))

    def campaign(self, ref: str | int) -> StoredCampaign:
        """A campaign by id, by `latest`, or by name (the newest of that name)."""
        if str(ref) == "latest":
            row = self.db.execute("SELECT * FROM campaigns ORDER BY id DESC LIMIT 1").fetchone()
        elif str(ref).isdigit():
            row = self.db.execute("SELECT * FROM campaigns WHERE id=?", (int(ref),)).fetchone()
        else:
            row = self.db.execute("SELECT * FROM campaigns WHERE name=? ORDER BY id DESC LIMIT 1",
                                  (str(ref),)).fetchone()
        if row is None:
            raise BadInput(f"campaign {ref!r}: not in {self.path}; see `layerbench list`")
        return _campaign(row)

    def campaigns(self) -> list[CampaignListing]:
        rows = self.db.execute(
            "SELECT c.*, (SELECT COUNT(*) FROM runs r WHERE r.campaign_id=c.id AND r.status='ok') AS ok_runs,"
            " (SELECT COUNT(*) FROM runs r WHERE r.campaign_id=c.id AND r.status='failed') AS failed_runs,"
            " (SELECT COUNT(*) FROM schedule s WHERE s.campaign_id=c.id) AS planned_runs"
            " FROM campaigns c ORDER BY c.id")
        return [CampaignListing(_campaign(r), r["ok_runs"], r["failed_runs"], r["planned_runs"]) for r in rows]

    def save_estimate(self, campaign_id: int, estimate: TimeEstimate) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO estimates VALUES (?, ?)", (campaign_id, json.dumps(estimate.to_json())))

    def estimate(self, campaign_id: int) -> TimeEstimate | None:
        """The plan's estimate stored when the campaign started; None for a campaign stored before estimates."""
        row = self.db.execute("SELECT estimate FROM estimates WHERE campaign_id=?", (campaign_id,)).fetchone()
        return None if row is None else TimeEstimate.from_json(json.loads(row[0]))

    def last_estimated(self, name: str) -> StoredCampaign | None:
        """The newest finished campaign of this name that has a stored estimate (what `validate` compares)."""
        row = self.db.execute("SELECT c.* FROM campaigns c JOIN estimates e ON e.campaign_id=c.id WHERE c.name=? AND "
                              "c.finished_at IS NOT NULL ORDER BY c.id DESC LIMIT 1", (name,)).fetchone()
        return None if row is None else _campaign(row)

    # --- schedule ------------------------------------------------------------------------------------------

    def save_schedule(self, campaign_id: int, rows: list[tuple[int, int, str, str, int, int]]) -> None:
        with self.transaction() as db:
            db.executemany("INSERT INTO schedule VALUES (?, ?, ?, ?, ?, ?, ?)",
                           [(campaign_id, *row) for row in rows])

    def schedule(self, campaign_id: int) -> list[ScheduledRun]:
        return [ScheduledRun(r["idx"], r["round"], r["variant"], r["workload"], r["threads"], r["repetition"])
                for r in self.db.execute("SELECT * FROM schedule WHERE campaign_id=? ORDER BY idx", (campaign_id,))]

    def next_index(self, campaign_id: int) -> int:
        """The first free schedule index (where a replacement goes)."""
        row = self.db.execute("SELECT MAX(idx) FROM schedule WHERE campaign_id=?", (campaign_id,)).fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def replaced_count(self, campaign_id: int) -> int:
        """Runs of the campaign replaced by a rerun (busy: rerun), for the campaign's limit; `resume` reads it."""
        row = self.db.execute("SELECT COUNT(*) FROM runs WHERE campaign_id=? AND status='replaced'",
                              (campaign_id,)).fetchone()
        return int(row[0])

    def done_indexes(self, campaign_id: int) -> set[int]:
        rows = self.db.execute("SELECT idx FROM runs WHERE campaign_id=? AND idx IS NOT NULL", (campaign_id,))
        return {int(r[0]) for r in rows}

    # --- runs ----------------------------------------------------------------------------------------------

    def save_run(self, run: RunRecord, replacement: tuple[int, int, str, str, int, int] | None = None) -> int:
        """Write a run and its intervals in one transaction; with `replacement` (a schedule row), the run is a
        replaced one and the position that replaces it is added in the same transaction, so `resume` finds both
        or neither."""
        with self.transaction() as db:
            if replacement is not None:
                db.execute("INSERT INTO schedule VALUES (?, ?, ?, ?, ?, ?, ?)", (run.campaign_id, *replacement))
            return _insert_run(db, run)

    def runs(self, campaign_id: int) -> list[StoredRun]:
        """The campaign's runs in schedule order, each with its intervals, latency distribution and facts."""
        intervals, latency = self._intervals_by_run(campaign_id), self._latency_by_run(campaign_id)
        rows = self.db.execute("SELECT * FROM runs WHERE campaign_id=? ORDER BY COALESCE(idx, id), id", (campaign_id,))
        return [_run(r, tuple(intervals.get(r["id"], ())), latency.get(r["id"], {})) for r in rows]

    def _latency_by_run(self, campaign_id: int) -> dict[int, dict[float, float]]:
        """run id -> percentile -> ms, for the runs that recorded their distribution (none before schema 2)."""
        out: dict[int, dict[float, float]] = {}
        for row in self.db.execute("SELECT l.* FROM run_latency l JOIN runs r ON r.id=l.run_id WHERE r.campaign_id=?"
                                   " ORDER BY l.run_id, l.percentile", (campaign_id,)):
            out.setdefault(int(row["run_id"]), {})[float(row["percentile"])] = float(row["value_ms"])
        return out

    def _intervals_by_run(self, campaign_id: int) -> dict[int, list[StoredInterval]]:
        out: dict[int, list[StoredInterval]] = {}
        for row in self.db.execute(
            "SELECT i.run_id, i.time, i.tps, i.qps, i.warmup FROM intervals i JOIN runs r ON r.id=i.run_id"
            " WHERE r.campaign_id=? ORDER BY i.run_id, i.seq", (campaign_id,),
        ):
            out.setdefault(int(row[0]), []).append(StoredInterval(float(row[1]), float(row[2]), float(row[3]),
                                                                  bool(row[4])))
        return out


def _campaign(row: sqlite3.Row) -> StoredCampaign:
    definition = CampaignRecord.from_json(json.loads(row["definition"]))
    return StoredCampaign(int(row["id"]), row["name"], row["status"], row["started_at"], row["finished_at"],
                          definition, row["source_path"], row["output_dir"], row["baseline"], row["message"])


def _opt(value: object, kind: type) -> object:
    return None if value is None else kind(value)


def _run(row: sqlite3.Row, intervals: tuple[StoredInterval, ...], latency: dict[float, float]) -> StoredRun:
    metrics = RunMetrics(*(_opt(row[c], float) for c in ("duration",)), _opt(row["transactions"], int),
                         *(_opt(row[c], float) for c in ("queries", "tps", "qps", "lat_avg_ms", "lat_pct_ms")))
    facts = StoredFacts.from_json(json.loads(row["details"] or "{}"))
    return StoredRun(int(row["id"]), row["idx"], row["round"], row["variant"], row["workload"], row["threads"],
                     int(row["repetition"]), row["status"], row["error"], row["started_at"], metrics,
                     row["percentile"], facts, intervals, latency, row["finished_at"])


def _insert_campaign(db: sqlite3.Connection, definition: CampaignRecord, output_dir: str, source_path: str | None,
                     status: str) -> int:
    cur = db.execute(
        "INSERT INTO campaigns (name, status, started_at, definition, source_path, output_dir, baseline)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (definition.name, status, time.time(), json.dumps(definition.stored_json()), source_path, output_dir,
         definition.baseline),
    )
    return int(cur.lastrowid or 0)


def _insert_run(db: sqlite3.Connection, run: RunRecord) -> int:
    """A run and its intervals, inside the caller's transaction."""
    columns = ("campaign_id", "idx", "variant", "workload", "threads", "repetition", "round", "status",
               "error", "started_at", "finished_at", *RUN_METRIC_COLUMNS, "percentile", "run_dir", "details")
    values = [run.campaign_id, run.idx, run.variant, run.workload, run.threads, run.repetition, run.round,
              run.status, run.error, run.started_at, run.finished_at, *run.metric_values(),
              run.percentile, run.run_dir, json.dumps(run.facts.to_json(), default=str)]
    cur = db.execute(f"INSERT INTO runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", values)
    run_id = int(cur.lastrowid or 0)
    db.executemany("INSERT INTO intervals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
        (run_id, seq, i.time, i.threads, i.tps, i.qps, i.reads_ps, i.writes_ps, i.other_ps,
         i.latency_pct_ms, i.errors_ps, i.reconnects_ps, int(i.time <= run.warmup_seconds + 1e-6))
        for seq, i in enumerate(run.intervals)])
    db.executemany("INSERT INTO run_latency VALUES (?, ?, ?)",
                   [(run_id, float(p), float(v)) for p, v in run.latency.items()])
    return run_id


FinishedRun = tuple[int, str, str, float, str, StoredFacts]  # campaign, variant, workload, finished_at, status, facts


def past_finishes(path: Path) -> tuple[dict[int, CampaignRecord], list[FinishedRun]]:
    """Every campaign of a store and its ok and replaced (busy: rerun) runs in the order they finished, with their
    facts, read-only (the plan calibrates its time estimate on them); nothing when the file is missing or not a
    readable store."""
    if not path.is_file():
        return {}, []
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            campaigns = {int(i): CampaignRecord.from_json(json.loads(d))
                         for i, d in db.execute("SELECT id, definition FROM campaigns")}
            rows = db.execute("SELECT campaign_id, variant, workload, finished_at, status, details FROM runs WHERE "
                              "status IN ('ok', 'replaced') AND finished_at IS NOT NULL ORDER BY campaign_id, "
                              "finished_at").fetchall()
        finally:
            db.close()
        return campaigns, [(int(r[0]), str(r[1]), str(r[2]), float(r[3]), str(r[4]),
                            StoredFacts.from_json(json.loads(r[5] or "{}"))) for r in rows]
    except (sqlite3.Error, ValueError):
        return {}, []
