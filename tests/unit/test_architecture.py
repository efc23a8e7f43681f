"""Architecture rules checked on the source: no import circle (function-local imports included), no class over
200 lines, the layers ARCHITECTURE.md draws, a backend kept in its own package, and one home each for starting a
process (hosts/procs.py, with a timeout), asking a version (versions.py), reading /proc (hosts/procfs.py) and
measuring a folder (hosts/workdirs.py:folder_size)."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Iterable
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "layerbench"
MAX_CLASS_LINES = 200


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of the tree except those under `if TYPE_CHECKING:` (imports for type hints only)."""
    skipped = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(
        block.test) for stmt in block.body for n in ast.walk(stmt)}
    return [node for node in ast.walk(tree) if id(node) not in skipped]


def with_packages(targets: set[str]) -> set[str]:
    """Importing a.b.c runs a/__init__ and a/b/__init__ first: those are imported too."""
    parts = [target.split(".") for target in targets]
    return targets | {".".join(p[:i]) for p in parts for i in range(2, len(p))}


def named_imports(path: Path, nodes: Iterable[ast.AST]) -> set[str]:
    """The modules (or module.name) the import statements among `nodes` name, relative ones made absolute."""
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                name = module_name(path)
                package = name if path.name == "__init__.py" else name.rpartition(".")[0]
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """Every layerbench module `path` imports, at any depth of the file (function bodies too)."""
    name = module_name(path)
    found = named_imports(path, runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))))
    own_packages = with_packages({name}) | {name}
    return {target for target in with_packages(found) if target in modules and target not in own_packages}


def import_graph() -> dict[str, set[str]]:
    """module -> the layerbench modules it imports."""
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in files}
    return {module_name(path): imported_modules(path, modules) for path in files}


def first_circle(graph: dict[str, set[str]]) -> list[str]:
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as error:
        return list(error.args[1])
    return []


def test_the_import_graph_sees_imports_inside_functions() -> None:
    graph = import_graph()
    assert "layerbench.run.plan" in graph["layerbench.cli.campaigns"]  # imported in check_and_plan only
    assert first_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) != []
    assert first_circle({"a": {"b"}, "b": set()}) == []


def test_no_import_circle() -> None:
    assert first_circle(import_graph()) == []


def test_no_class_over_200_lines() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and (node.end_lineno or 0) - node.lineno + 1 > MAX_CLASS_LINES:
                long.append(f"{module_name(path)}.{node.name}: {(node.end_lineno or 0) - node.lineno + 1} lines")
    assert long == [], f"classes over {MAX_CLASS_LINES} lines: {long}"


def test_every_backend_implements_every_member_of_the_protocol() -> None:
    import inspect

    from layerbench.backends import backend_class
    from layerbench.backends.base import Backend
    from layerbench.backends.registry import VARIANT_TYPES

    members = {name: inspect.signature(fn) for name, fn in vars(Backend).items()
               if callable(fn) and not name.startswith("_")}
    assert {"check", "up", "down", "exit_cause", "client_processes", "components", "describe"} <= set(members)
    # the backends by kind take their variant; those of a server on an ssh: host also take that host
    local = [t.local_backend for t in VARIANT_TYPES]
    remote = [t.remote_backend for t in VARIANT_TYPES if t.remote_backend is not None]
    for table, takes in ((local, ["variant"]), (remote, ["variant", "host"])):
        for location in table:
            cls = backend_class(location)
            class_name = cls.__name__
            for name, wanted in members.items():
                got = inspect.signature(getattr(cls, name))
                assert list(got.parameters) == list(wanted.parameters), f"{class_name}.{name}{got} is not {wanted}"
            assert list(inspect.signature(cls).parameters) == takes, f"{class_name} takes {takes}"


# --- a backend is a package that holds everything about it (issue #28) --------------------------------------------

BACKENDS = PACKAGE / "backends"


def core_files() -> list[Path]:
    """Every module outside backends/: they ask a backend through its variant's methods, never by its class."""
    return [path for path in sorted(PACKAGE.rglob("*.py")) if not path.is_relative_to(BACKENDS)]


def backend_class_names() -> set[str]:
    """The variant models and backend classes of every backend (backends/registry.py)."""
    from layerbench.backends import backend_class
    from layerbench.backends.registry import VARIANT_TYPES

    names = {t.__name__ for t in VARIANT_TYPES}
    for t in VARIANT_TYPES:
        names |= {backend_class(location).__name__ for location in (t.local_backend, t.remote_backend) if location}
    return names


def names_in(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).rpartition(".")[2])
    return names


def test_no_module_outside_backends_names_a_backend_or_variant_class() -> None:
    classes = backend_class_names()
    assert {"HostVariant", "DockerVariant", "HostBackend", "RemoteVMBackend"} <= classes  # the check sees them
    named = {f"{path.relative_to(SRC)}: {sorted(names_in(path) & classes)}" for path in core_files()
             if names_in(path) & classes}
    assert named == set(), "ask the variant (campaign/variant.py) instead of naming its class"


def backend_packages() -> set[str]:
    """The backends' own packages (backends/<kind>/), whose modules only backends/ imports."""
    return {f"layerbench.backends.{path.parent.name}" for path in BACKENDS.glob("*/__init__.py")}


def reach_ins(path: Path, packages: set[str]) -> list[str]:
    """Imports of a module of a backend's own package anywhere in the file (inside functions and under
    TYPE_CHECKING too), `from layerbench.backends import <kind>`, and import_module of such a name. The backends'
    shared modules (layerbench.backends itself, base, registry, variant_base) are not reach-ins."""
    def inside(name: str) -> bool:
        return any(name == package or name.startswith(f"{package}.") for package in packages)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names = [node.args[0].value]
        if any(inside(name) for name in names):
            found.append(ast.unparse(node))
    return found


def test_no_module_outside_backends_imports_a_backends_own_package(tmp_path: Path) -> None:
    """The core reaches a backend through the protocol (backends/base.py), its variant model and the registry;
    a backend's own modules (its daemon client, its neighbour containers) stay behind them."""
    packages = backend_packages()
    assert {"layerbench.backends.docker", "layerbench.backends.kubernetes"} <= packages
    sample = tmp_path / "reach_in_sample.py"
    sample.write_text("from typing import TYPE_CHECKING\nimport importlib\n"
                      "from layerbench.backends.docker.daemon import docker_client\n"
                      "from layerbench.backends import host\n"
                      "if TYPE_CHECKING:\n    from layerbench.backends.vm.variant import VMVariant\n"
                      "def f():\n    import layerbench.backends.kubernetes.pod\n"
                      "    importlib.import_module('layerbench.backends.external.variant')\n"
                      "from layerbench.backends import make_backend\nfrom layerbench.backends.base import Backend\n"
                      "from layerbench.backends.registry import BY_KIND\n"
                      "from layerbench.backends.variant_base import VariantBase\n")
    assert len(reach_ins(sample, packages)) == 5  # the check sees each kind of reach-in, and only those
    found = {f"{path.relative_to(SRC)}: {line}" for path in core_files() for line in reach_ins(path, packages)}
    assert found == set(), "put what the core needs behind backends/base.py's protocol or backends/registry.py"


def probes(path: Path) -> list[str]:
    """isinstance on a variant model, getattr on a variant, a variant's `backend` compared with a backend's name."""
    from layerbench.backends.registry import KINDS

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2:
            target, second = ast.unparse(node.args[0]), ast.unparse(node.args[1])
            if node.func.id == "isinstance" and "Variant" in second:
                found.append(ast.unparse(node))
            if node.func.id in ("getattr", "hasattr") and target in ("variant", "v", "self.variant"):
                found.append(ast.unparse(node))
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "backend" \
                and any(isinstance(c, ast.Constant) and c.value in KINDS for c in node.comparators):
            found.append(ast.unparse(node))
    return found


def test_no_probe_stands_in_for_the_protocol(tmp_path: Path) -> None:
    sample = tmp_path / "probe_sample.py"
    sample.write_text("isinstance(v, HostVariant)\ngetattr(variant, 'image', None)\nv.backend == 'vm'\n")
    assert len(probes(sample)) == 3  # the check sees each kind of probe
    found = {f"{path.relative_to(SRC)}: {probe}" for path in core_files() for probe in probes(path)}
    found |= {f"{path.relative_to(SRC)}: {probe}" for path in sorted(BACKENDS.rglob("*.py")) for probe in probes(path)
              if "getattr" in probe or "hasattr" in probe}
    assert found == set(), "add a method to VariantBase (its default once) and override it in the backend's variant"


def test_server_never_imports_backends() -> None:
    graph = import_graph()
    found = {f"{module} -> {target}" for module, targets in graph.items() if module.startswith("layerbench.server")
             for target in targets if target.startswith("layerbench.backends")}
    assert found == set()


# --- a pure analysis (issue #45) --------------------------------------------------------------------------------

ANALYSIS, SERVER = PACKAGE / "analysis", PACKAGE / "server"
LOADER = ANALYSIS / "loading.py"  # the analysis' one door to the store


def every_import(path: Path) -> set[str]:
    """Every module `path` imports, with its packages: function bodies and `if TYPE_CHECKING:` blocks too (an
    import for type hints is still a dependency on that layer)."""
    return with_packages(named_imports(path, ast.walk(ast.parse(path.read_text(encoding="utf-8")))))


def is_under(target: str, *roots: str) -> bool:
    return any(target == root or target.startswith(f"{root}.") for root in roots)


def test_analysis_and_server_import_no_backend_not_even_for_type_hints(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from layerbench.backends.variant_base import VariantBase\n")
    assert "layerbench.backends.variant_base" in every_import(sample)  # the check sees type-hint imports
    found = {f"{path.relative_to(SRC)} -> {target}" for folder in (ANALYSIS, SERVER)
             for path in sorted(folder.rglob("*.py")) for target in every_import(path)
             if is_under(target, "layerbench.backends")}
    assert found == set(), "pass the fact in, record it, or name the fields needed (a Protocol)"


def test_only_the_loader_of_analysis_imports_the_store_or_sqlite3() -> None:
    assert "layerbench.store" in every_import(LOADER)
    found = {f"{path.relative_to(SRC)} -> {target}" for path in sorted(ANALYSIS.rglob("*.py")) if path != LOADER
             for target in every_import(path) if is_under(target, "layerbench.store", "sqlite3")}
    assert found == set(), "analysis/ reads a LoadedCampaign (analysis/loading.py loads it)"


def test_every_backend_package_is_registered_once_with_its_own_kind() -> None:
    from layerbench.backends.registry import BY_KIND, KINDS, VARIANT_TYPES

    packages = {path.parent.name for path in BACKENDS.glob("*/variant.py")}
    assert packages == set(KINDS) == set(BY_KIND) and len(KINDS) == len(VARIANT_TYPES)
    for kind, variant_type in BY_KIND.items():  # everything a backend names lives in its own folder
        own = f"layerbench.backends.{kind}."
        assert variant_type.__module__ == f"{own}variant"
        for location in (variant_type.local_backend, variant_type.remote_backend, variant_type.leftovers,
                         variant_type.pod_neighbours, variant_type.container_engine):
            assert (location or own).startswith(own), f"{kind}: {location}"


def test_no_backend_class_repeats_a_default_of_backend_base() -> None:
    """BackendBase gives the no-op defaults once; a backend overrides only what it does differently."""
    import inspect
    import textwrap

    from layerbench.backends import backend_class
    from layerbench.backends.base import BackendBase
    from layerbench.backends.registry import VARIANT_TYPES

    def body(fn: object) -> list[str]:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
        assert isinstance(tree, ast.FunctionDef)
        return [ast.unparse(s) for s in tree.body
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]  # a docstring says nothing

    defaults = {name: body(fn) for name, fn in vars(BackendBase).items() if inspect.isfunction(fn)}
    repeated = []
    for t in VARIANT_TYPES:
        for location in filter(None, (t.local_backend, t.remote_backend)):
            cls = backend_class(location)
            assert issubclass(cls, BackendBase), f"{cls.__name__} does not subclass BackendBase"
            repeated += [f"{cls.__name__}.{name}" for name, fn in vars(cls).items()
                         if name in defaults and inspect.isfunction(fn) and body(fn) == defaults[name]]
    assert repeated == []


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """First-level package (or top-level module) -> the others it imports: layerbench.run.plan counts as run."""
    def package(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else parts[0]
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        packages.setdefault(package(module), set()).update(package(t) for t in targets)
    return {name: targets - {name} for name, targets in packages.items()}


def test_no_circle_between_packages() -> None:
    """The packages import one way (../DESIGN.md's pipeline): a circle between two packages, even through a
    function-local import, would mean a module sits in the wrong one."""
    assert first_circle(package_graph(import_graph())) == []
    assert first_circle(package_graph({"layerbench.a.x": {"layerbench.b.y"}, "layerbench.b.y": {"layerbench.a.z"},
                                       "layerbench.a.z": set()})) != []


def documented_layers() -> list[set[str]]:
    """ARCHITECTURE.md's drawing, top to bottom: the packages (and modules) named at the start of each line."""
    text = (SRC.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text.split("```\n", 2)[1]
    layers = []
    for line in block.splitlines():
        words = line.split()
        if words and words[0].endswith(".py") and not words[0].endswith("/"):  # the leaf modules' line
            layers.append({w.removesuffix(".py") for w in words if w.endswith(".py")})
            continue
        named = [w for w in words[:2] if w.endswith("/") or "/<" in w or w.endswith(".py")]
        layers.append({w.split("/")[0].removesuffix(".py") for w in named})
    return layers


def test_each_package_imports_only_the_layers_below_it_as_architecture_md_draws() -> None:
    layers = documented_layers()
    level = {name: depth for depth, names in enumerate(layers) for name in names}
    graph = package_graph(import_graph())
    assert {"cli", "run", "backends", "hosts", "records", "store"} <= set(level)
    upward = [f"{a} -> {b}" for a, targets in graph.items() for b in targets
              if a in level and b in level and level[b] < level[a]]  # one layer may import within itself
    assert upward == [], f"imports against ARCHITECTURE.md's layers: {upward}"


# --- one process helper, one version reader, one /proc reader, one folder size (issue #45) ------------------------

PROCS = PACKAGE / "hosts" / "procs.py"
PROCFS = PACKAGE / "hosts" / "procfs.py"
VERSIONS = PACKAGE / "versions.py"
WORKDIRS = PACKAGE / "hosts" / "workdirs.py"
# os, pty and asyncio's own ways to start a process: hosts/procs.py is the only starter
PROCESS_STARTERS = {"system", "popen", "fork", "forkpty", "spawn", "spawnl", "spawnle", "spawnlp", "spawnlpe",
                    "spawnv", "spawnve", "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp", "execl", "execle",
                    "execlp", "execlpe", "execv", "execve", "execvp", "execvpe", "create_subprocess_exec",
                    "create_subprocess_shell"}
# the helpers of hosts/procs.py that run a process to an end or hold it for a block: each call gives a timeout
TIMED_HELPERS = {"run", "capture", "pipe", "held"}
PATH_CALLS = {"open", "Path", "PurePath", "PosixPath", "PurePosixPath"}  # called by name on a /proc path
FILE_METHODS = {"open", "listdir", "scandir", "walk", "exists", "lexists", "isdir", "isfile", "islink", "access",
                "stat", "lstat", "readlink", "read_text", "read_bytes", "iterdir", "glob", "rglob"}
RECURSIVE_WALKS = {"walk", "rglob"}


def tree_of(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"))


def flagged_calls(tree: ast.AST, flagged: Callable[[ast.Call], bool]) -> list[str]:
    return [f"line {node.lineno}: {ast.unparse(node)[:80]}" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and flagged(node)]


def everywhere_but(allowed: Path | None, check: Callable[[Path], list[str]]) -> set[str]:
    """What `check` finds in every module of the package but the one allowed to."""
    return {f"{path.relative_to(SRC)}: {found}" for path in sorted(PACKAGE.rglob("*.py")) if path != allowed
            for found in check(path)}


def process_starts(path: Path) -> list[str]:
    """Imports of subprocess, and calls of os/pty/asyncio's process starters."""
    found = []
    for node in ast.walk(tree_of(path)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] == "subprocess"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "subprocess":
            found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "pty", "asyncio"):
            found += [f"from {node.module} import {a.name}" for a in node.names if a.name in PROCESS_STARTERS]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in PROCESS_STARTERS and ast.unparse(node.func.value) in ("os", "pty", "asyncio"):
            found.append(ast.unparse(node.func))
    return found


def test_only_hosts_procs_starts_a_process(tmp_path: Path) -> None:
    sample = tmp_path / "starts_sample.py"
    sample.write_text("import subprocess\nfrom subprocess import run\nimport os\nos.system('ls')\n"
                      "asyncio.create_subprocess_exec('ls')\nprint('a subprocess in a sentence')\n")
    assert len(process_starts(sample)) == 4  # the check sees each kind
    assert process_starts(PROCS) != []  # and the one module allowed to
    assert everywhere_but(PROCS, process_starts) == set(), \
        "start processes through hosts/procs.py (run, capture, pipe, held, start)"


def untimed_calls(path: Path) -> list[str]:
    """Calls of hosts/procs.py's run, capture, pipe and held (imported by name or through the module) without a
    `timeout=`."""
    tree = tree_of(path)
    functions, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "layerbench.hosts.procs":
            functions |= {a.asname or a.name for a in node.names if a.name in TIMED_HELPERS}
        elif isinstance(node, ast.ImportFrom) and node.module == "layerbench.hosts":
            modules |= {a.asname or a.name for a in node.names if a.name == "procs"}

    def helper(call: ast.Call) -> bool:
        func = call.func
        named = isinstance(func, ast.Name) and func.id in functions
        through = isinstance(func, ast.Attribute) and func.attr in TIMED_HELPERS and \
            isinstance(func.value, ast.Name) and func.value.id in modules
        return (named or through) and not any(k.arg == "timeout" for k in call.keywords)
    return flagged_calls(tree, helper)


def test_every_call_of_the_process_helper_gives_a_timeout(tmp_path: Path) -> None:
    sample = tmp_path / "timeout_sample.py"
    sample.write_text("from layerbench.hosts.procs import capture, run as go\nfrom layerbench.hosts import procs\n"
                      "capture(['ls'])\ngo('ls', ['ls'])\nprocs.pipe(['a'], ['b'])\ncapture(['ls'], timeout=5)\n"
                      "host.run(['ls'])\n")
    assert len(untimed_calls(sample)) == 3  # the check sees each form, and not a host's own run
    assert everywhere_but(None, untimed_calls) == set(), \
        "give every process a timeout (None only for a copy that grows with its data)"


def asks_version(call: ast.Call) -> bool:
    """A call given a list or tuple that holds "--version": a program asked its version."""
    inside = [n for arg in [*call.args, *(k.value for k in call.keywords)] for n in ast.walk(arg)]
    return any(isinstance(n, ast.List | ast.Tuple) and any(isinstance(e, ast.Constant) and e.value == "--version"
                                                           for e in n.elts) for n in inside)


def version_asks(path: Path) -> list[str]:
    return flagged_calls(tree_of(path), asks_version)


def test_only_versions_asks_a_program_its_version(tmp_path: Path) -> None:
    sample = tmp_path / "version_sample.py"
    sample.write_text("run(['sysbench', '--version'])\nhost.run([*command, '--version'], timeout=5)\n"
                      "go(cmd + ('--version',))\nOption('--version')\nprint('mysqld --version says')\n")
    assert len(version_asks(sample)) == 3  # a typer option or a sentence is no call of a program
    assert everywhere_but(VERSIONS, version_asks) == set(), \
        "ask a program its version through versions.py (version_output, version_on)"


def proc_path(node: ast.AST) -> bool:
    """A literal path in /proc: "/proc", "/proc/...", or an f-string that starts so."""
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
        node.value == "/proc" or node.value.startswith("/proc/"))


def opens_proc(call: ast.Call) -> bool:
    """A /proc path given to a file API (open, Path, os.listdir, os.path.exists, read_text ...); a shell script
    sent to another host and a call of hosts/procfs.py's own readers are not."""
    func = call.func
    api = (isinstance(func, ast.Name) and func.id in PATH_CALLS) or (
        isinstance(func, ast.Attribute) and func.attr in FILE_METHODS | PATH_CALLS)
    return api and any(proc_path(arg) for arg in call.args)


def proc_reads(path: Path) -> list[str]:
    return flagged_calls(tree_of(path), opens_proc)


def test_only_hosts_procfs_reads_proc(tmp_path: Path) -> None:
    sample = tmp_path / "proc_sample.py"
    sample.write_text("Path('/proc').iterdir()\nopen('/proc/stat')\nos.listdir(f'/proc/{pid}/task')\n"
                      "os.path.isdir(f'/proc/{pid}')\npathlib.Path('/proc/self/mounts').read_text()\n"
                      "read('/proc/stat')\nhost.shell('cat /proc/net/tcp')\nPath('/process')\n")
    assert len(proc_reads(sample)) == 5  # procfs's own read(), a remote shell's text and /process are not
    assert proc_reads(PROCFS) != []  # the one reader opens them
    assert everywhere_but(PROCFS, proc_reads) == set(), "read /proc through hosts/procfs.py"


def folder_sizes(path: Path) -> list[str]:
    """Functions that walk a folder down (os.walk, rglob) and add up st_size: a folder's size measured again."""
    found = []
    for fn in ast.walk(tree_of(path)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        nodes = list(ast.walk(fn))
        walks = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in RECURSIVE_WALKS
                    for n in nodes)
        sums = [n for n in nodes if (isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add))
                or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "sum")]
        if walks and any(isinstance(s, ast.Attribute) and s.attr == "st_size" for n in sums for s in ast.walk(n)):
            found.append(fn.name)
    return found


def test_one_function_measures_a_folders_size(tmp_path: Path) -> None:
    sample = tmp_path / "size_sample.py"
    sample.write_text("def a(p):\n    return sum(f.lstat().st_size for f in p.rglob('*'))\n"
                      "def b(p):\n    t = 0\n    for d, _, fs in os.walk(p):\n        t += sum(os.lstat(f).st_size "
                      "for f in fs)\n    return t\n"
                      "def c(p):\n    return sorted(os.walk(p), key=lambda f: f.stat().st_size)\n"
                      "def d(p):\n    return sum(f.stat().st_size for f in p.glob('*.ibd'))\n")
    assert folder_sizes(sample) == ["a", "b"]  # a sort by size, or one folder's tables, measures no folder
    assert folder_sizes(WORKDIRS) == ["folder_size"]
    assert everywhere_but(WORKDIRS, folder_sizes) == set(), \
        "measure a folder with hosts/workdirs.py:folder_size (it survives a file removed meanwhile)"


def test_no_two_test_files_share_a_name() -> None:
    """pytest imports test modules by their base name (tests/ has no packages): two files of one name in different
    folders stop the whole run at collection ('import file mismatch'), which only a full run shows."""
    tests = Path(__file__).resolve().parents[1]
    names = Counter(path.name for path in tests.rglob("test_*.py") if ".venv" not in path.parts)
    assert [name for name, count in names.items() if count > 1] == []
