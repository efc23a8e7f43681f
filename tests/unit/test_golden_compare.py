"""The golden comparison (tests/golden.py) forgives the last printed digits of a float, which another CPU's
SIMD summation changes, and nothing else: a real change of a number, a verdict, a key, a list or a type fails."""

from __future__ import annotations

import json

from golden import GOLDEN, csv_differences, differences, json_differences

# the value of the report that differed between two machines, and its neighbour in the last printed digits
MACHINE_A, MACHINE_B = 1.0671431398405563, 1.0671431398405566


def test_the_last_digits_of_a_float_are_machine_noise() -> None:
    assert MACHINE_A != MACHINE_B
    assert json_differences({"swing": MACHINE_A}, {"swing": MACHINE_B}) == []
    assert json_differences([0.0], [1e-17]) == []  # zero here, a rounding residue there
    assert csv_differences(f"tps\n{MACHINE_A}\n", f"tps\n{MACHINE_B}\n") == []


def test_a_real_change_of_a_number_is_caught() -> None:
    changed = MACHINE_A * (1 + 1e-7)  # far below what the markdown report prints, still a change
    assert json_differences({"swing": changed}, {"swing": MACHINE_A}) == [f"$.swing: {changed!r} != {MACHINE_A!r}"]
    assert csv_differences(f"tps\n{changed}\n", f"tps\n{MACHINE_A}\n") != []
    assert json_differences({"n": 7}, {"n": 6}) != []  # integers exactly


def test_everything_but_a_float_compares_exactly() -> None:
    assert json_differences({"verdict": "slower"}, {"verdict": "~"}) != []
    assert json_differences({"a": 1.0}, {"a": 1.0, "b": None}) != []
    assert json_differences([1.0, 2.0], [1.0]) != []
    assert json_differences({"ok": True}, {"ok": 1}) != []  # a boolean is not a number here
    assert json_differences({"p": None}, {"p": 0.0}) != []
    assert json_differences({"p": 1}, {"p": 1.0}) != []
    assert csv_differences("verdict\nslower\n", "verdict\n~\n") != []
    assert csv_differences("a,b\n1,2\n", "a,b\n1,2,3\n") != []


def test_markdown_compares_as_printed() -> None:
    assert differences("report.md", "| 1.07 |", "| 1.07 |") == []
    assert differences("report.md", "| 1.07 |", "| 1.08 |") != []


def test_a_golden_file_edited_in_one_number_fails_its_comparison() -> None:
    """On a real golden file: one number of the json export moved by one part in a million is found, with its
    path; the same file compared with itself is not."""
    text = (GOLDEN / "store_v2_report.json").read_text()
    doc = json.loads(text)
    doc["runs"][0]["values"]["tps"] *= 1 + 1e-6
    assert differences("store_v2_report.json", text, text) == []
    found = differences("store_v2_report.json", json.dumps(doc), text)
    assert len(found) == 1 and found[0].startswith("$.runs[0].values.tps:")
