"""The command line: Typer commands, progress display, doctor; parse, call the core, map errors to exit codes."""
