"""Neighbours: load generators (stress-ng, fio, iperf3) run beside a run's server while it is measured, so a
study shows what a deployment layer protects from (docs/neighbours.md, issue #32). model.py is the campaign's
`neighbours:` entry (a leaf: backends' variant models use it), tools.py the tools' command lines and reports,
running.py the processes of one run; the checks before a campaign starts and the plan's words are
run/neighbour_checks.py and run/neighbour_plan.py, the stored record records/neighbours.py."""
