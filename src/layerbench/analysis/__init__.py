"""Analysis: pure functions over stored runs (aggregates, steady state, statistics, comparisons)."""
