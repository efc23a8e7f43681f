"""The order of the variants within rounds (pure): balanced blocks, so that a run's place in its round lands on every
variant alike (docs/statistics.md, "The order within a round"). The schedule (run/schedule.py) uses it; the
simulation of blocks (blocks_simulation.py) measures what it does to the A/A rate."""

from __future__ import annotations

import random


def williams_rows(k: int) -> list[list[int]]:
    """A Williams design of k treatments: k rows when k is even, 2k (the rows and their mirrors) when k is odd; in
    it every treatment holds every place equally often and directly follows every other equally often."""
    first = [0]
    low, high = 1, k - 1
    while len(first) < k:
        first.append(low)
        low += 1
        if len(first) < k:
            first.append(high)
            high -= 1
    rows = [[(t + i) % k for t in first] for i in range(k)]
    return rows if k % 2 == 0 else rows + [row[::-1] for row in rows]


def balanced_orders(names: list[str], reps: int, rng: random.Random) -> list[list[str]]:
    """The order of `names` in each of `reps` rounds: Williams blocks, each with its labels and rows shuffled."""
    rows = williams_rows(len(names)) if names else [[]]
    orders: list[list[str]] = []
    while len(orders) < reps:
        labels = names[:]
        rng.shuffle(labels)
        block = rows[:]
        rng.shuffle(block)
        orders += [[labels[t] for t in row] for row in block]
    return orders[:reps]
