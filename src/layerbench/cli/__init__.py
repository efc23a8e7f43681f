"""The command line: parse, call the core, map errors to exit codes. main.py is the entry (error mapping), app.py the
Typer app and its command table, campaigns.py and maintenance.py the commands, progress.py the progress display."""
