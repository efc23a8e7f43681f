"""The Typer app: `layerbench --help`, the options every command takes (--debug, --version), and every command
and sub-command, registered here in the order `--help` lists them (campaigns.py, maintenance.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from layerbench.cli import campaigns, maintenance
from layerbench.cli.terminal import STATE, out

HELP = """What does each layer under your MySQL-compatible database cost? Variants vs a baseline, measured with
sysbench.

\b
Start here:
  layerbench init -o my.yaml             write a campaign to start from (--list: the published studies)
  layerbench validate my.yaml            the plan: what it creates, how many runs, how long
  layerbench run my.yaml                 run it, store every run, write its report
  layerbench list                        the campaigns in the store, and where the store is

\b
Where things live (every command uses this rule):
  store:   --db PATH, else $LAYERBENCH_DB, else <output>/layerbench.db, where <output> is the campaign's
           output: key (default results) when a command is given the campaign file (run and validate; resume,
           show and report when REF is the .yaml file; run --output overrides it), else results, relative to
           the current folder. Commands that only read never create a store.
  reports: <output>/<id>-<name>/ (report --output writes them elsewhere).

--debug (anywhere on the command line) shows the traceback of an error."""

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None, help=HELP)

def show_versions(value: bool) -> None:
    if value:
        from layerbench.versions import version_lines

        for line in version_lines():
            out.print(line, highlight=False, markup=False)
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="show the traceback of an error (accepted anywhere)")] = False,
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=show_versions,
        help="the versions of layerbench, sysbench, the server, the Docker and Kubernetes clients")] = False,
) -> None:
    STATE["debug"] = STATE["debug"] or debug


COMMANDS = (  # (name, function), in the order `layerbench --help` lists them; then the sub-commands' groups
    ("run", campaigns.run), ("resume", campaigns.resume), ("validate", campaigns.validate),
    ("list", campaigns.list_campaigns), ("show", campaigns.show), ("report", campaigns.report),
    ("clean", maintenance.clean), ("doctor", maintenance.doctor), ("import", campaigns.import_results),
    ("compare", campaigns.compare_cmd), ("init", campaigns.init),
)
for name, command in COMMANDS:
    app.command(name)(command)
app.add_typer(maintenance.cache_app, name="cache")
app.add_typer(maintenance.image_app, name="image")
app.add_typer(maintenance.server_app, name="server")
