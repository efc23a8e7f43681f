"""Shared helpers for the benchmarks of layerbench itself: a private server, medians, a progress line, the quick
mode's arguments and a Markdown table."""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.backends.base import Endpoint, ServerSpec
from layerbench.backends.host.local import HostBackend
from layerbench.backends.host.variant import HostVariant
from layerbench.secrets import generate_password


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_main(main: Callable[[], None]) -> None:
    """A bench's main; Ctrl-C ends it, once its own cleanups have run, with one line and exit code 130."""
    try:
        main()
    except KeyboardInterrupt:
        say("interrupted: what the bench started is stopped and its folders removed")
        raise SystemExit(130) from None


def median(values: list[float]) -> float:
    return statistics.median(values)


QUICK_HELP = ("tiny sizes for CI (tests/integration/test_benches.py): the same code paths and the same table, "
              "numbers too small to mean anything; never uses Kubernetes or the lab hosts")


def parse_args(parser: argparse.ArgumentParser, quick: dict[str, object]) -> argparse.Namespace:
    """The command line, with `--quick` replacing the defaults by `quick`'s (an option given explicitly wins)."""
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP + ": " + quick_text(quick))
    args = parser.parse_args()
    if args.quick:
        parser.set_defaults(**quick)
        args = parser.parse_args()
    return args


def quick_text(quick: dict[str, object]) -> str:
    return ", ".join(f"--{key.replace('_', '-')} {value}" for key, value in quick.items()).replace("%", "%%")


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table: the header, its rule and one line per row."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


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
    backend = HostBackend(HostVariant(name=name, backend="host", cpus=cpus))
    try:  # Ctrl-C anywhere from here on still stops the server and removes its folder
        (root / "run").mkdir()
        (root / "private").mkdir(mode=0o700)
        spec = ServerSpec("bench", f"bench-{name}", root / "run",
                          root / "private", root / "work", password=generate_password(), snapshot=snapshot)
        yield backend.up(spec), backend
    finally:
        backend.down()
        shutil.rmtree(root, ignore_errors=True)
