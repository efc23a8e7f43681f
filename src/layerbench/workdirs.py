"""Where layerbench keeps machine-wide files: the cache (images, dataset snapshots) and the work folder
(datadirs of running servers, owner records). A leaf module: everything that needs these paths imports it."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("LAYERBENCH_CACHE_DIR", "/var/cache/layerbench"))


def work_root() -> Path:
    return Path(os.environ.get("LAYERBENCH_WORK_DIR", "/var/tmp/layerbench"))
