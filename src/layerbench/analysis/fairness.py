"""Fairness: every difference between a variant's environment and the baseline's that the campaign did not
ask for (a different server version, buffer pool, CPU count, ...), so a delta is never blamed on the
layer when something else changed too."""

from __future__ import annotations

import re
from dataclasses import dataclass

from layerbench.records import CampaignRecord, Environment, HostFacts, VariantRecord
from layerbench.records.neighbours import NeighbourRecords
from layerbench.records.run import FactMap

# Variables that differ between runs by construction and say nothing about fairness.
VOLATILE = re.compile(
    r"^(port|socket|datadir|pid_file|log_error|hostname|general_log_file|slow_query_log_file|log_slow_query_file|"
    r"server_uuid|server_uid|"
    r"gtid_.*|timestamp|report_.*|tmpdir|basedir|plugin_dir|log_bin_basename|log_bin_index|relay_log.*|"
    r"wsrep_.*|innodb_data_home_dir|innodb_log_group_home_dir|aria_log_dir_path|bind_address|init_file|"
    r"secure_file_priv|lc_messages_dir|character_sets_dir|system_time_zone|time_zone|pseudo_thread_id|"
    r"last_insert_id|insert_id|rand_seed[12]|identity|warning_count|error_count|max_binlog_.*_cache_size_.*|"
    r"data_directory|config_file|hba_file|ident_file|external_pid_file|unix_socket_directories|listen_addresses)$"
)  # the last line: PostgreSQL's (pg_settings)
# A variable the campaign sets for a variant also explains related ones the server derives from it.
DERIVED = {
    "innodb_buffer_pool_size": ("innodb_buffer_pool_chunk_size", "innodb_buffer_pool_instances"),
    "innodb_page_size": ("innodb_log_write_ahead_size",),
}
HOST_FACTS = ("kernel", "cpu_model", "cpu_count", "memory_bytes", "sysbench_version")


@dataclass(frozen=True)
class Difference:
    variant: str
    what: str  # e.g. "server variable innodb_flush_method"
    baseline_value: str
    variant_value: str

    asked = False  # a difference the campaign asked for (AskedDifference)

    def text(self, baseline: str) -> str:
        return (f"`{self.variant}` differs from `{baseline}` in {self.what}: {self.variant_value} vs "
                f"{self.baseline_value} (not asked by the campaign)")


@dataclass(frozen=True)
class AskedDifference(Difference):
    """A difference the campaign asked for (its neighbours), which the fairness section still names: the delta
    measures it together with the layer. Not counted in the warning about unasked differences."""

    asked = True

    def text(self, baseline: str) -> str:
        return (f"`{self.variant}` differs from `{baseline}` in {self.what}: {self.variant_value} vs "
                f"{self.baseline_value} (asked by the campaign: the delta measures them together with the layer)")


def canonical(name: str) -> str:
    return name.replace("-", "_").lower()


def asked_variables(config_keys: set[str]) -> set[str]:
    asked = {canonical(k) for k in config_keys}
    for key in list(asked):
        asked.update(DERIVED.get(key, ()))
    return asked


def variable_differences(variant: str, base: dict[str, str], other: dict[str, str],
                         asked: set[str]) -> list[Difference]:
    if "_error" in base or "_error" in other:  # not read (the harness could not log in): say so once
        return [Difference(variant, "server variables (not compared: not read)", base.get("_error", "read"),
                           other.get("_error", "read"))]
    out, only = [], {"base": [], "other": []}
    for key in sorted(set(base) | set(other)):
        if VOLATILE.match(key) or key in asked or key.startswith("_"):
            continue
        if (key in base) != (key in other):  # another version's variable: named in one line below
            only["base" if key in base else "other"].append(key)
            continue
        if base[key] != other[key]:
            out.append(Difference(variant, f"server variable {key}", base[key], other[key]))
    if only["base"] or only["other"]:
        count = len(only["base"]) + len(only["other"])
        out.append(Difference(variant, f"server variables that only one of the two servers has ({count}; another "
                                        "version's)", names_text(only["base"]), names_text(only["other"])))
    return out


def names_text(names: list[str], shown_at_most: int = 8) -> str:
    if not names:
        return "none"
    more = f", ... ({len(names)} in all)" if len(names) > shown_at_most else ""
    return ", ".join(names[:shown_at_most]) + more


# Defaults MariaDB and MySQL ship differently that change what a benchmark measures (docs/servers.md): compared
# by name, with what a reader needs to know, when a variant's server is of another flavour than the baseline's.
FLAVOUR_DEFAULTS = (
    ("log_bin", "binary log (log_bin)"),
    ("sync_binlog", "binary log sync (sync_binlog)"),
    ("innodb_doublewrite", "doublewrite buffer (innodb_doublewrite)"),
    ("_redo_log_bytes", "redo log size (innodb_redo_log_capacity, or innodb_log_file_size x files)"),
    ("innodb_flush_method", "innodb_flush_method"),
    ("thread_handling", "thread handling (thread_handling)"),
    ("_tls", "TLS offered by the server (have_ssl / tls_version; sysbench connects without TLS: --mysql-ssl=off)"),
    ("performance_schema", "instrumentation (performance_schema)"),
    ("innodb_io_capacity", "background flushing rate (innodb_io_capacity)"),
    ("innodb_log_buffer_size", "redo log buffer (innodb_log_buffer_size)"),
)


def server_flavour(variables: dict[str, str]) -> str | None:
    """mariadb, percona or mysql from how the server names itself (`version`, and `version_comment`, where only
    Percona Server says what it is: `8.0.36-28`, `Percona Server (GPL), Release 28`), postgresql for a server whose
    variables are pg_settings (server_version_num); None when the variables were not read."""
    version = variables.get("version")
    if not version:
        return None
    if "server_version_num" in variables:
        return "postgresql"
    text = f"{version} {variables.get('version_comment', '')}".lower()
    if "mariadb" in text:
        return "mariadb"
    return "percona" if "percona" in text else "mysql"


def derived_value(key: str, variables: dict[str, str]) -> str:
    """A variable, or one of the comparable values two flavours name differently."""
    if key == "_redo_log_bytes":
        if "innodb_redo_log_capacity" in variables:
            return variables["innodb_redo_log_capacity"]
        size, files = variables.get("innodb_log_file_size"), variables.get("innodb_log_files_in_group", "1")
        return str(int(size) * int(files)) if size and size.isdigit() and files.isdigit() else "(absent)"
    if key == "_tls":
        have = variables.get("have_ssl")
        if have is not None and have.upper() != "YES":
            return f"off (have_ssl={have})"
        return f"on ({variables.get('tls_version', '?')})" if variables.get("tls_version") or have else "off"
    return variables.get(key, "(absent)")


def flavour_differences(variant: str, base: dict[str, str], other: dict[str, str],
                        asked: set[str]) -> list[Difference]:
    """Two servers of different flavours: the flavour itself, then the defaults of FLAVOUR_DEFAULTS that differ
    (their other variables are not compared one by one: hundreds differ by name alone)."""
    out = [Difference(variant, "server flavour and version", f"{server_flavour(base)} {base.get('version')}",
                      f"{server_flavour(other)} {other.get('version')}")]
    for key, what in FLAVOUR_DEFAULTS:
        if key in asked or (key == "_redo_log_bytes" and asked & {"innodb_redo_log_capacity", "innodb_log_file_size"}):
            continue
        if key == "sync_binlog" and base.get("log_bin") == other.get("log_bin") == "OFF":
            continue  # no binary log on either side: its sync setting writes nothing
        a, b = derived_value(key, base), derived_value(key, other)
        if a != b:
            out.append(Difference(variant, f"{what}, a flavour default", a, b))
    return out


# What decides durability and memory in each family, compared across families (MariaDB or MySQL against
# PostgreSQL): (what, MySQL's variables, PostgreSQL's settings). Their names differ, so each row is named whatever
# the values, unless the campaign sets one of them on either side.
FAMILY_SETTINGS = (
    ("commit durability", ("innodb_flush_log_at_trx_commit", "sync_binlog"), ("synchronous_commit", "fsync")),
    ("torn-page protection", ("innodb_doublewrite",), ("full_page_writes",)),
    ("page cache of the server", ("innodb_buffer_pool_size",), ("shared_buffers",)),
    ("change log", ("log_bin",), ("wal_level",)),
    ("its size before a flush", ("_redo_log_bytes",), ("max_wal_size",)),
)
PG_BLOCK_SETTINGS = {"shared_buffers"}  # pg_settings gives them in pages (block_size bytes): shown in bytes
PG_MB_SETTINGS = {"max_wal_size"}  # in MB


def family_value(names: tuple[str, ...], variables: dict[str, str], postgresql: bool) -> str:
    """`name=value` of each setting of a FAMILY_SETTINGS row, as the server reported it (sizes in bytes)."""
    parts = []
    for name in names:
        value = derived_value(name, variables)
        if postgresql and value.isdigit() and name in PG_BLOCK_SETTINGS | PG_MB_SETTINGS:
            block = variables.get("block_size", "8192")
            value = str(int(value) * (int(block) if name in PG_BLOCK_SETTINGS and block.isdigit() else 1 << 20))
        parts.append(f"{name.lstrip('_')}={value}")
    return ", ".join(parts)


def family_differences(variant: str, base: dict[str, str], other: dict[str, str],
                       asked: set[str]) -> list[Difference]:
    """A MariaDB or MySQL server against a PostgreSQL server: the flavour itself, then what decides durability and
    memory on each side (FAMILY_SETTINGS), named with the values each server reported."""
    out = [Difference(variant, "server flavour and version", f"{server_flavour(base)} {base.get('version')}",
                      f"{server_flavour(other)} {other.get('version')}")]
    pg_base, pg_other = server_flavour(base) == "postgresql", server_flavour(other) == "postgresql"
    for what, mysql, postgresql in FAMILY_SETTINGS:
        names = {*mysql, *postgresql}
        if "_redo_log_bytes" in names:
            names |= {"innodb_redo_log_capacity", "innodb_log_file_size"}
        if asked & names:  # the campaign sets it on one side: intentional
            continue
        a = family_value(postgresql if pg_base else mysql, base, pg_base)
        b = family_value(postgresql if pg_other else mysql, other, pg_other)
        out.append(Difference(variant, f"{what} ({' / '.join(n.lstrip('_') for n in (*mysql, *postgresql))}), a "
                              "flavour default", a, b))
    return out


def host_differences(variant: str, base: HostFacts, other: HostFacts) -> list[Difference]:
    return [Difference(variant, f"machine fact {k}", str(getattr(base, k)), str(getattr(other, k)))
            for k in HOST_FACTS if getattr(base, k) != getattr(other, k)]


CLIENT_HOST_FACTS = ("kernel", "cpus", "cpu_model", "memory_kb", "sysbench_version")
SERVER_HOST_FACTS = ("kernel", "cpus", "cpu_model", "memory_kb", "server_version")


def placed_host_differences(variant: str, base: FactMap, other: FactMap, role: str = "client",
                            keys: tuple[str, ...] = CLIENT_HOST_FACTS) -> list[Difference]:
    """The machine sysbench (or the server) ran on, in campaigns with `hosts:`: another kernel, CPU, sysbench or
    server build there is a difference."""
    if not base or not other:
        return []
    return [Difference(variant, f"{role} host fact {k}", str(base.get(k)), str(other.get(k)))
            for k in keys if base.get(k) != other.get(k)]


def fairness_differences(baseline: str, environments: dict[str, Environment],
                         asked: dict[str, set[str]]) -> list[Difference]:
    """Differences of each variant from the baseline; `asked[v]` are the config keys either side set."""
    base = environments.get(baseline)
    if base is None:
        return []
    out: list[Difference] = []
    for variant, env in environments.items():
        if variant == baseline:
            continue
        keys = asked_variables(asked.get(variant, set()) | asked.get(baseline, set()))
        flavours = server_flavour(base.server_variables), server_flavour(env.server_variables)
        if None not in flavours and flavours[0] != flavours[1] and "postgresql" in flavours:
            out += family_differences(variant, base.server_variables, env.server_variables, keys)
        elif None not in flavours and flavours[0] != flavours[1]:
            out += flavour_differences(variant, base.server_variables, env.server_variables, keys)
        else:
            out += variable_differences(variant, base.server_variables, env.server_variables, keys)
        out += host_differences(variant, base.host, env.host)
        out += placed_host_differences(variant, base.client_host, env.client_host)
        out += placed_host_differences(variant, base.server_host, env.server_host, "server", SERVER_HOST_FACTS)
    return out


def cpu_list_size(cpus: str) -> int:
    """How many CPUs a list like "0-3,6" names."""
    count = 0
    for part in cpus.split(","):
        low, _, high = part.strip().partition("-")
        count += int(high or low) - int(low) + 1
    return count


def baseline_size(variant: VariantRecord, env: Environment | None) -> tuple[int | None, str | None]:
    """The baseline's CPU count (its pinning, else the machine's) and memory limit (None: the machine's)."""
    if variant.own_size:
        return variant.vcpus, variant.vm_memory
    count = cpu_list_size(variant.cpus) if variant.cpus else (env.host.cpu_count if env else None)
    return count, variant.memory_limit


def vm_size_differences(baseline: str, definition: CampaignRecord,
                        environments: dict[str, Environment]) -> list[Difference]:
    """A VM whose vCPUs or memory differ from the baseline's CPUs / memory limit: the classic study matches
    them (it disables host CPUs to the VM's count), or the delta measures the size, not the layer."""
    variants = {v.name: v for v in definition.variants}
    if baseline not in variants:
        return []
    cpus, memory = baseline_size(variants[baseline], environments.get(baseline))
    out = []
    for name, variant in variants.items():
        if name == baseline or not variant.own_size:
            continue
        vcpus = variant.vcpus
        if cpus is not None and vcpus != cpus:
            out.append(Difference(name, "CPUs (VM vCPUs vs the baseline's CPUs; pin the baseline with cpus)",
                                  str(cpus), str(vcpus)))
        vm_memory = variant.vm_memory
        if memory is not None and vm_memory.upper().rstrip("B") != str(memory).upper().rstrip("B"):
            out.append(Difference(name, "memory (VM vs the baseline's limit)", str(memory), vm_memory))
    return out



def neighbour_words(records: NeighbourRecords) -> set[str]:
    """One run's neighbours, each in words: name (kind, intensity, placement)."""
    return {f"{n.name} ({n.kind}, {n.intensity}, {n.placement})" for n in records.neighbours}


def neighbour_differences(baseline: str, recorded: dict[str, set[str]]) -> list[Difference]:
    """Each variant whose completed runs had other neighbours than the baseline's (`recorded`: variant -> the
    neighbour_words of its runs; docs/neighbours.md). The campaign asked for them, but the delta then is the
    layer's and the neighbours' together, which the reader must know."""
    if baseline not in recorded:
        return []
    base = "; ".join(sorted(recorded[baseline])) or "none"
    out = []
    for variant, words in recorded.items():
        mine = "; ".join(sorted(words)) or "none"
        if variant != baseline and mine != base:
            out.append(AskedDifference(variant, "neighbours (load started beside the server)", base, mine))
    return out


# How a run got its data, coarsely: what the pages under the measurement are (docs/datasets.md "How a run gets its
# copy"). Matched in order against the recorded restore method; anything else restored is a copy.
RESET_KINDS = (
    ("clone", "clone", "a reflink clone: its blocks shared with the snapshot until a page's first write copies it"),
    ("overlay", "overlay", "a copy-on-write overlay of a base image: a page's first write copies its cluster"),
    ("volumesnapshot", "storage snapshot", "a copy-on-write snapshot of the storage driver"),
)
COPY_WORDS = "a copy: the snapshot's bytes in blocks of its own, written before the server starts"
RESET_WORDS = {
    "reprepare": "re-prepared: freshly written tables (different page fill and cache state than the snapshot's)",
    "none": "the server's own tables, left as the previous run left them",
}


def reset_kind(method: str, restore_method: str | None) -> tuple[str, str]:
    """(kind, what it means) of one run's reset: re-prepared, untouched, or restored by clone, overlay, ... copy."""
    if method != "snapshot":
        return method, RESET_WORDS.get(method, method)
    text = (restore_method or "").lower()
    return next(((kind, words) for word, kind, words in RESET_KINDS if word in text), ("copy", COPY_WORDS))


def reset_differences(baseline: str, recorded: dict[str, tuple[dict[str, str], bool]]) -> list[Difference]:
    """One line per variant whose runs got their data another way than the baseline's (`recorded`: variant -> (kind
    -> its words, whether the variant's own `reset:` chose it)): a clone, a copy and a re-prepared table are not the
    same pages, so the delta may measure the reset too."""
    if baseline not in recorded:
        return []
    base = "; ".join(f"{k} ({w})" for k, w in sorted(recorded[baseline][0].items())) or "none"
    out: list[Difference] = []
    for variant, (kinds, asked) in recorded.items():
        if variant == baseline or set(kinds) == set(recorded[baseline][0]):
            continue
        mine = "; ".join(f"{k} ({w})" for k, w in sorted(kinds.items())) or "none"
        kind = AskedDifference if asked or recorded[baseline][1] else Difference
        out.append(kind(variant, "how each run's data was reset", base, mine))
    return out
