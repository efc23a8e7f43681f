"""Error types and the exit codes they map to (0 ok, 1 failure, 2 bad input, 130 interrupted), and the statuses
of `--fail-on` (3 a regression, 4 inconclusive: analysis/gate.py, docs/pipelines.md)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_REGRESSION = 3  # compare / report --fail-on: a comparison matched a rule
EXIT_INCONCLUSIVE = 4  # compare / report --fail-on: none matched, but one could not be decided


class LayerbenchError(Exception):
    """Base class: a one-line message a user can act on, and the exit code it deserves."""

    exit_code = EXIT_FAILURE


class BadInput(LayerbenchError):
    """The user's input (campaign file, option, environment) is wrong; nothing was started."""

    exit_code = EXIT_BAD_INPUT


class PrerequisiteMissing(BadInput):
    """A program or service the campaign needs is not there (sysbench, mariadbd, dockerd, ...)."""


class RunFailed(LayerbenchError):
    """A run (server start, prepare, benchmark) failed; the cause is in the message."""

    exit_code = EXIT_FAILURE


class MachineBusy(RunFailed):
    """busy: fail: a run's measured window was busy, and the campaign asked to stop then."""


class Interrupted(LayerbenchError):
    """The user pressed Ctrl-C (or the process got SIGTERM)."""

    exit_code = EXIT_INTERRUPTED


def shown(value: object, limit: int = 60, quote: bool = True, keep_end: bool = False) -> str:
    """A user's value as it goes into a one-line message: control characters escaped, at most `limit`
    characters (longer values end in an ellipsis); a string is quoted unless `quote` is False."""
    try:
        text = value if isinstance(value, str) else repr(value)
    except ValueError:  # an int too long to print
        text = f"<a number of {value.bit_length() if isinstance(value, int) else '?'} bits>"
    if not text.isprintable():
        text = repr(text)[1:-1]
    if len(text) > limit:  # a path keeps its end: the file name
        text = "…" + text[-(limit - 1):] if keep_end else text[: limit - 1] + "…"
    return f"'{text}'" if quote and isinstance(value, str) else text
