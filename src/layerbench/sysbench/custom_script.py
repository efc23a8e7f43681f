"""A workload's own Lua script: its folder on LUA_PATH, the options it declares, the dataset flags it gets, and
the files that define the data it prepares.

sysbench 1.0 checks every `--option` against `sysbench.cmdline.options` as soon as a script declares any
(`invalid option: --tables=4`), so a script gets `--tables` / `--table-size` only when it declares `tables` /
`table_size` (`dataset_flags: auto`), or as the workload's `dataset_flags` says. The declared names are read by
loading the script in sysbench's own LuaJIT through a probe that prints the keys of that very table; not by
parsing `sysbench SCRIPT help`, whose text layout is no interface and which exits 1 with the same kind of
message for a script that declares nothing (sysbench then accepts any option) as for one that fails. The same
probe says whether the script defines event(), so a library the tests `require` (oltp_common.lua) is not taken for
a test; and it reads a bundled test's options too, so that validate refuses what sysbench would.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from layerbench.errors import BadInput, shown
from layerbench.hosts.procs import TimedOut, capture
from layerbench.vocabulary.sizes import byte_text

if TYPE_CHECKING:  # the campaign's Workload model, for type hints only: campaign/ imports sysbench/
    from layerbench.campaign.workload import Workload

DATASET_FLAGS = ("tables", "table_size")
MAX_SCRIPT_FILES = 200  # Lua files under the script's folder that go into the dataset's identity
MAX_SCRIPT_BYTES = 8 << 20
MAX_DEPTH = 3  # folder levels below the script's that `require "a.b.c"` can reach
MAX_ENTRIES = 20_000  # directory entries looked at before the folder counts as too big
PROBE_TIMEOUT = 30


def script_path(workload: Workload) -> Path:
    return Path(workload.test).expanduser().resolve()


def lua_path(script: Path) -> str:
    """LUA_PATH with the script's folder first and Lua's default path kept (`;;` at the end)."""
    folder = str(script.parent).rstrip("/")
    return f"{folder}/?.lua;{folder}/?/init.lua;;"


def env_prefix(workload: Workload) -> list[str]:
    """`env LUA_PATH=...` before sysbench for a script of the user's (its siblings can be `require`d); nothing
    for a built-in test. A prefix, not a subprocess environment, so it reaches sysbench on an ssh: host too."""
    if not workload.is_lua_path:
        return []
    return ["env", f"LUA_PATH={lua_path(script_path(workload))}"]


# The script's path comes through the environment: nothing of it is ever parsed as Lua. A script that defines no
# event() when loaded is a library that tests `require` (oltp_common.lua, whose init() stops a run of it alone):
# sysbench's `run` stops at once. Its init() is not called here (it may do anything a run does).
PROBE = ('local ok, err = pcall(dofile, os.getenv("LB_SCRIPT"))\n'
         'if not ok then io.write("LBERR ", (tostring(err):gsub("%s+", " ")), "\\n") return end\n'
         'if type(event) ~= "function" then io.write("LBNOEVENT\\n") end\n'
         "local o = sysbench.cmdline.options\n"
         'if type(o) ~= "table" then io.write("LBNONE\\n") return end\n'
         'io.write("LBDECLARED\\n")\n'
         'for k in pairs(o) do io.write("LBOPT ", tostring(k), "\\n") end\n')


def parse_probe(output: str) -> frozenset[str] | None:
    """The declared option names (None: the script declares none); ValueError with the script's error."""
    names, declared = set(), False
    for line in output.splitlines():
        if line.startswith("LBERR "):
            raise ValueError(line.removeprefix("LBERR ").strip() or "an error without a message")
        if line.startswith("LBNONE"):
            return None
        declared = declared or line.startswith("LBDECLARED")
        if line.startswith("LBOPT "):
            names.add(line.removeprefix("LBOPT ").strip())
    if not declared:
        fatal = [ln.strip() for ln in output.splitlines() if "FATAL" in ln or "error" in ln.lower()]
        raise ValueError(fatal[0] if fatal else "sysbench printed nothing about the script's options")
    return frozenset(names)


@dataclass(frozen=True)
class ScriptFacts:
    """What loading a script in sysbench's LuaJIT shows: the options it declares (None: none, so sysbench takes any)
    and whether it is a test (it defines event()) rather than a library tests `require`."""

    options: frozenset[str] | None
    is_test: bool


@lru_cache(maxsize=64)
def _probe(script: str, digest: str) -> ScriptFacts:
    """Load the script (command `help`, as sysbench itself does to list options: a script built on
    oltp_common.lua refuses to load without a command) and read its declared options and its event()."""
    env = {**os.environ, "LUA_PATH": lua_path(Path(script)), "LB_SCRIPT": script}
    try:
        done = capture(["sysbench", "/dev/stdin", "help"], input_text=PROBE, env=env, timeout=PROBE_TIMEOUT)
    except TimedOut:
        raise ValueError(f"loading it took more than {PROBE_TIMEOUT} s") from None
    except OSError as error:
        raise ValueError(f"sysbench could not be started ({error.strerror})") from None
    output = done.stdout + "\n" + done.stderr
    return ScriptFacts(parse_probe(output), "LBNOEVENT" not in output.splitlines())


def script_facts(script: Path, digest: str, where: str, shown_as: str) -> ScriptFacts:
    """The facts of a script (a user's or a built-in test's file); BadInput naming `where` when it cannot be
    loaded (a missing module, an error at its top level)."""
    try:
        return _probe(str(script), digest)  # loaded again when it or a module changed
    except (OSError, ValueError) as error:
        problem = error.strerror if isinstance(error, OSError) else str(error)
        raise BadInput(f"{where}: {shown(shown_as)} fails when sysbench loads it ({shown(problem, 160, quote=False)}); "
                       "fix the script (its folder is on LUA_PATH)") from None


def declared_options(workload: Workload) -> frozenset[str] | None:
    """The names in the script's `sysbench.cmdline.options` (None: it declares none). BadInput naming the field
    when the script cannot be loaded (a missing module, an error at its top level)."""
    return user_script_facts(workload).options


def user_script_facts(workload: Workload) -> ScriptFacts:
    """The facts of the workload's own script (a path), keyed by it and the Lua files of its folder."""
    return script_facts(script_path(workload), script_digest(workload), f"workloads.{workload.name}.test",
                        workload.test)


def builtin_facts(script: Path, where: str) -> ScriptFacts:
    """The facts of a test sysbench bundles (its share folder's file, keyed by its bytes)."""
    return script_facts(script, hashlib.sha256(script.read_bytes()).hexdigest(), where, script.stem)


def check_is_a_test(workload: Workload, facts: ScriptFacts, tests: Callable[[], list[str]]) -> None:
    """A library that tests `require` (oltp_common.lua) is no test: `run` would stop at once ("cannot find the
    event() function"). `tests`: the bundled tests, for the message."""
    if not facts.is_test:
        raise BadInput(f"workloads.{workload.name}.test: {shown(workload.test, 100, keep_end=True)} defines no "
                       "event(), so it is a library that tests require, not a test sysbench can run; use one of "
                       f"{', '.join(tests()[:8])}, ... or a script of your own that defines event()")


def canonical(name: str) -> str:
    return name.replace("-", "_")


def dataset_flags(workload: Workload) -> tuple[str, ...]:
    """Which of `tables`, `table_size` sysbench gets: all for a built-in test; for a script of the user's, those
    it declares (auto), both (always) or none (never)."""
    if not workload.is_lua_path or workload.dataset_flags == "always":
        return DATASET_FLAGS
    if workload.dataset_flags == "never":
        return ()
    declared = {canonical(n) for n in declared_options(workload) or ()}
    return tuple(flag for flag in DATASET_FLAGS if flag in declared)


def check_script(workload: Workload) -> None:
    """Preflight of a script of the user's: its folder can be on LUA_PATH, it loads, the dataset flags it gets
    are ones it accepts, and a `tables`/`table_size` written in the workload reaches it."""
    folder = str(script_path(workload).parent)
    where = f"workloads.{workload.name}"
    if ";" in folder or "?" in folder:
        raise BadInput(f"{where}.test: the script's folder {shown(folder)} holds ';' or '?', which LUA_PATH cannot "
                       "carry; move the script to a folder without them")
    declared = declared_options(workload)
    names = {canonical(n) for n in declared or ()}
    flags = dataset_flags(workload)
    refused = [flag for flag in flags if declared is not None and flag not in names]
    if refused:
        raise BadInput(f"{where}.dataset_flags: always passes --{refused[0].replace('_', '-')}, which the script "
                       "does not declare in sysbench.cmdline.options (sysbench refuses it); declare it or set "
                       "dataset_flags: auto")
    check_options_known(workload, declared)
    unused = [flag for flag in DATASET_FLAGS if flag in workload.model_fields_set and flag not in flags]
    if unused:
        raise BadInput(f"{where}.{unused[0]}: set, but the script does not get --{unused[0].replace('_', '-')} "
                       f"(it does not declare {unused[0]}; dataset_flags: {workload.dataset_flags or 'auto'}); remove "
                       f"{unused[0]} or declare it in sysbench.cmdline.options")
    script_digest(workload)  # within its bounds


def check_options_known(workload: Workload, declared: frozenset[str] | None) -> None:
    """Each key of `options:` is an option the script declares or one of sysbench's own (`sysbench --help`):
    sysbench refuses any other once the script declares options, so validate says it first."""
    known = sysbench_options()
    if declared is None or not known:
        return
    names = {canonical(n) for n in declared} | known
    unknown = [key for key in workload.options if canonical(key) not in names]
    if unknown:
        listed = shown(", ".join(sorted(declared)) or "none", 200, quote=False)
        raise BadInput(f"workloads.{workload.name}.options.{unknown[0]}: neither the script nor sysbench has this "
                       f"option (sysbench would refuse it); the script declares: {listed}")


@lru_cache(maxsize=1)
def sysbench_options() -> frozenset[str]:
    """The general and driver options of this sysbench, as `sysbench --help` lists them (empty if it cannot)."""
    try:
        done = capture(["sysbench", "--help"], timeout=PROBE_TIMEOUT)
    except (OSError, TimedOut):
        return frozenset()
    return frozenset(canonical(name) for name in re.findall(r"^\s+--([A-Za-z][\w-]*)", done.stdout, re.MULTILINE))


def script_digest(workload: Workload) -> str:
    """sha256 over the script and every Lua file under its folder (modules it may `require`): the part of a
    dataset's identity that its own code decides. BadInput when the folder holds too much to be a workload's."""
    script = script_path(workload)
    folder = script.parent
    found = lua_files(folder)
    files = sorted({script, *(found or ())})
    total = sum(p.stat().st_size for p in files)
    if found is None or len(files) > MAX_SCRIPT_FILES or total > MAX_SCRIPT_BYTES:
        raise BadInput(f"workloads.{workload.name}.test: the script's folder {shown(str(folder))} holds more than "
                       f"a workload ({MAX_SCRIPT_FILES} Lua files, {byte_text(MAX_SCRIPT_BYTES, 'MiB', '.0f')}: every "
                       "one is part of the dataset's identity); put the script and its modules in a folder of their "
                       "own")
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def lua_files(folder: Path) -> list[Path] | None:
    """The Lua files under folder, MAX_DEPTH levels down at most (hidden folders skipped); None past
    MAX_ENTRIES directory entries or MAX_SCRIPT_FILES files (a script in a home folder or / must not walk the
    whole tree)."""
    found: list[Path] = []
    seen = 0
    for root, dirs, names in os.walk(folder):
        depth = len(Path(root).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < MAX_DEPTH else []
        seen += len(names) + len(dirs)
        found += [Path(root) / n for n in names if n.endswith(".lua") and (Path(root) / n).is_file()]
        if seen > MAX_ENTRIES or len(found) > MAX_SCRIPT_FILES:
            return None
    return found


def dataset_label(workload: Workload) -> str:
    """What defines the data, as the plan and the report say it: rows for a built-in test; for a script, the
    options its own prepare got."""
    if workload.is_pgbench:
        return f"pgbench scale {workload.pgbench_scale} ({workload.dataset_rows:,} accounts rows)"
    if not workload.is_lua_path:
        return f"{workload.tables} x {workload.table_size:,} rows"
    return f"a dataset of its own (prepare {prepare_options_text(workload)})"


def prepare_options_text(workload: Workload) -> str:
    """The dataset flags and the options a script's prepare gets, as on sysbench's command line."""
    given = [f"--{flag.replace('_', '-')}={getattr(workload, flag)}" for flag in dataset_flags(workload)]
    given += [f"--{k.replace('_', '-')}={({True: 'on', False: 'off'}.get(v, v) if isinstance(v, bool) else v)}"
              for k, v in workload.options.items()]
    return " ".join(given) if given else "without options"
