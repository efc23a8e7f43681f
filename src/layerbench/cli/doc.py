"""docs/cli.md, generated from the command line itself (every command's `--help`), so the page cannot drift.

`python -m layerbench.cli.doc > docs/cli.md` (scripts/gen-cli-docs) writes it; a test checks it is up to date.
"""

from __future__ import annotations

import sys
from typing import Any

import typer.main

WIDTH = 100

INTRO = """# Command line reference

Generated from the command line itself by `scripts/gen-cli-docs` (a test fails when it is out of date): each
section is that command's `--help`. `--debug` is accepted anywhere on a command line; `--version` prints the
versions of layerbench and of the programs it drives. Exit codes: 0 ok, 1 a run or a campaign failed, 2 bad
input (a usage error prints the usage line), 130 interrupted.

For the first hour with layerbench see [quickstart.md](quickstart.md); every key of a campaign file is in
[campaign.md](campaign.md).
"""


def commands() -> list[tuple[str, Any, Any]]:
    """(command path, click command, its context) for the root and every command and sub-command, in order."""
    from layerbench.cli.app import app

    root = typer.main.get_command(app)
    root_ctx = root.make_context("layerbench", [], resilient_parsing=True, terminal_width=WIDTH,
                                 max_content_width=WIDTH)
    found = [("layerbench", root, root_ctx)]
    stack = [(root, root_ctx)]
    while stack:
        group, ctx = stack.pop(0)
        for name in getattr(group, "commands", {}):
            command = group.commands[name]
            child = command.make_context(name, [], parent=ctx, resilient_parsing=True)
            found.append((child.command_path, command, child))
            if getattr(command, "commands", None):
                stack.append((command, child))
    return found


def help_text(command: Any, ctx: Any) -> str:
    return str(command.get_help(ctx)).rstrip()


def render() -> str:
    parts = [INTRO]
    for path, command, ctx in commands():
        parts += [f"## `{path}`", "", "```", help_text(command, ctx), "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    sys.stdout.write(render())
