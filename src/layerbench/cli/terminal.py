"""What every command shares with the terminal: the two consoles (results on stdout, progress and errors on
stderr), whether `--debug` was given, and the signals a terminal sends (SIGTERM, SIGHUP) turned into Ctrl-C's."""

from __future__ import annotations

import signal
from typing import Any

from rich.console import Console

# markup=False: user text (file names, variant names, imported campaign names) is never read as Rich markup
console = Console(stderr=True, soft_wrap=True, markup=False)
out = Console(soft_wrap=True, markup=False)
STATE: dict[str, Any] = {"debug": False}


def on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP (a closed terminal) stop a campaign as Ctrl-C does: everything started is taken down."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_sigterm)
