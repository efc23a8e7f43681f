"""A stored record's whole numbers read as the default when the JSON holds what no int can be (Infinity, NaN,
text), never a crash: json.loads reads `Infinity` as a float, and int() of it raises OverflowError."""

from __future__ import annotations

import json

import pytest

from layerbench.records.json import as_int, opt_int


@pytest.mark.parametrize("text", ["Infinity", "-Infinity", "NaN", '"x"', "[1]", "null", "true"])
def test_as_int_of_what_no_int_can_be_is_the_default(text: str) -> None:
    assert as_int(json.loads(text), 7) == 7


def test_as_int_keeps_numbers() -> None:
    assert as_int(3.0) == 3 and opt_int("12") == 12 and opt_int(None) is None
