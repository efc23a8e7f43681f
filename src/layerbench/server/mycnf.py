"""my.cnf rendering: layerbench's fixed settings for a benchmark server plus the variant's overlay."""

from __future__ import annotations

from collections.abc import Mapping

from layerbench.campaign import OWNED_BY_LAYERBENCH, ConfigValue, check_option_value
from layerbench.errors import BadInput

# Defaults every variant shares, chosen for benchmarking (documented in docs/campaign.md).
BENCHMARK_DEFAULTS: dict[str, ConfigValue] = {
    "skip-name-resolve": True,
    "max_connections": 1000,
    "max_prepared_stmt_count": 1048576,
}


def _canonical(key: str) -> str:
    return key.replace("_", "-").lower()


def check_overlay(config: Mapping[str, ConfigValue], where: str) -> None:
    for key in config:
        if _canonical(key) in OWNED_BY_LAYERBENCH:
            raise BadInput(f"{where}.server.config.{key}: set by layerbench for each run; remove it")


def merged_settings(
    owned: Mapping[str, ConfigValue], overlay: Mapping[str, ConfigValue],
    flavour_defaults: Mapping[str, ConfigValue] | None = None,
) -> dict[str, ConfigValue]:
    """Defaults (shared, then the server flavour's), then the variant's overlay, then the settings layerbench
    owns (which always win)."""
    result: dict[str, ConfigValue] = {}
    by_canonical: dict[str, str] = {}
    for source in (BENCHMARK_DEFAULTS, flavour_defaults or {}, overlay, owned):
        for key, value in source.items():
            old = by_canonical.pop(_canonical(key), None)
            if old is not None:
                result.pop(old)
            by_canonical[_canonical(key)] = key
            result[key] = value
    return result


def render_value(value: ConfigValue) -> str | None:
    if value is True or value is None:
        return None
    if value is False:
        return "OFF"
    return str(value)


def render_mycnf(settings: Mapping[str, ConfigValue]) -> str:
    """The [mysqld] section; a key or value that could add a line (a section, an !include) is refused."""
    lines = ["# written by layerbench", "[mysqld]"]
    for key, value in settings.items():
        try:
            check_option_value(str(key), value)
            check_option_value("key", str(key))
        except ValueError as error:
            raise BadInput(f"server.config.{error}") from None
        text = render_value(value)
        lines.append(key if text is None else f"{key} = {text}")
    return "\n".join(lines) + "\n"
