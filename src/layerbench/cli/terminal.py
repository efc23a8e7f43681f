"""What every command shares with the terminal: the two consoles (results on stdout, progress and errors on
stderr), whether `--debug` was given, and the signals a terminal sends (SIGTERM, SIGHUP) turned into Ctrl-C's."""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType
from typing import Any

from rich.console import Console

# markup=False: user text (file names, variant names, imported campaign names) is never read as Rich markup
console = Console(stderr=True, soft_wrap=True, markup=False)
out = Console(soft_wrap=True, markup=False)
STATE: dict[str, Any] = {"debug": False}


REDELIVER_AFTER = 0.02  # s: a finalizer is over long before


def on_interrupt(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C's KeyboardInterrupt, unless the signal landed inside a finalizer (`__del__`, run by the garbage
    collector wherever it happens to be): Python prints an exception raised there as "Exception ignored in ..."
    with its traceback and goes on, so the signal would be lost. There it is sent again a moment later instead."""
    if in_finalizer(frame):
        timer = threading.Timer(REDELIVER_AFTER, os.kill, (os.getpid(), signum))
        timer.daemon = True
        timer.start()
        return
    raise KeyboardInterrupt


def in_finalizer(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def stop_on_signals() -> None:
    """SIGINT, SIGTERM and SIGHUP (a closed terminal) stop a campaign alike: everything started is taken down."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_interrupt)
