"""Neighbours: load generators (stress-ng, fio, iperf3) run beside a run's server while it is measured, so a
study shows what a deployment layer protects from (docs/neighbours.md, issue #32). The campaign's models are in
campaign/neighbours.py, the stored record in records/neighbours.py."""
