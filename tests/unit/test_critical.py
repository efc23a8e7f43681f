"""Critical sections (hosts/critical.py): a signal that arrives inside one reaches the handler that was in force
only when the block ends (nested blocks: the outermost), and the handlers are restored; an ignored signal stays
ignored. Real signals, sent to this process."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from layerbench.hosts.critical import signals_deferred


@pytest.fixture
def hup_handler() -> Iterator[list[int]]:
    """A SIGHUP handler of the test's own that records what it received; the old one back afterwards."""
    received: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGHUP, handler)
    try:
        yield received
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_a_signal_inside_the_block_is_delivered_when_it_ends(hup_handler: list[int]) -> None:
    before = signal.getsignal(signal.SIGHUP)
    with signals_deferred():
        os.kill(os.getpid(), signal.SIGHUP)
        assert hup_handler == []
        assert signal.getsignal(signal.SIGHUP) is not before
    assert hup_handler == [signal.SIGHUP]
    assert signal.getsignal(signal.SIGHUP) is before


def test_nested_blocks_deliver_at_the_outermost_end(hup_handler: list[int]) -> None:
    with signals_deferred():
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGHUP)
        assert hup_handler == []
    assert hup_handler == [signal.SIGHUP]


def test_an_ignored_signal_stays_ignored() -> None:
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGHUP)
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_off_the_main_thread_a_block_is_a_plain_block() -> None:
    handlers: list[Any] = []

    def inside() -> None:
        with signals_deferred():
            handlers.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=inside)
    thread.start()
    thread.join()
    assert handlers == [before]
