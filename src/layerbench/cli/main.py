"""The entry point (`layerbench`, `python -m layerbench`): runs one command line, maps every error to a one-line
message and an exit code (errors.py: 2 for bad input, 130 interrupted), and exits with it."""

from __future__ import annotations

import signal
import sys
from typing import Any

import typer
from rich.text import Text

from layerbench.cli.app import app
from layerbench.cli.terminal import STATE, console, stop_on_signals
from layerbench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, LayerbenchError
from layerbench.hosts.procs import stop_all


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the command, then exits with its code. Once the command is over, a late signal (Ctrl-C
    just as a campaign finishes) is ignored, so it cannot turn a finished command into a kill status."""
    try:
        code = run_command_line(argv)
    except KeyboardInterrupt:  # a signal while an error was being reported
        code = EXIT_INTERRUPTED
    if argv is None:  # the process's own command line: it exits next (an in-process caller keeps its handlers)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
    if code == EXIT_INTERRUPTED:
        stop_all()  # a process whose own cleanup a signal cut short: none outlives the command
    sys.exit(code)


def run_command_line(argv: list[str] | None) -> int:
    """Runs one command line; maps every error to a one-line message and returns the exit code."""
    code, args = 0, []
    stop_on_signals()  # Ctrl-C (KeyboardInterrupt, then exit 130), SIGTERM and SIGHUP alike, from the first moment
    try:
        args = without_debug(list(sys.argv[1:] if argv is None else argv))
        result = app(args=args, prog_name="layerbench", standalone_mode=False)
        code = result if isinstance(result, int) else 0
    except LayerbenchError as error:
        if STATE["debug"]:
            console.print_exception()
        for line in getattr(error, "lines", None) or [str(error)]:  # several: one line each (run/paths.py)
            console.print(Text.assemble(("error: ", "red"), one_line(str(line))), highlight=False, soft_wrap=True)
        code = error.exit_code
    except typer.Exit as done:
        code = done.exit_code
    except typer.Abort:
        code = EXIT_INTERRUPTED
    except typer.TyperException as error:  # usage errors: unknown option, missing argument, ...
        show = getattr(error, "show", None)  # click's usage errors print the usage line and the help hint
        if show is not None:
            if hasattr(error, "ctx") and error.ctx is None:  # some parser errors come without their command
                error.ctx = command_context(args)
            show(file=sys.stderr)
        else:
            console.print(error.format_message(), highlight=False, markup=False)
        code = getattr(error, "exit_code", EXIT_BAD_INPUT) or EXIT_BAD_INPUT
    except KeyboardInterrupt:
        console.print("interrupted")
        code = EXIT_INTERRUPTED
    except Exception as error:  # a bug: one line for the user, the traceback with --debug
        if STATE["debug"]:
            console.print_exception()
        console.print(Text.assemble(("error: ", "red"), f"internal error: {type(error).__name__}: "
                                    f"{one_line(str(error))} (run with --debug for the traceback, and please "
                                    "report it)"), highlight=False, soft_wrap=True)
        code = 1
    return code


def without_debug(args: list[str]) -> list[str]:
    """`--debug` is accepted anywhere before `--`: it is taken out here and switches tracebacks on."""
    cut = args.index("--") if "--" in args else len(args)
    kept = [a for a in args[:cut] if a != "--debug"]
    STATE["debug"] = STATE["debug"] or len(kept) < cut
    return kept + args[cut:]


def command_context(args: list[str]) -> Any:
    """The context of the (sub)command that `args` names, for a usage line."""
    command = typer.main.get_command(app)
    ctx = command.make_context("layerbench", [], resilient_parsing=True)
    for word in args:
        found = getattr(command, "commands", {}).get(word)
        if found is None and not word.startswith("-"):
            break
        if found is not None:
            command, ctx = found, found.make_context(word, [], parent=ctx, resilient_parsing=True)
    return ctx


def one_line(text: str, limit: int = 1000) -> str:
    """An error message as one line (user text never adds lines), cut at limit characters."""
    text = " ".join(text.split("\n"))
    return text if len(text) <= limit else text[: limit - 1] + "…"

