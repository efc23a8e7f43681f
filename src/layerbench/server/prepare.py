"""Building a dataset snapshot: `sysbench prepare` into a private server on this host (private.py), verified once
by CHECKSUM TABLE, shut down cleanly, and given its file manifest. An interrupted build is resumed: the tables it
finished are kept, the others prepared (built-in tests; a script of the user's is prepared again from the start).

Also the prepare of `reset: reprepare` (prepare_tables) and the progress lines both print.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layerbench.endpoint import Endpoint
from layerbench.errors import RunFailed
from layerbench.hosts import owners
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.workdirs import datasets_dir, folder_lock
from layerbench.pgbench.dataset import expected_rows, initialize
from layerbench.secrets import generate_password, write_private
from layerbench.server.datadir import query
from layerbench.server.flavour import Flavour
from layerbench.server.manifest import EXCLUDED, build_manifest, write_manifest
from layerbench.server.private import PrivateServer
from layerbench.server.servers import ChosenServer, ServerChoice, resolve_server, server_fields
from layerbench.server.snapshot import Snapshot, dataset_key, find_snapshot
from layerbench.server.spec import ServerSpec
from layerbench.server.tables import base_tables, complete_tables, quoted, row_counts, table_checksums
from layerbench.sysbench.client import ClientRunner, HostClient
from layerbench.sysbench.command import cleanup_argv, config_file_text, lua_string, prepare_argv, test_script

if TYPE_CHECKING:  # type hints only: campaign/ and backends/ import server/
    from layerbench.campaign.workload import Workload

Say = Callable[[str], None]
RESUME_MIN_BYTES = 64 << 20  # a build interrupted with less table data than this starts over (cheaper than keeping)


def table_facts(endpoint: Endpoint, workload: Workload) -> dict[str, Any]:
    """A freshly prepared dataset's row counts (checked against the workload) and CHECKSUM TABLE of every table,
    taken once where it is built (here, or on the ssh: host whose server prepared it)."""
    counts = row_counts(endpoint, workload)
    if workload.is_pgbench:
        if counts != expected_rows(workload):
            raise RunFailed(f"pgbench -i left {counts}; expected {expected_rows(workload)}")
    elif wrong := {t: n for t, n in counts.items() if n != workload.table_size and not workload.is_lua_path}:
        raise RunFailed(f"prepare left {wrong}; expected {workload.table_size} rows per table")
    return {"rows": counts, "checksums": table_checksums(endpoint, list(counts)), "checksums_complete": True}


class PrepareProgress:
    """Turns sysbench prepare's output into "k of n tables, rows/s" messages: a table is done when its secondary
    index is built (the last step per table). At most about ten messages, whatever the table count."""

    DONE = re.compile(r"^Creating a secondary index on '(\w+)'")

    def __init__(self, tables: int, say: Say, clock: Callable[[], float] = time.monotonic,
                 table_size: int = 0, already: int = 0) -> None:
        self.tables, self.say, self.clock, self.table_size = tables, say, clock, table_size
        self.done = self.already = already
        self.step = max(1, math.ceil(tables / 10))
        self.started = clock()

    def __call__(self, line: str) -> None:
        if not self.DONE.match(line.strip()):
            return
        self.done += 1
        if self.done % self.step and self.done != self.tables:
            return
        elapsed = max(self.clock() - self.started, 1e-9)
        new = self.done - self.already
        left = elapsed / new * (self.tables - self.done)
        rate = f", {new * self.table_size / elapsed:,.0f} rows/s" if self.table_size else ""
        tail = f", about {left:.0f} s left" if self.done < self.tables else ""
        self.say(f"prepare: {self.done}/{self.tables} tables in {elapsed:.0f} s{rate}{tail}")


def subset_script(workload: Workload, tables: list[int]) -> str:
    """A Lua wrapper of a built-in test whose `prepare` creates only the given tables (to resume a build)."""
    numbers = ", ".join(str(n) for n in tables)
    return (f"dofile({lua_string(test_script(workload))})\nlocal lb_tables = {{{numbers}}}\n"
            "function cmd_prepare()\n  local drv = sysbench.sql.driver()\n  local con = drv:connect()\n"
            "  for j = sysbench.tid % sysbench.opt.threads + 1, #lb_tables, sysbench.opt.threads do\n"
            "    create_table(drv, con, lb_tables[j])\n  end\nend\n"
            "sysbench.cmdline.commands.prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND}\n")


def prepare_tables(workload: Workload, endpoint: Endpoint, private: Path, log_dir: Path,
                   on_line: Callable[[str], None] | None, *, cleanup_first: bool = False,
                   client: ClientRunner | None = None, only: list[int] | None = None) -> None:
    """sysbench prepare with one thread per table, up to the CPU count (after `cleanup` when asked: a server
    that keeps its tables between runs, as published studies reset their data). `client` is where sysbench
    runs (a Job in the cluster for a Kubernetes variant with client: job); this host by default. `only`: the
    table numbers to create (a built-in test only). A pgbench workload's: `pgbench -i` (it drops its tables
    first)."""
    if workload.is_pgbench:
        initialize(workload, endpoint, private, log_dir, client)
        return
    client = client or HostClient()
    cfg = write_private(private / "sysbench.cfg", config_file_text(endpoint))
    files = {cfg.name: cfg.read_text(encoding="utf-8")}
    if cleanup_first:
        gone = client.run_client(cleanup_argv(workload, cfg), files, log_path=log_dir / "cleanup.log",
                                 secrets=[endpoint.password], timeout=3600)
        if gone.returncode != 0:
            raise RunFailed(f"sysbench cleanup failed (exit {gone.returncode}); see cleanup.log")
    script = test_script(workload)
    if only is not None:
        wrapper = private / "prepare-subset.lua"
        wrapper.write_text(subset_script(workload, only), encoding="utf-8")
        files[wrapper.name], script = wrapper.read_text(encoding="utf-8"), str(wrapper)
    threads = max(1, min(len(only) if only is not None else workload.tables, os.cpu_count() or 1))
    cmd = prepare_argv(workload, cfg, threads, script)
    done = client.run_client(cmd, files, log_path=log_dir / "prepare.log", secrets=[endpoint.password],
                             on_line=on_line, timeout=24 * 3600)
    if done.returncode != 0:
        cause = next((ln for ln in reversed(done.output.splitlines()) if "FATAL" in ln), "see prepare.log")
        raise RunFailed(f"sysbench prepare failed (exit {done.returncode}): {cause.strip()}")


def ensure_snapshot(workload: Workload, page_size: str | None, *, log_dir: Path,
                    on_line: Callable[[str], None] | None = None, say: Say | None = None,
                    server: ChosenServer | None = None) -> Snapshot:
    """The cached snapshot for this dataset, prepared now (or its interrupted build resumed) if it is missing, by
    `server` (a host variant's own server: servers.snapshot_server; default: this host's MariaDB), whose
    `--version` is part of the key. One build per dataset at a time on this machine: another process that needs
    it waits, then uses it."""
    server = server or ServerChoice("prepare")
    key, inputs = dataset_key(workload, resolve_server(server).identity(), page_size)
    found = find_snapshot(key)
    if found is not None:
        return found
    with build_lock(key, say or (lambda _text: None)):
        found = find_snapshot(key)
        if found is not None:
            return found
        return build_snapshot(workload, key, inputs, page_size, log_dir=log_dir, on_line=on_line, say=say,
                              server=server)


@contextlib.contextmanager
def build_lock(key: str, say: Say) -> Iterator[None]:
    """An exclusive lock (flock) on <datasets>/.locks/<key>; released when the holder ends, however it ends."""
    with folder_lock(datasets_dir(), key, f"prepare: another process is building dataset {key}; waiting for it", say):
        yield


def build_folder(key: str) -> Path:
    """Where the snapshot of `key` is built: one fixed folder, so a later build finds what an interrupted one
    left (`layerbench clean` removes it)."""
    return datasets_dir() / f".build-{key}"


def build_snapshot(workload: Workload, key: str, inputs: dict[str, Any], page_size: str | None, *,
                   log_dir: Path, on_line: Callable[[str], None] | None, say: Say | None = None,
                   server: ChosenServer | None = None) -> Snapshot:
    scratch = build_folder(key)
    owner = f"prepare-{key}-{os.getpid()}"
    private: Path | None = None
    reclaim_killed_builds(scratch, say or (lambda _text: None))
    try:
        with signals_deferred():  # the build's folders exist only after the note that lets `clean` remove them
            private = owners.private_folder(owner, "lb-prepare-", also=[scratch])
            scratch.mkdir(parents=True, exist_ok=True)
        return Builder(workload, key, inputs, page_size, scratch, private, log_dir, on_line, say, server).build()
    finally:
        with signals_deferred():
            if private is not None:
                shutil.rmtree(private, ignore_errors=True)
            if not (scratch / "partial").is_dir():
                shutil.rmtree(scratch, ignore_errors=True)
            owners.forget(owner)


def reclaim_killed_builds(scratch: Path, say: Say) -> None:
    """What a build of this dataset killed outright (SIGKILL: no handler ran) left, taken over by the next build
    (`resume`): its server stopped (it would run on, on a removed datadir), its private folder removed, its
    owner notes forgotten (a later `clean` would otherwise remove this build's folder). The build folder itself
    stays: its partial/ may be resumed. Called with the build lock held: no live build of this dataset exists."""
    from layerbench.hosts.procs import pid_alive
    from layerbench.hosts.reclaim import clean_owned

    for owned in owners.recorded():
        if pid_alive(owned.harness_pid) or not any(Path(p).is_relative_to(scratch) for p in owned.paths):
            continue
        with signals_deferred():
            done = clean_owned(owned, keep=frozenset({scratch}))
        if done:
            say(f"prepare: cleaned up after a killed build of this dataset ({'; '.join(done)})")


def table_bytes(datadir: Path) -> int:
    """The bytes of the benchmark's tables in a datadir: InnoDB's sbtest/*.ibd, or PostgreSQL's base/."""
    if (datadir / "PG_VERSION").is_file():
        from layerbench.server.postgresql import data_bytes

        return data_bytes(datadir)
    return sum(f.stat().st_size for f in (datadir / "sbtest").glob("*.ibd")) if datadir.is_dir() else 0


def helper_settings(flavour: Flavour, memory: str, *, durable: bool = True) -> dict[str, Any]:
    """The settings of a private server that builds or checks a dataset: its cache of pages (`memory`) and, when not
    `durable`, commits that do not wait for the disk (a build is redone when it fails)."""
    if flavour.is_postgresql:
        return {"shared_buffers": memory.replace("G", "GB").replace("M", "MB"),
                **({} if durable else {"synchronous_commit": False})}
    return {"innodb_buffer_pool_size": memory, **({} if durable else {"innodb_flush_log_at_trx_commit": 2})}


class Builder:
    """One build of one snapshot in its build folder: `partial/` holds the datadir of an interrupted build."""

    def __init__(self, workload: Workload, key: str, inputs: dict[str, Any], page_size: str | None, scratch: Path,
                 private: Path, log_dir: Path, on_line: Callable[[str], None] | None, say: Say | None,
                 server: ChosenServer | None = None) -> None:
        self.workload, self.key, self.inputs, self.page_size = workload, key, inputs, page_size
        self.scratch, self.private, self.log_dir, self.on_line = scratch, private, log_dir, on_line
        self.say = say or (lambda _text: None)
        self.server = server or ServerChoice("prepare")
        self.host_server = PrivateServer(self.server)
        self.partial = scratch / "partial"
        self.resumed = False

    def spec(self) -> ServerSpec:
        config = helper_settings(resolve_server(self.server).flavour, "1G", durable=False)
        if self.page_size:
            config["innodb_page_size"] = self.page_size
        resume = self.partial if self.partial.is_dir() else None
        return ServerSpec("prepare", f"prepare-{self.key}", self.log_dir, self.private, self.scratch, config=config,
                          password=generate_password(), snapshot=resume)

    def build(self) -> Snapshot:
        self.drop_killed_build()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        self.resumed = self.partial.is_dir()
        try:
            endpoint = self.host_server.up(self.spec())
            shutil.rmtree(self.partial, ignore_errors=True)  # the server runs on its own copy now
            self.fill(endpoint)
            meta = self.verify(endpoint)
            self.shut_down(endpoint)
        except BaseException:
            self.keep_partial()
            raise
        finally:
            self.host_server.down()
        meta["prepare_seconds"] = round(time.monotonic() - started, 2)
        return self.publish(meta)

    def drop_killed_build(self) -> None:
        """A build killed outright (SIGKILL) may have left its server running on its datadir (`layerbench clean`
        stops it): that datadir is never resumed from, only what an orderly stop kept in partial/."""
        shutil.rmtree(self.scratch / "datadirs", ignore_errors=True)

    def fill(self, endpoint: Endpoint) -> None:
        if self.workload.is_pgbench:  # pgbench -i drops what an interrupted build left, then makes its tables
            prepare_tables(self.workload, endpoint, self.private, self.log_dir, None)
            return
        if self.workload.is_lua_path:
            self.fill_by_script(endpoint)
            return
        all_tables = list(range(1, self.workload.tables + 1))
        done = complete_tables(endpoint, self.workload) if self.resumed else []
        missing = [i for i in all_tables if f"sbtest{i}" not in done]
        if done:
            self.say(f"prepare: resuming an interrupted build, {len(done)} of {self.workload.tables} tables kept")
        for i in missing:
            query(endpoint, f"DROP TABLE IF EXISTS sbtest{i}", database=endpoint.database)
        if not missing:
            return
        progress = PrepareProgress(self.workload.tables, self.on_line or self.say, table_size=self.workload.table_size,
                                   already=len(done)) if self.on_line is None else self.on_line
        prepare_tables(self.workload, endpoint, self.private, self.log_dir, progress,
                       only=missing if done else None)

    def fill_by_script(self, endpoint: Endpoint) -> None:
        """A user's script: prepared from the start (we cannot tell its tables' last step), on a database emptied
        of whatever an interrupted build of it left."""
        for name in base_tables(endpoint) if self.resumed else []:
            query(endpoint, f"DROP TABLE IF EXISTS {quoted(name, endpoint)}", database=endpoint.database)
        if self.resumed:
            self.say("prepare: an interrupted build of a script of your own is prepared again from the start")
        prepare_tables(self.workload, endpoint, self.private, self.log_dir, self.on_line)

    def verify(self, endpoint: Endpoint) -> dict[str, Any]:
        """Row counts and CHECKSUM TABLE of every table, once, here: what each run's file check stands on."""
        prepared = {"where": "this machine", "host": None, "binary": resolve_server(self.server).program,
                    "version": self.inputs.get("server")}
        return {"key": self.key, "inputs": self.inputs, **table_facts(endpoint, self.workload),
                "created_at": time.time(), "server": server_fields(self.server), "prepared": prepared}

    def shut_down(self, endpoint: Endpoint) -> None:
        """A clean shutdown (a consistent datadir), without the buffer-pool dump (runs start cold); the datadir
        moves to the build folder's datadir/. PostgreSQL's benchmark account keeps no password in the snapshot."""
        server = self.host_server.server
        if server is not None and server.flavour.is_postgresql:
            from layerbench.server.postgresql import set_up_account

            assert self.host_server.socket_dir is not None
            set_up_account(self.host_server.socket_dir, endpoint.port, endpoint.user, None, endpoint.database)
        else:
            query(endpoint, "SET GLOBAL innodb_buffer_pool_dump_at_shutdown = OFF")
        self.host_server.stop_cleanly(timeout=600)
        assert self.host_server.datadir is not None
        self.host_server.datadir.rename(self.scratch / "datadir")
        self.host_server.datadir = None

    def keep_partial(self) -> None:
        """On an error or a signal: stop the server cleanly and keep its datadir for the next build to resume, when
        it holds at least RESUME_MIN_BYTES of tables (else the build folder goes, as after any other failure)."""
        datadir = self.host_server.datadir
        with signals_deferred(), contextlib.suppress(Exception):
            keep = datadir is not None and table_bytes(datadir) >= RESUME_MIN_BYTES
            if self.host_server.process:  # a clean stop only for a datadir worth keeping: a server stopped while it
                # runs its init file ignored SIGTERM until the 120 s limit (a Ctrl-C then took two minutes)
                self.host_server.stop_cleanly(timeout=120 if keep else 5)
            if keep:
                shutil.rmtree(self.partial, ignore_errors=True)
                datadir.rename(self.partial)
                self.host_server.datadir = None

    def publish(self, meta: dict[str, Any]) -> Snapshot:
        datadir = self.scratch / "datadir"
        for name in EXCLUDED:
            (datadir / name).unlink(missing_ok=True)
        meta["data_bytes"] = table_bytes(datadir)
        write_manifest(self.scratch, build_manifest(datadir))
        (self.scratch / "meta.json").write_text(json.dumps(meta, indent=2))
        target = datasets_dir() / self.key
        with contextlib.suppress(OSError):
            self.scratch.rename(target)
        return find_snapshot(self.key) or Snapshot(self.key, self.scratch / "datadir", meta)
