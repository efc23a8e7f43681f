"""pgbench, PostgreSQL's own load generator, as a workload's `tool:` beside sysbench: its command lines
(command.py) and the one parser of its output (output.py)."""
