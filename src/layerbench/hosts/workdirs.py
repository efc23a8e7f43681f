"""Where layerbench keeps machine-wide files: the cache (images, dataset snapshots) and the work folder
(datadirs of running servers, owner records), and the one measure of a folder's size (folder_size).

One directory can hold both dataset snapshots and the runs' working copies: `LAYERBENCH_DATA_DIR`. Put it on
the filesystem you want the data on; a snapshot and its copies on one XFS or btrfs filesystem are restored by a
copy-on-write clone (docs/datasets.md). The older, more specific variables still win when set:
`LAYERBENCH_DATASET_DIR` (snapshots), `LAYERBENCH_WORK_DIR` (work), `LAYERBENCH_CACHE_DIR` (images and, without
the others, snapshots). Each of them set to "" is unset (envvars.py). A leaf module (it imports only envvars):
everything that needs these paths imports it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from layerbench.envvars import env_setting

DEFAULT_CACHE = "/var/cache/layerbench"
DEFAULT_WORK = "/var/tmp/layerbench"


def cache_dir() -> Path:
    return Path(env_setting("LAYERBENCH_CACHE_DIR") or DEFAULT_CACHE)


def data_dir() -> Path | None:
    """The one directory for snapshots and working copies, when LAYERBENCH_DATA_DIR names it."""
    value = env_setting("LAYERBENCH_DATA_DIR")
    return Path(value) if value else None


def datasets_dir() -> Path:
    """Where dataset snapshots live: LAYERBENCH_DATASET_DIR, else <data dir>/datasets, else <cache>/datasets."""
    override = env_setting("LAYERBENCH_DATASET_DIR")
    if override:
        return Path(override)
    data = data_dir()
    return data / "datasets" if data else cache_dir() / "datasets"


def work_root() -> Path:
    """The work folder (datadirs of the runs, owner records): LAYERBENCH_WORK_DIR, else the data dir, else
    /var/tmp/layerbench."""
    override = env_setting("LAYERBENCH_WORK_DIR")
    if override:
        return Path(override)
    return data_dir() or Path(DEFAULT_WORK)


@contextlib.contextmanager
def folder_lock(folder: Path, key: str, waiting: str, say: Callable[[str], None]) -> Iterator[None]:
    """An exclusive flock on <folder>/.locks/<key> (one build of `key` at a time), released however its holder
    ends; `waiting` is said once when another process holds it."""
    locks = folder / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / key, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(waiting)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def folder_size(path: Path) -> int:
    """Bytes of the regular files under `path`. A running server or build may remove a file (general_log.CSV) or a
    whole folder (a finished build's) while it is listed: what is gone is not counted (os.walk skips a folder that
    vanished; Path.rglob raised FileNotFoundError out of its iterator)."""
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                st = os.lstat(os.path.join(folder, name))
                total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total
