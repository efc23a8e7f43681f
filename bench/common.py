"""Shared helpers for the benchmarks of layerbench itself: a private server, medians, a progress line."""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.backends.base import Endpoint, ServerSpec
from layerbench.backends.host import HostBackend
from layerbench.campaign import HostVariant
from layerbench.secrets import generate_password


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def median(values: list[float]) -> float:
    return statistics.median(values)


@contextmanager
def host_server(name: str, snapshot: Path | None = None, cpus: str | None = None) -> Iterator[Endpoint]:
    """A private mariadbd exactly as the host backend starts it; always stopped."""
    with host_server_backend(name, snapshot, cpus) as (endpoint, _):
        yield endpoint


@contextmanager
def host_server_backend(name: str, snapshot: Path | None = None,
                        cpus: str | None = None) -> Iterator[tuple[Endpoint, HostBackend]]:
    """host_server, and the backend that runs it (its components(), for the resource sampler)."""
    root = Path(tempfile.mkdtemp(prefix=f"lb-bench-{name}-"))
    (root / "run").mkdir()
    (root / "private").mkdir(mode=0o700)
    spec = ServerSpec("bench", f"bench-{name}", root / "run",
                      root / "private", root / "work", password=generate_password(), snapshot=snapshot)
    backend = HostBackend(HostVariant(name=name, backend="host", cpus=cpus))
    try:
        yield backend.up(spec), backend
    finally:
        backend.down()
        shutil.rmtree(root, ignore_errors=True)
