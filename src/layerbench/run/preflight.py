"""Preflight: everything `run` checks before its first server starts, creating nothing. `validate`,
`run --dry-run` and `run` itself call `preflight()`, so validate never says "valid" to what run refuses.

Order: the defaults that depend on where the harness stands (`resolve_defaults`: a kubernetes variant's `client`,
read from its cluster), checks of the campaign alone (a plan whose rounds can give no verdict: run/answerable.py;
tests, my.cnf option names, limits against this machine, disk space),
then every host the plan uses (the files its entry names, that it answers over SSH, sysbench and `client_cpus` where
sysbench runs), then each backend's own `check()` (programs, daemon, cluster, image), all read-only but for the
throw-away container in which a docker variant's named image shows it holds the server's programs
(backends/docker/images.py).
"""

from __future__ import annotations

import re
import shutil
from functools import lru_cache
from pathlib import Path

from layerbench.backends import Backend, make_backend
from layerbench.backends.variant_base import VariantBase
from layerbench.bounded_read import LUA_SCRIPT, read_user_file
from layerbench.campaign.models import Campaign, check_scripts_reach_clients
from layerbench.campaign.workload import Workload
from layerbench.errors import BadInput, PrerequisiteMissing, shown
from layerbench.hosts.inventory import Host, Hosts
from layerbench.hosts.machine import total_memory
from layerbench.hosts.placement import client_of, placement_of, server_of
from layerbench.hosts.procs import TimedOut, capture, require_program
from layerbench.pgbench.command import BIN as PGBENCH
from layerbench.run import answerable
from layerbench.run.diskspace import (
    BYTES_PER_ROW,
    DATADIR_OVERHEAD,
    check_disk_space,
    check_remote_disk_space,
    dataset_bytes,
    variant_dataset_bytes,
)
from layerbench.run.neighbour_checks import check_neighbours
from layerbench.run.paths import check_paths
from layerbench.server.flavour import detect_flavour
from layerbench.server.mycnf import HELP_ARGS, check_names_known, parse_server_options
from layerbench.server.postgresql import check_settings, check_values, known_settings
from layerbench.server.servers import check_wanted
from layerbench.server.settings import DEFAULT_BUFFER_POOL, SERVER_MEMORY_OVERHEAD
from layerbench.sysbench.custom_script import (
    builtin_facts,
    check_is_a_test,
    check_options_known,
    check_script,
    user_script_facts,
)
from layerbench.sysbench.options import pgsql_refusal
from layerbench.versions import version_on
from layerbench.vocabulary.sizes import byte_text

SYSBENCH_SHARE = Path("/usr/share/sysbench")
JOB_SYSBENCH = "1.0.20"  # Debian's sysbench package in layerbench's MariaDB image, the one a sysbench Job runs
JOB_TESTS = ("oltp_read_write", "oltp_read_only", "oltp_write_only", "oltp_point_select", "oltp_insert",
             "oltp_delete", "oltp_update_index", "oltp_update_non_index", "bulk_insert", "select_random_points",
             "select_random_ranges")  # its bundled tests (checked against /usr/share/sysbench where it is installed)
# Bundled tests whose dataset is not the one layerbench prepares, snapshots and restores before every run, refused
# with why (docs/validate.md). bulk_insert's prepare makes one empty table per thread of its own (id, k) schema.
NOT_RUN = {"bulk_insert": "its prepare makes empty tables of its own two-column schema, one per thread, and every "
                          "run starts from a restored dataset of tables x table_size OLTP rows; use oltp_insert for "
                          "an insert-heavy load"}


def resolve_defaults(campaign: Campaign) -> Campaign:
    """The campaign with each variant's defaults that depend on where the harness stands (a kubernetes variant's
    `client`: VariantBase.where_the_harness_stands), read once: `validate` plans, and `run` stores and runs, this
    copy. Idempotent: a resolved variant is not read again."""
    variants = [variant.where_the_harness_stands() for variant in campaign.variants]
    if all(new is old for new, old in zip(variants, campaign.variants, strict=True)):
        return campaign
    resolved = campaign.model_copy(update={"variants": variants})
    try:
        check_scripts_reach_clients(resolved)
    except ValueError as error:
        raise BadInput(f"{error} written (where the harness stands the default is not)") from None
    return resolved


def preflight(campaign: Campaign) -> list[tuple[VariantBase, Backend]]:
    """Check everything; returns each variant with its checked backend (run goes on with prepare()). The caller
    that goes on to plan or run passes the campaign of resolve_defaults, so that they see what was checked."""
    campaign = resolve_defaults(campaign)
    answerable.check(campaign)
    hosts = Hosts(campaign.hosts)
    needs = sysbench_here_for(campaign, hosts)
    if needs is not None:
        require_program("sysbench", f"install sysbench (scripts/setup does it): {needs} runs it on this machine")
    for workload in campaign.workloads:
        check_test(workload)
    for variant in campaign.variants:
        check_postgresql_workloads(campaign, variant)
        check_pgbench_workloads(campaign, variant, hosts)
    for variant in campaign.variants:
        local = hosts[server_of(variant)].is_local
        check_server_choice(variant, local)
        if not local:
            if variant.checks_options_here(local):
                check_option_names(variant)  # an image or a guest built here from this machine's package
            continue  # the rest is its backend's check(), on the server's own host over SSH (a host variant's
            # option names against that host's server: backends/host/remote.py)
        variant.check_server_here()  # first: a server that is not there or not known is refused
        check_machine_fits(variant)
        check_workload_pools(campaign, variant)
        check_data_in_memory(campaign, variant)
        if variant.checks_options_here(local):
            check_option_names(variant)  # the server of this host, or an image built from its package
    largest = max((dataset_bytes(w) for w in campaign.workloads), default=0)
    for variant in campaign.variants:
        variant.check_data_room(largest)  # a fixed-size volume of its own (a PVC) holds the whole dataset
    check_neighbours(campaign)  # their CPUs, room and targets (#32)
    check_hosts(campaign, hosts)
    backends = [(variant, make_backend(variant, hosts)) for variant in campaign.variants]
    for variant, backend in backends:
        variant.note_resets(frozenset(campaign.reset_for(variant, w).method for w in campaign.workloads))
        backend.check()
    # after the checks (every server host answers over SSH): each dataset's bytes where they will be written
    on_host = frozenset(v.name for v, b in backends if not hosts[server_of(v)].is_local and
                        b.datasets_on_host() is not None)
    check_disk_space(campaign, on_host)
    check_remote_disk_space(campaign, on_host)
    check_paths(campaign, hosts)  # every path to a server's port, as the runs will take it (run/paths.py)
    return backends


def check_hosts(campaign: Campaign, hosts: Hosts) -> None:
    """Every host the plan uses, as `run` reaches it: the files its entry names, the address a server here listens
    on, that each answers over SSH with its host key checked (a host that only runs sysbench too), then on each host
    that runs sysbench: sysbench itself and the variant's `client_cpus`."""
    used = sorted({name for v in campaign.variants for name in (server_of(v), client_of(v))})
    for name in used:
        hosts[name].check_files()
    for variant in campaign.variants:
        check_listen_address(campaign, variant, hosts[server_of(variant)])
    for name in used:
        hosts[name].check()
    has_sysbench: set[str] = set()
    for variant in campaign.variants:
        check_client_host(variant, hosts[client_of(variant)], has_sysbench)


def check_listen_address(campaign: Campaign, variant: VariantBase, host: Host) -> None:
    """A server here that listens on a `local: true` host's `address:` (for sysbench on another host) can bind
    there: the address is one of this machine's (a socket is bound to a free port and closed at once)."""
    import socket

    address = placement_of(campaign.hosts, variant).listen_address
    if not host.is_local or address.startswith("127.") or not variant.owns_server:
        return
    try:
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as probe:
            probe.bind((address, 0))
    except OSError as error:
        raise BadInput(f"hosts.{host.name}.address: {shown(address)} is not an address of this machine, so the "
                       f"server of variant {variant.name} cannot listen there ({error.strerror or error}); give one "
                       "of this machine's addresses (ip -brief address)") from None


def check_client_host(variant: VariantBase, host: Host, has_sysbench: set[str]) -> None:
    """sysbench on the variant's client host (this machine's is checked first of all) and its CPU list there."""
    from layerbench.hosts.machine import check_cpus

    where, cpus = f"variants.{variant.name}", variant.client_cpus
    if host.is_local:
        check_cpus(cpus, f"{where}.client_cpus")
        return
    if host.name not in has_sysbench:
        if version_on(host, ["sysbench"], name=f"sysbench on {host.name}", timeout=30).returncode != 0:
            raise PrerequisiteMissing(f"{where}.client_host: sysbench is not on host {host.name}; install it there "
                                      "(Debian: apt-get install sysbench)")
        has_sysbench.add(host.name)
    if cpus and host.run(["taskset", "-c", cpus, "true"], name=f"taskset on {host.name}", timeout=30).returncode:
        raise BadInput(f"{where}.client_cpus: {cpus!r} is not a CPU list of host {host.name}, where sysbench runs; "
                       "see nproc there")


def check_server_choice(variant: VariantBase, local: bool) -> None:
    """`server: {flavour: mysql}` runs on the host, docker, vm and kubernetes backends (on an ssh: host: host only)
    for now; a MariaDB `version` of a variant whose server is built from this machine's package is that package's
    (docs/servers.md)."""
    chosen, where = variant.server, f"variants.{variant.name}.server"
    if chosen.flavour == "postgresql" and not variant.runs_postgresql_on(local):
        raise BadInput(f"{where}.flavour: a postgresql {variant.backend} variant runs on this machine only, not yet "
                       "on an ssh: host; use backend: host there (it runs the host's PostgreSQL) or remove server_host")
    if chosen.flavour == "mysql" and not variant.runs_mysql(local):
        if not local:
            raise BadInput(f"{where}.flavour: a mysql {variant.backend} variant runs on this machine only, not yet on "
                           "an ssh: host; use backend: host there (it runs MySQL on an ssh: host) or remove "
                           "server_host")
        raise BadInput(f"{where}.flavour: mysql runs on the host, docker, vm and kubernetes backends, not yet on "
                       f"{variant.backend}; use backend: host, docker, vm or kubernetes for this variant")
    if chosen.flavour == "mariadb" and chosen.version and variant.builds_server_here:
        mariadbd = require_program("mariadbd", "install mariadb-server (scripts/setup does it)")
        check_wanted(chosen, detect_flavour(mariadbd, f"{where}.version"), where)


def check_postgresql_workloads(campaign: Campaign, variant: VariantBase) -> None:
    """What a PostgreSQL variant cannot run, in one line with the fix: an option of sysbench's mysql driver or of
    the scripts' MySQL branch (pgsql_refusal), and a workload's `buffer_pool:` (InnoDB's buffer pool)."""
    if variant.server.flavour != "postgresql":
        return
    for workload in campaign.workloads:
        for key in workload.options:
            refusal = pgsql_refusal(key)
            if refusal:
                raise BadInput(f"workloads.{workload.name}.options.{key}: {refusal} (variant {variant.name} runs "
                               "PostgreSQL); remove it or run this workload on MySQL-compatible variants only")
        if workload.buffer_pool and campaign.reset_for(variant, workload).method == "snapshot":
            raise BadInput(f"workloads.{workload.name}.buffer_pool: sizes InnoDB's buffer pool, which variant "
                           f"{variant.name} (PostgreSQL) has not; set its server.config.shared_buffers instead")


def check_pgbench_workloads(campaign: Campaign, variant: VariantBase, hosts: Hosts) -> None:
    """pgbench drives PostgreSQL only, from this machine (PostgreSQL runs on this machine only)."""
    for workload in campaign.workloads:
        if not workload.is_pgbench:
            continue
        where = f"workloads.{workload.name}.tool"
        if variant.server.flavour != "postgresql":
            flavour = variant.server.flavour or "mariadb"
            raise BadInput(f"{where}: pgbench drives PostgreSQL, and variant {variant.name} runs {flavour}; give every "
                           "variant server: {flavour: postgresql}, or run a sysbench test in this workload")
        if not hosts[client_of(variant)].is_local:
            raise BadInput(f"{where}: pgbench runs on this machine only, not yet on variant {variant.name}'s "
                           f"client_host {client_of(variant)}; remove client_host")


def sysbench_here_for(campaign: Campaign, hosts: Hosts) -> str | None:
    """What runs sysbench on this machine (None: nothing does): a Lua script of the user's (compiled here), a
    variant whose sysbench runs here (not a Job in a cluster), or a dataset snapshot prepared here (not made in a
    cluster by Jobs: VariantBase.snapshot_made_here). A campaign of pgbench workloads only runs no sysbench."""
    if all(w.is_pgbench for w in campaign.workloads):
        return None
    for workload in campaign.workloads:
        if workload.is_lua_path:
            return f"workloads.{workload.name}.test (a Lua script, compiled here by validate)"
    for variant in campaign.variants:
        kind = variant.client_kind
        if kind != "job" and (kind != "host" or hosts[client_of(variant)].is_local):
            return f"variants.{variant.name} (its sysbench)"
        if any(campaign.reset_for(variant, w).method == "snapshot" for w in campaign.workloads) and \
                variant.snapshot_made_here():
            return f"variants.{variant.name}.reset (its dataset snapshot is prepared here)"
    return None


def sysbench_here() -> bool:
    """sysbench runs on this machine: its program on the PATH and its tests' folder. Either alone is not enough (a
    laptop may keep Debian's package with its program moved off the PATH, as the isolated harness does)."""
    return SYSBENCH_SHARE.is_dir() and shutil.which("sysbench") is not None


def check_test(workload: Workload) -> None:
    """A built-in sysbench test by name, or a Lua script: a regular file of text of at most 1 MiB (bounded_read.py)
    that sysbench's LuaJIT compiles and loads. Without sysbench here (every run's sysbench is a Job's, from its
    image), a built-in test is checked by name against the tests the image's sysbench bundles (JOB_TESTS)."""
    where = f"workloads.{workload.name}.test"
    if workload.is_pgbench:  # one of pgbench's built-in scripts (campaign/workload.py checked the name)
        require_program(str(PGBENCH), "install postgresql-client-15 (scripts/setup does it): pgbench runs it")
        return
    if workload.test in NOT_RUN:
        raise BadInput(f"{where}: {workload.test} is not a test layerbench runs: {NOT_RUN[workload.test]}")
    if not workload.is_lua_path and not sysbench_here():
        if workload.test not in JOB_TESTS:
            raise BadInput(f"{where}: {shown(workload.test)} is not a test of the sysbench Job's image (sysbench "
                           f"{JOB_SYSBENCH}); use one of {', '.join(JOB_TESTS[:8])}, ...")
        return
    if not workload.is_lua_path:
        script = SYSBENCH_SHARE / f"{workload.test}.lua"
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", workload.test) or not script.is_file():
            raise BadInput(f"{where}: {shown(workload.test)} is not a sysbench test; use one of "
                           f"{', '.join(builtin_tests()[:8])}, ... or a path to a .lua script")
        facts = builtin_facts(script, where)  # a test, not a library; the options it takes
        check_is_a_test(workload, facts, builtin_tests)
        check_options_known(workload, facts.options)
        return
    path = Path(workload.test).expanduser()
    read_user_file(path, LUA_SCRIPT, where)  # a regular file of text under 1 MiB, before sysbench opens it
    problem = lua_compile_error(path)
    if problem:
        raise BadInput(f"{where}: {shown(workload.test)} is not a Lua script sysbench can load "
                       f"({shown(problem, 120, quote=False)}); fix the script or the path")
    check_script(workload)  # loads it: its modules, its declared options, the dataset flags it gets
    check_is_a_test(workload, user_script_facts(workload), builtin_tests)


def lua_compile_error(path: Path) -> str | None:
    """Compile (never run) the script with sysbench's own LuaJIT; the error text, or None when it loads."""
    from layerbench.sysbench.command import lua_string

    probe = f"local f, err = loadfile({lua_string(str(path.resolve()))})\nif not f then io.write('LUAERR ', err) end\n"
    try:
        done = capture(["sysbench", "/dev/stdin"], input_text=probe, timeout=30)
    except (OSError, TimedOut):
        return None  # sysbench itself is checked above; run reports a script error as the run's cause
    errors = [line.removeprefix("LUAERR ") for line in done.stdout.splitlines() if line.startswith("LUAERR ")]
    return errors[0] if errors else None


@lru_cache(maxsize=1)
def builtin_tests() -> list[str]:
    """The tests sysbench bundles (oltp_* first): its share folder's scripts that define event(), not the libraries
    they require (oltp_common.lua)."""
    found = sorted((p.stem for p in SYSBENCH_SHARE.glob("*.lua") if _is_test(p)),
                   key=lambda stem: (not stem.startswith("oltp_"), stem))
    return found or ["oltp_read_write", "oltp_read_only", "oltp_write_only"]


def _is_test(script: Path) -> bool:
    try:
        return builtin_facts(script, "test").is_test
    except BadInput:
        return False


def check_machine_fits(variant: VariantBase) -> None:
    """The server's CPU list names CPUs this process may use; memory limits fit in this machine's memory."""
    from layerbench.hosts.machine import check_cpus

    where = f"variants.{variant.name}"
    check_cpus(variant.cpus, f"{where}.cpus")  # client_cpus: on the host that runs sysbench (check_client_host)
    if not variant.memory_here:
        return  # a pod's memory is its node's: checked against the nodes' allocatable (its backend's check)
    limit, wanted, total = variant.memory_limit(), variant.memory_limit_bytes(), total_memory()
    if limit and wanted and total and wanted > total:
        field, memory = limit
        fix = "use less" if field != "qos" else ("set resources.memory or limits.memory, or use a smaller buffer "
                                                 "pool (the limit is derived from it)")
        raise BadInput(f"{where}.{field}: {shown(memory, quote=False)} is more than this machine's "
                       f"{byte_text(total, spec='.1f')} of memory; {fix}")
    pool, option = variant.server.buffer_pool_bytes(), variant.server.buffer_pool_option()
    if not limit and pool and option and total and pool > total:  # no limit to hold it: the machine's memory does
        raise BadInput(f"{where}.server.config.{option[0]}: {shown(option[1], quote=False)} is more than this "
                       f"machine's {byte_text(total, spec='.1f')} of memory; use a smaller buffer pool")


def check_workload_pools(campaign: Campaign, variant: VariantBase) -> None:
    """A workload's `buffer_pool:` (a share of the dataset, which overrides innodb_buffer_pool_size in a run that
    restores a snapshot) fits under the variant's memory limit."""
    from layerbench.run.execution import buffer_pool_bytes

    limit, size = variant.memory_limit(), variant.memory_limit_bytes()
    if limit is None or size is None:
        return
    for workload in campaign.workloads:
        if not workload.buffer_pool or campaign.reset_for(variant, workload).method != "snapshot":
            continue
        data = dataset_bytes(workload)
        pool = buffer_pool_bytes(workload.buffer_pool, data)
        if pool > size:
            raise BadInput(f"workloads.{workload.name}.buffer_pool: {workload.buffer_pool} of the dataset "
                           f"({byte_text(data)}) is a {byte_text(pool)} buffer pool, above "
                           f"variants.{variant.name}.{limit[0]} "
                           f"{shown(limit[1], quote=False)}; set {variant.name}'s memory to at least "
                           f"{variant.memory_text(pool + SERVER_MEMORY_OVERHEAD + variant.guest_memory)} or use a "
                           "smaller buffer_pool")


def check_data_in_memory(campaign: Campaign, variant: VariantBase) -> None:
    """A datadir held in memory (a Docker tmpfs): each workload's dataset (its estimated size) + the buffer pool +
    the server's overhead fit the variant's memory limit and this machine's memory, else one line naming the size."""
    where = variant.data_in_memory()
    if where is None:
        return
    limit, size, total = variant.memory_limit(), variant.memory_limit_bytes(), total_memory()
    for workload in campaign.workloads:
        if campaign.reset_for(variant, workload).method == "none":
            continue
        data, restores = variant_dataset_bytes(variant, workload), campaign.reset_for(variant, workload).method
        pool = run_pool_bytes(variant, workload, data, restores == "snapshot")
        need = data + pool + SERVER_MEMORY_OVERHEAD + variant.guest_memory
        held = (f"variants.{variant.name}: {where} holds workload {workload.name}'s dataset ({byte_text(data)}, "
                f"estimated) in memory beside the buffer pool and the server: {byte_text(need)}")
        if limit is not None and size is not None and need > size:
            raise BadInput(f"{held}, above {limit[0]} {shown(limit[1], quote=False)}; set {limit[0]} to at least "
                           f"{variant.memory_text(need)}, or use a storage on disk (volume)")
        if total and need > total:
            rows = max(0, (total - (need - data) - DATADIR_OVERHEAD) // BYTES_PER_ROW)
            raise BadInput(f"{held}, above this machine's {byte_text(total)} of memory; use a storage on disk "
                           f"(volume), or at most {rows:,} rows in all (tables x table_size)")


def run_pool_bytes(variant: VariantBase, workload: Workload, data: int, restores: bool) -> int:
    """The buffer pool a run of this variant gets: the workload's share of the data (in a run that restores a
    snapshot), else the variant's my.cnf, else the server's default."""
    from layerbench.run.execution import buffer_pool_bytes

    if workload.buffer_pool and restores:
        return buffer_pool_bytes(workload.buffer_pool, data)
    return variant.server.buffer_pool_bytes() or DEFAULT_BUFFER_POOL


def check_option_names(variant: VariantBase) -> None:
    """server.config names against the options the local server binary knows (`mariadbd --help --verbose`)."""
    if not variant.server.config:
        return
    command = variant.server_command_here()
    if command and variant.server.flavour == "postgresql":  # postgresql.conf settings: the server's own list
        where = f"variants.{variant.name}.server.config"
        check_settings(variant.server.config, known_settings(tuple(command)), where)  # names, with the closest ones
        check_values(tuple(command), variant.server.config, where)  # then the server's own reading of the file
        return
    if command:
        check_names_known(variant, server_options(command), Path(command[-1]).name)


@lru_cache(maxsize=4)
def server_options(command: tuple[str, ...]) -> frozenset[str]:
    try:
        done = capture([*command, *HELP_ARGS], timeout=30)
    except (OSError, TimedOut):
        return frozenset()
    return parse_server_options(done.stdout)
