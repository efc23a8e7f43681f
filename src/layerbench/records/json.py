"""JSON values as the records read them: the type of a JSON document and checked conversions to plain
Python values (a stored field of the wrong type reads as its default, never as a crash of the report)."""

from __future__ import annotations

from typing import Any, TypeAlias

JSON: TypeAlias = Any  # a value json.loads can return: dict, list, str, int, float, bool or None
JSONObject: TypeAlias = dict[str, JSON]


def as_object(value: object) -> JSONObject:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[JSON]:
    return value if isinstance(value, list) else []


def as_str(value: object, default: str = "") -> str:
    return default if value is None else str(value)


def opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def as_float(value: object, default: float = 0.0) -> float:
    try:
        return default if value is None or isinstance(value, bool) else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer like 10**400, which json.loads reads
        return default


def opt_float(value: object) -> float | None:
    return None if value is None else as_float(value)


def as_int(value: object, default: int = 0) -> int:
    try:
        return default if value is None or isinstance(value, bool) else int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):  # OverflowError: Infinity, which json.loads reads as a float
        return default


def opt_int(value: object) -> int | None:
    return None if value is None else as_int(value)


def as_bool(value: object, default: bool = False) -> bool:
    return default if value is None else bool(value)
