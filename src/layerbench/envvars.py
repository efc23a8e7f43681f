"""The environment variables layerbench reads, read in one way: a variable set to the empty string is unset.

That is the shell's convention (`${VAR:-default}`): `LAYERBENCH_CACHE_DIR=` must mean "the default cache", not
a folder named "" (the current directory). Every `LAYERBENCH_*` variable is read through `env_setting`.
"""

from __future__ import annotations

import os


def env_setting(name: str) -> str | None:
    """The value of the environment variable `name`, or None when it is unset or empty."""
    return os.environ.get(name) or None
