"""Every file, module and function that prose names exists (issue #45 item 6): the docstrings and comments of
src/, tests/ and bench/, and README.md, ARCHITECTURE.md, docs/**/*.md and tests/**/*.md.

What counts as a reference, and where it is looked for:
- a path with a slash (`sysbench/output.py`, `tests/unit/test_records.py`, `docs/`, `scripts/k8s-local`) whose
  first folder is one of the repository's or src/layerbench's, or that ends in .py: it exists relative to the
  repository, to src/ or src/layerbench, or to the folder of the file that names it or a folder above it
  (`report.{md,csv}` is both files; `backends/<name>/variant.py` is a pattern, not checked); other paths
  (`results/1-demo/report.md`, `read/write`), absolute ones (`/etc/mysql`), home paths (`~/.cache`) and URLs
  are the user's machine, prose or the web, not ours;
- a bare file name `histogram.py` or `campaign.md` (not `my.cnf` or `report.json`: files a run writes or the user
  keeps): some file of the repository has that name;
- `module.py:name` (`records/run.py:FORMAT`, `run.py:Reset.from_json`): the file defines `name` at its top
  level (a def, a class, an assignment), `Class.name` inside that class;
- a dotted name `layerbench.x.y`: a module or package of src/, and what follows the module a top-level name of
  it; `module.Name` or `module.function()` where `module` is the last name of a module of src/
  (`output.MARK`, `restore.can_clone()`): such a module defines it (a lower-case `server.config` without
  parentheses is a campaign or JSON key, not checked);
- a Markdown link `[text](target)` of a page: its target exists beside the page.
A reference that is meant to name something outside the repository is in `ALLOWED`, with its reason.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "layerbench"
SKIPPED = {".git", ".venv", "__pycache__", "test-artifacts", "node_modules", ".ruff_cache", ".pytest_cache",
           ".hypothesis", ".mypy_cache"}
TOP_FOLDERS = ("src", "tests", "bench", "docs", "scripts", "examples", ".ci")
EXTENSIONS = "py|md|lua|yaml|yml|json|csv|toml|sh|j2|html|txt|go|sql|cnf"  # of a file name without a folder

# References to things that are not files of this repository, on purpose. Keep each with its reason.
ALLOWED: dict[str, str] = {
    "layerbench.role": "a label key of the containers, pods and Jobs layerbench starts",
    "layerbench.harness": "a label key, as above",
    "layerbench.lease": "a label key (the lease of the harness that made the object, hosts/lease.py)",
    "layerbench.label": "a label key, as above",
    "layerbench.host": "a label key, as above",
    "layerbench.owner": "a label key (the harness's token, named by its Lease: backends/kubernetes/heartbeat.py)",
    "layerbench.db": "the store's SQLite file in the results folder",
    "layerbench.cnf": "the my.cnf file the docker backend mounts into the server's container",
    "layerbench.sql": "the init SQL file the docker backend mounts into the server's container",
    "report.md": "the report a run writes into the results folder",
    "src/pause.c": "a file inside the k8s-local artefact (the pause container's source)",
    "run/resume": "the commands run and resume, not a path",
    "tests/data/logs/captured-1.0.20-p100/rate40-p100/run-N.txt": "N: the run's number, 1 to 4",
}

URL = re.compile(r"\b[a-z]+://\S+")
PATH = re.compile(r"(?<![\w/~$.<>@:-])((?:[\w.-]+/)+[\w.-]*(?:\{[\w.,-]+\})?|[\w-]+(?:\.[\w-]+)*\.(?:" + EXTENSIONS
                  + r"))(?![\w/<-])(?::([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?))?")
DOTTED = re.compile(r"(?<![\w./-])layerbench((?:\.[A-Za-z_]\w*)+)(?![\w-])")
SHORT = re.compile(r"(?<![\w./-])([a-z_]\w*)\.([A-Z]\w*|[a-z_]\w*(?=\(\)))(?![\w-])")
LINK = re.compile(r"\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Prose:
    """A piece of prose: where it is (file and line) and its text."""

    file: Path
    line: int
    text: str


def repo_files() -> Iterator[Path]:
    """Every file of the work tree, without the caches, virtualenvs and build outputs beside it."""
    for path in ROOT.iterdir():
        if path.name in SKIPPED or path.name.endswith(".egg-info"):
            continue
        yield from ([path] if path.is_file() else _walk(path))


def _walk(folder: Path) -> Iterator[Path]:
    for path in folder.iterdir():
        if path.name in SKIPPED or path.name.endswith(".egg-info"):
            continue
        if path.is_dir():
            yield from _walk(path)
        else:
            yield path


@cache
def files_by_name() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in repo_files():
        found.setdefault(path.name, []).append(path)
    return found


@cache
def roots() -> frozenset[str]:
    """The folders a repository path starts with: the repository's own (not a `results/` a run left beside them)
    and src/layerbench's."""
    return frozenset((*TOP_FOLDERS, *(p.name for p in SRC.iterdir() if p.is_dir() and p.name not in SKIPPED)))


def python_prose(path: Path) -> Iterator[Prose]:
    """The docstrings and comments of one Python file."""
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                    first.value.value, str):
                yield Prose(path, first.lineno, first.value.value)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield Prose(path, token.start[0], token.string)


def page_prose(path: Path) -> Iterator[Prose]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        yield Prose(path, number, line)


def all_prose() -> Iterator[Prose]:
    """The docstrings and comments of src/, tests/ and bench/ (but this file's examples), and the pages."""
    for path in sorted((*SRC.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py"))):
        if path != Path(__file__).resolve():
            yield from python_prose(path)
    pages = (*(ROOT / "docs").rglob("*.md"), *(ROOT / "tests").rglob("*.md"))
    for path in [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted(pages)]:
        yield from page_prose(path)


def candidates(path: str, named_in: Path) -> list[Path]:
    """Where a relative path may be: from the repository, src/, src/layerbench, or the naming file's folders up."""
    bases = [ROOT, SRC.parent, SRC, *[p for p in named_in.parents if ROOT in (p, *p.parents)]]
    return [base / path for base in bases if (base / path).exists()]


@cache
def top_level_names(path: Path) -> dict[str, set[str]]:
    """The names a module defines at its top level, each with the names its class defines (empty for others)."""
    names: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        for name in _bound(node):
            names[name] = set()
        if isinstance(node, ast.ClassDef):
            names[node.name] = {name for child in node.body for name in _bound(child)}
    return names


def _bound(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, ast.AnnAssign) else []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def defines(module: Path, dotted: str) -> bool:
    """`name` or `Class.name` is defined at the top level of module (a .py file)."""
    names = top_level_names(module)
    first, _, rest = dotted.partition(".")
    return first in names and (not rest or rest in names[first])


def check_path(path: str, name: str | None, named_in: Path) -> str | None:
    """Why a path reference does not resolve, or None when it does (or is not one of ours); `report.{md,csv}` is
    each of report.md and report.csv."""
    if braces := re.search(r"\{([\w.,-]+)\}$", path):
        whys = [check_path(path[:braces.start()] + part, name, named_in) for part in braces.group(1).split(",")]
        return next((why for why in whys if why), None)
    if "/" not in path:
        if not path.endswith((".py", ".md")):
            return None  # `my.cnf`, `report.json`: a file the tool writes or the user keeps, not one of ours
        found = files_by_name().get(path, [])
        if not found:
            return f"no file {path} in the repository"
    else:
        if path.split("/")[0] not in roots() and not path.endswith(".py"):
            return None  # `read/write`, `results/1-demo/report.md`: prose with a slash, or the user's files
        found = candidates(path, named_in)
        if not found:
            return f"no {path} from the repository, src/, src/layerbench or {named_in.parent.relative_to(ROOT)}"
    if name and path.endswith(".py") and not any(defines(p, name) for p in found if p.is_file()):
        return f"{path} defines no {name}"
    return None


def check_dotted(dotted: str) -> str | None:
    """Why `layerbench.<dotted>` names no module of src/ (or no top-level name of it), or None."""
    parts = dotted.strip(".").split(".")
    folder = SRC
    for index, part in enumerate(parts):
        named = "layerbench." + ".".join(parts[:index + 1])
        if (folder / part).is_dir():
            folder = folder / part
            continue
        if not (folder / f"{part}.py").is_file():
            return f"no module or package {named}"
        rest = ".".join(parts[index + 1:index + 3])
        return None if not rest or defines(folder / f"{part}.py", rest) else f"{named} defines no {rest}"
    return None


@cache
def modules_by_stem() -> dict[str, list[Path]]:
    """The modules of src/ by the name they are imported as (`restore` for server/restore.py)."""
    found: dict[str, list[Path]] = {}
    for path in SRC.rglob("*.py"):
        if path.stem != "__init__":
            found.setdefault(path.stem, []).append(path)
    return found


def check_short(stem: str, name: str) -> str | None:
    """Why `module.Name` or `module.function()` (a module of src/ by its last name) is defined by no such module."""
    if any(defines(module, name) for module in modules_by_stem()[stem]):
        return None
    return f"no module {stem}.py of src/ defines {name}"


def references(prose: Prose) -> Iterator[tuple[str, str | None]]:
    """(reference, why it does not resolve or None) of each reference in a piece of prose."""
    text = URL.sub(" ", prose.text)
    if prose.file.suffix == ".md":
        for target in LINK.findall(text):
            target = target.split("#", 1)[0]
            if target and not (prose.file.parent / target).exists():
                yield target, f"no {target} beside {prose.file.name}"
        text = LINK.sub("] ", text)  # a link's target is checked beside its page, not as a path of the repository
    for match in PATH.finditer(text):
        path, name = match.group(1).rstrip("."), match.group(2)
        yield path + (f":{name}" if name else ""), check_path(path, name, prose.file)
    for match in DOTTED.finditer(text):
        yield match.group(0), check_dotted(match.group(1))
    for match in SHORT.finditer(text):
        if match.group(1) in modules_by_stem():
            yield match.group(0), check_short(match.group(1), match.group(2))


def broken(prose_pieces: Iterator[Prose]) -> list[str]:
    return [f"{p.file.relative_to(ROOT)}:{p.line}: {ref}: {why}" for p in prose_pieces
            for ref, why in references(p) if why and ref not in ALLOWED]


def test_every_reference_in_the_docs_and_docstrings_resolves() -> None:
    assert all((ROOT / folder).is_dir() for folder in TOP_FOLDERS)
    problems = broken(all_prose())
    assert not problems, "\n".join(problems)


def test_a_broken_reference_is_caught() -> None:
    here = SRC / "sysbench" / "command.py"
    good = Prose(here, 1, "sysbench/output.py, output.py:MARK and output.MARK; histogram.py, ../layerbench/paths.py; "
                          "docs/statistics.md. layerbench.store, layerbench.sysbench.output.MARK, restore.can_clone(); "
                          "records/run.py:Reset.from_json, tests/data/golden/store_v2_report.{md,csv}; read/write, "
                          "/etc/mysql, ~/.cache, https://x.io/a.py, results/1-demo/report.md, my.cnf, server.config, "
                          "tests/unit/test_<module>.py")
    assert broken(iter([good])) == []
    bad = Prose(here, 7, "latency_histogram.py; sysbench/nothing.py; output.py:NOTHING; output.NOTHING; "
                         "layerbench.nothing.store; layerbench.sysbench.output.NOTHING; tests/unit/test_nothing.py; "
                         "tests/data/golden/store_v2_report.{md,txt}; restore.nothing()")
    assert broken(iter([bad])) == [f"src/layerbench/sysbench/command.py:7: {problem}" for problem in (
        "latency_histogram.py: no file latency_histogram.py in the repository",
        "sysbench/nothing.py: no sysbench/nothing.py from the repository, src/, src/layerbench or "
        "src/layerbench/sysbench",
        "output.py:NOTHING: output.py defines no NOTHING",
        "tests/unit/test_nothing.py: no tests/unit/test_nothing.py from the repository, src/, src/layerbench or "
        "src/layerbench/sysbench",
        "tests/data/golden/store_v2_report.{md,txt}: no tests/data/golden/store_v2_report.txt from the repository, "
        "src/, src/layerbench or src/layerbench/sysbench",
        "layerbench.nothing.store: no module or package layerbench.nothing",
        "layerbench.sysbench.output.NOTHING: layerbench.sysbench.output defines no NOTHING",
        "output.NOTHING: no module output.py of src/ defines NOTHING",
        "restore.nothing: no module restore.py of src/ defines nothing")]
    page = Prose(ROOT / "docs" / "statistics.md", 3, "see [the campaign](campaign.md) and [gone](gone.md#x)")
    assert broken(iter([page])) == ["docs/statistics.md:3: gone.md: no gone.md beside statistics.md"]
