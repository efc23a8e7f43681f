"""my.cnf rendering: layerbench's fixed settings for a benchmark server plus the variant's overlay."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
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
# my_getopt's special prefixes (mysys/my_getopt.c special_opt_prefix), in its order; `plugin-` names a plugin's
# option too (sql_plugin.cc). A prefix is stripped only when the whole name matches no option.
SPECIAL_PREFIXES = ("skip", "disable", "enable", "maximum", "loose", "autoset", "plugin")
PREFIX_MATCHING = "getopt-prefix-matching"  # listed by a server that takes unambiguous prefixes (MariaDB's)


# Listed by `--help` but read only as the first arguments of a command line, before any option file: in a my.cnf
# (or after another option) mariadbd calls each an unknown variable, and so a prefix of one (`print-d`) too.
COMMAND_LINE_ONLY = frozenset({"print-defaults", "no-defaults", "defaults-file", "defaults-extra-file",
                               "defaults-group-suffix"})


def parse_server_options(text: str) -> frozenset[str]:
    """The option names of a server's `--verbose --help`, canonical (`-`, lower case), as it lists them, less those
    a my.cnf cannot set (COMMAND_LINE_ONLY)."""
    names = set()
    for line in text.splitlines():
        match = re.match(r"\s*(?:-\w, )?--([a-zA-Z0-9][a-zA-Z0-9_-]*)", line)
        if match:
            names.add(canonical_option(match.group(1)))
    return frozenset(names - COMMAND_LINE_ONLY)


@dataclass(frozen=True)
class OptionName:
    """How a server reads one my.cnf name: the options it names (one: that option; more: ambiguous, which the server
    refuses: mariadbd then disables the plugin whose option it is, InnoDB for innodb_*; none: unknown), and whether a
    `loose-` prefix makes an unknown name a warning only."""

    matches: tuple[str, ...]
    loose: bool = False


def _matching(name: str, known: frozenset[str], prefixes: bool) -> tuple[str, ...]:
    """my_getopt's findopt: the option itself when `name` is one, else (with prefix matching) every option that
    begins with it."""
    if name in known:
        return (name,)
    return tuple(sorted(o for o in known if o.startswith(name))) if prefixes and name else ()


def resolve_option(key: str, known: frozenset[str]) -> OptionName:
    """The options a my.cnf name resolves to, as my_getopt's handle_options resolves it: the whole name first; when
    it matches nothing, a special prefix (skip-, loose-, ...) is stripped and the rest looked up again, prefix after
    prefix. A server that does not list getopt-prefix-matching (MySQL 5.7 and later) takes whole names only."""
    prefixes = PREFIX_MATCHING in known
    name, loose = canonical_option(key), False
    found = _matching(name, known, prefixes)
    while not found:
        special = next((p for p in SPECIAL_PREFIXES if name.startswith(f"{p}-")), None)
        if special is None:
            break
        name, loose = name[len(special) + 1:], loose or special == "loose"
        found = _matching(name, known, prefixes)
    return OptionName(found, loose)


def check_names_known(variant: ConfiguredVariant, known: frozenset[str], server: str) -> None:
    """Every server.config name names one option of `known` (a server's --verbose --help): its whole name or, on a
    server that takes them, an unambiguous prefix; a `loose-` name the server does not know is accepted (it only
    warns). Nothing known: no check, the server itself refuses an unknown option at start."""
    if not known:
        return
    for key in variant.server.config:
        where = f"variants.{variant.name}.server.config.{key}: the server ({server})"
        resolved = resolve_option(key, known)
        if len(resolved.matches) > 1:
            shortest = sorted(resolved.matches, key=lambda o: (len(o), o))
            listed = ", ".join(shortest[:3]) + (", ..." if len(shortest) > 3 else "")
            raise BadInput(f"{where} reads this as the start of {len(resolved.matches)} options ({listed}) and "
                           "refuses it as ambiguous (mariadbd then disables the engine whose option it is); write "
                           "the option's full name")
        if not resolved.matches and not resolved.loose:
            raise BadInput(f"{where} has no such option; check its spelling ({server.split()[0]} --verbose --help "
                           "lists them)")
