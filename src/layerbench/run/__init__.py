"""Running a campaign: plan, preflight, schedule, orchestrator, one run's execution, cleanup."""
