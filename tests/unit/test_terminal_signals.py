"""A signal that lands inside a finalizer (`__del__`, run by the garbage collector wherever it happens to be) still
stops the command: Python would print the KeyboardInterrupt raised there as "Exception ignored" and go on."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from layerbench.cli.terminal import stop_on_signals


@pytest.fixture
def handlers() -> Iterator[None]:
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    stop_on_signals()
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class SignalledWhileCollected:
    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        os.kill(os.getpid(), self.signum)
        sum(range(1000))  # the handler runs here, inside __del__


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_inside_a_finalizer_is_delivered_after_it(handlers: None, signum: int,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(KeyboardInterrupt):
        obj = SignalledWhileCollected(signum)
        del obj  # the finalizer runs and must not swallow the signal
        for _ in range(100):  # the signal comes back a moment later; sleep() returns early for it
            time.sleep(0.1)
    assert "Exception ignored" not in capsys.readouterr().err


def test_a_signal_elsewhere_is_a_keyboard_interrupt_at_once(handlers: None) -> None:
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100):
            time.sleep(0.1)
