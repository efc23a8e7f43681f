"""Where the store and the reports live: one rule, used by every command and shown in `--help`.

The store (one SQLite file holding every campaign) is the first of:
  1. `--db PATH` on the command line,
  2. the environment variable `LAYERBENCH_DB` (set to "" it is unset),
  3. `<output>/layerbench.db`, where `<output>` is the campaign's `output:` key when the command is given the
     campaign file (`run` and `validate` always; `resume`, `show` and `report` when their REF is the YAML
     file; `run --output` overrides it), else `results` (the default `output:`), relative to the current folder.
A campaign's reports go to `<output>/<id>-<name>/` (`report_folder`; `report --output` writes them elsewhere), its
name made safe for a folder by `slug`, as every run's folder name is.
Commands that only read (list, show, report, compare, validate, clean) never create a store.
"""

from __future__ import annotations

import re
from pathlib import Path

from layerbench.envvars import env_setting
from layerbench.errors import BadInput

DEFAULT_OUTPUT = "results"
STORE_NAME = "layerbench.db"
DB_ENV = "LAYERBENCH_DB"

RULE = ("store: --db PATH, else $LAYERBENCH_DB, else <output>/layerbench.db (<output>: the campaign's output: when "
        "a command is given the campaign file, as run and validate are and resume, show and report can be; else "
        "results/ in the current folder); reports: <output>/<id>-<name>/")


def store_path(db: Path | None = None, output: str | Path | None = None) -> Path:
    """The store a command uses, by the rule above."""
    if db is not None:
        return db
    from_env = env_setting(DB_ENV)
    if from_env:
        return Path(from_env)
    return Path(output if output is not None else DEFAULT_OUTPUT) / STORE_NAME


def existing_store(db: Path | None = None, output: str | Path | None = None) -> Path:
    """The store a read-only command uses; a missing one is bad input (it is never created as a side effect)."""
    path = store_path(db, output)
    if not path.is_file():
        raise BadInput(f"no store at {path} (nothing was run here yet); run a campaign first (`layerbench run "
                       f"campaign.yaml`), or point --db / {DB_ENV} at an existing layerbench.db")
    return path


def where(db: Path | None = None, output: str | Path | None = None) -> str:
    """How a command's store was chosen, for `list` and the end of `run`."""
    path = store_path(db, output)
    source = "--db" if db is not None else DB_ENV if env_setting(DB_ENV) else "default"
    return f"{path} ({source})"


def slug(text: str) -> str:
    """A name as one safe folder-name part: letters, digits, `_.-`; every other run of characters one `-`."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60]


def report_folder(output: str | Path, campaign_id: int, name: str) -> Path:
    """Where a campaign's reports (and its runs' folders) go, by the rule above: `<output>/<id>-<name>/`."""
    return Path(output) / f"{campaign_id}-{slug(name)}"
