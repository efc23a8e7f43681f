"""Golden files of the reports: what a report prints is compared as printed (md, html: the text a reader sees,
numbers already rounded to the digits the report shows), and the machine-readable exports (json, csv), which
print every float at full precision (repr, 17 significant digits), compare their numbers with
math.isclose(rel_tol=1e-9, abs_tol=1e-12) and everything else exactly.

Why isclose, and why these tolerances: the statistics (NumPy means and sums, SciPy tests, bootstrap resamples)
run on the same seeded inputs everywhere, but NumPy's SIMD kernels add in a different order on another CPU, so
the last one or two of the 17 printed digits differ (`...563` vs `...566`: a relative 1e-16). Rounding to a
fixed number of significant digits would still fail whenever a value sits on a rounding boundary; a relative
tolerance has no boundary. 1e-9 is seven orders above that noise and orders below anything the printed reports
can show (a delta to 0.01 %, a p-value to 3 decimals), so a change of a statistic, an input or a formula is
still caught. abs_tol covers values that are zero on one machine and 1e-17 on another (the
delta of two identical series). Integers, booleans, strings, keys, the order of lists, and the type of every
value compare exactly.

Set LAYERBENCH_UPDATE_GOLDEN=1 to rewrite the expected files.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "data" / "golden"
REL_TOL = 1e-9
ABS_TOL = 1e-12


def close(actual: float, expected: float) -> bool:
    if math.isnan(actual) or math.isnan(expected):
        return math.isnan(actual) and math.isnan(expected)
    return math.isclose(actual, expected, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def json_differences(actual: Any, expected: Any, where: str = "$") -> list[str]:
    """Where two parsed JSON documents differ: floats beyond the tolerance, anything else at all."""
    if type(actual) is not type(expected):
        return [f"{where}: {actual!r} (a {type(actual).__name__}) != {expected!r}"]
    if isinstance(actual, float):
        return [] if close(actual, expected) else [f"{where}: {actual!r} != {expected!r}"]
    if isinstance(actual, dict):
        if actual.keys() != expected.keys():
            return [f"{where}: keys {sorted(actual.keys() ^ expected.keys())} on one side only"]
        return [d for key in actual for d in json_differences(actual[key], expected[key], f"{where}.{key}")]
    if isinstance(actual, list):
        if len(actual) != len(expected):
            return [f"{where}: {len(actual)} items != {len(expected)}"]
        pairs = enumerate(zip(actual, expected, strict=True))
        return [d for i, (a, e) in pairs for d in json_differences(a, e, f"{where}[{i}]")]
    return [] if actual == expected else [f"{where}: {actual!r} != {expected!r}"]


def number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def csv_differences(actual: str, expected: str) -> list[str]:
    """Where two CSV texts differ: cells that are numbers on both sides beyond the tolerance, others at all."""
    rows, want = list(csv.reader(io.StringIO(actual))), list(csv.reader(io.StringIO(expected)))
    if len(rows) != len(want):
        return [f"{len(rows)} rows != {len(want)}"]
    found = []
    for r, (row, wanted) in enumerate(zip(rows, want, strict=True)):
        if len(row) != len(wanted):
            found.append(f"row {r}: {len(row)} cells != {len(wanted)}")
            continue
        for c, (cell, good) in enumerate(zip(row, wanted, strict=True)):
            a, e = number(cell), number(good)
            same = close(a, e) if a is not None and e is not None else cell == good
            if not same:
                found.append(f"row {r}, column {c}: {cell!r} != {good!r}")
    return found


def differences(name: str, text: str, expected: str) -> list[str]:
    """How a report differs from its golden file, by the file's format (see the module's docstring)."""
    if name.endswith(".json"):
        return json_differences(json.loads(text), json.loads(expected))
    if name.endswith(".csv"):
        return csv_differences(text, expected)
    return [] if text == expected else ["the text differs"]


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("LAYERBENCH_UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(text)
    expected, hint = path.read_text(), "rerun with LAYERBENCH_UPDATE_GOLDEN=1 if intended"
    if not name.endswith((".json", ".csv")):
        assert text == expected, f"{name} changed; {hint}"  # as printed (pytest shows the diff)
        return
    found = differences(name, text, expected)
    assert not found, f"{name} changed ({'; '.join(found[:5])}); {hint}"
