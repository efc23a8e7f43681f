"""Architecture rules checked on the source: no import circle (function-local imports included) and no
class over 200 lines."""

from __future__ import annotations

import ast
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


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """Every layerbench module `path` imports, at any depth of the file (function bodies too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
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
    assert "layerbench.campaign.models" in graph["layerbench.cli.main"]
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
