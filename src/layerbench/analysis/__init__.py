"""Analysis: pure functions (aggregates, steady state, statistics, comparisons) over a campaign that loading.py,
the only module here that imports the store, loads once."""
