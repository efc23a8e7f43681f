"""my.cnf rendering: layerbench's fixed settings for a benchmark server plus the variant's overlay."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol

from layerbench.errors import BadInput
from layerbench.server.settings import (
    OWNED_BY_LAYERBENCH,
    ConfigValue,
    ServerSettings,
    canonical_option,
    check_option_value,
)


class ConfiguredVariant(Protocol):
    """What check_names_known reads of a variant (backends/variant_base.py VariantBase has both; backends/ import
    server/, never the other way, so server/ names the two fields it needs instead of the class)."""

    @property
    def name(self) -> str: ...

    @property
    def server(self) -> ServerSettings: ...

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


HELP_ARGS = ("--no-defaults", "--verbose", "--help")  # a server's option list, its defaults not read


def parse_server_options(text: str) -> frozenset[str]:
    """The option names of a server's `--verbose --help` (canonical; also without skip-/enable-)."""
    names = set()
    for line in text.splitlines():
        match = re.match(r"\s*(?:-\w, )?--([a-z0-9][a-z0-9_-]*)", line)
        if match:
            name = canonical_option(match.group(1))
            names.add(name)
            names.add(name.removeprefix("skip-"))
            names.add(name.removeprefix("enable-"))
    return frozenset(names)


def check_names_known(variant: ConfiguredVariant, known: frozenset[str], server: str) -> None:
    """Every server.config name is an option of `known` (a server's --verbose --help); nothing known: no check,
    the server itself refuses an unknown option at start."""
    if not known:
        return
    for key in variant.server.config:
        name = canonical_option(key)
        # mariadbd takes `loose-` options it does not know, and an unambiguous prefix of a name
        if not name.startswith("loose-") and not any(option.startswith(name) for option in known):
            raise BadInput(f"variants.{variant.name}.server.config.{key}: the server ({server}) has no such option; "
                           f"check its spelling ({server.split()[0]} --verbose --help lists them)")
