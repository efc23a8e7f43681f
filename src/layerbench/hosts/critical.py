"""Critical sections: SIGINT, SIGTERM and SIGHUP wait until a block ends, so that a resource and the record
that lets layerbench remove it come into being together (and a cleanup, once begun, runs to its end).

A signal that arrives inside the block is delivered, to the handler that was in force before, when the block
ends; blocks nest. Off the main thread (where Python runs no signal handler) a block is a plain block.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        pending.append(signum)

    previous = {sig: signal.signal(sig, hold) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if pending:
            deliver(pending[0], previous[pending[0]])


def deliver(signum: int, handler: Any) -> None:
    """What would have happened had the signal not waited: the old handler runs (it may raise), the default
    action is taken, or the signal is ignored."""
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        os.kill(os.getpid(), signum)
