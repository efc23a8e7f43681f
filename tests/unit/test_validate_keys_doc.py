"""docs/validate.md "Keys added since the last hardening" is tied to the code: every key it lists exists in the
campaign's models, and every key of the models that names a file is listed, either as read by the bounded reader
(bounded_read.py; test_hostile_files.py checks that each of those goes through it at validate) or as a program that
is run, not read; and a scan of src/ finds no read (open, read_text, read_bytes, a YAML or kubeconfig loader) of
a value of those keys outside bounded_read.py."""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from tests.unit.test_hostile_files import WHERE

from layerbench.backends.registry import VARIANT_TYPES
from layerbench.campaign.models import Campaign

DOC = Path(__file__).resolve().parents[2] / "docs" / "validate.md"
FILE_WORDS = re.compile(r"(^|_)(file|kubeconfig|known_hosts|mysqld)$")  # a key that names a file by its name
RUN_NOT_READ = "a program, run"


def listed() -> dict[str, str]:
    """The section's table: key -> what is checked."""
    section = DOC.read_text().split("## Keys added since the last hardening", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `([^`]+)` \| (.+) \|$", section, re.MULTILINE)}


def models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in models_in(arg)]


def fields_of(model: type[BaseModel]) -> dict[str, Any]:
    """name -> FieldInfo of a model, or of every backend's variant for the campaign's variants."""
    if model.__name__ == "VariantBase" or model in [t for t in VARIANT_TYPES]:
        return {n: f for t in VARIANT_TYPES for n, f in t.model_fields.items()}
    return dict(model.model_fields)


def resolve(key: str) -> Any:
    """The FieldInfo a documented key names (`variants[].server.config`, `hosts.<name>.identity_file`)."""
    fields, found = fields_of(Campaign), None
    for part in key.replace("[]", "").split("."):
        if part == "<name>":
            continue
        assert part in fields, f"docs/validate.md lists {key}, but {part} is no key there"
        found = fields[part]
        nested = models_in(found.annotation)
        fields = fields_of(VARIANT_TYPES[0]) if part == "variants" else fields_of(nested[0]) if nested else {}
    return found


def file_keys() -> set[str]:
    """Every key of the models that names a file (by its name, or `a file` in its description), as a path."""
    found: set[str] = set()

    def walk(fields: dict[str, Any], prefix: str, seen: set[str]) -> None:
        for name, info in fields.items():
            path = f"{prefix}{name}"
            text_type = info.annotation in (str, str | None) or str(info.annotation).removeprefix(
                "typing.Optional[").startswith("typing.Annotated[str, ")  # PrintableLine (vocabulary/base.py)
            if text_type and (FILE_WORDS.search(name) or re.search(r"\ba (\w+ )?file\b", info.description or "")):
                found.add(path)
            for model in models_in(info.annotation):
                if model.__name__ not in seen:
                    inner = "[]" if typing.get_origin(info.annotation) is list or "list[" in str(info.annotation) \
                        else ".<name>" if "dict[" in str(info.annotation) else ""
                    walk(fields_of(model), f"{path}{inner}.", seen | {model.__name__})

    walk(fields_of(Campaign), "", {"Campaign"})
    return found


def test_every_listed_key_exists_in_the_models() -> None:
    keys = listed()
    assert len(keys) > 30
    for key in keys:
        resolve(key)


def test_every_key_that_names_a_file_is_listed_and_read_by_the_bounded_reader_or_run() -> None:
    keys, files = listed(), file_keys()
    assert {"variants[].password_file", "variants[].kubeconfig", "hosts.<name>.identity_file",
            "hosts.<name>.known_hosts", "variants[].mysqld"} <= files, files
    files.add("workloads[].test")  # a path when it is one (workload.is_lua_path): by its value, not its name
    for key in sorted(files):
        assert key in keys, f"{key} names a file: docs/validate.md lists what is checked for it"
        said = keys[key]
        assert "bounded reader" in said or RUN_NOT_READ in said, (key, said)
    read = {key for key in files if "bounded reader" in keys[key]}
    owner = {"hosts": "hosts.<name>", "workloads": "workloads[]", "variants": "variants[]"}
    spied = {f"{owner[where.split('.')[0]]}.{key}" for key, where in WHERE.items()}
    assert read == spied, "test_hostile_files.py checks that each of these is read through the bounded reader"



# --- every file a campaign's keys name is read by the bounded reader: a scan of the source --------------------------

SRC = Path(__file__).resolve().parents[2] / "src" / "layerbench"
READS = {"read_text", "read_bytes", "open", "load_kube_config", "new_client_from_config", "safe_load", "load"}
KEY_VALUE = re.compile(r"\.(password_file|kubeconfig|identity_file|known_hosts|test)\b|\bscript_path\(")
KEY_NAMES = {"password_file", "kubeconfig", "identity_file", "known_hosts", "script"}
NOT_THE_USERS = {  # reads the scan finds that are of no file a key names, and why
    ("sysbench/custom_script.py", "builtin_facts: script.read_bytes()"):
        "a test sysbench bundles, in its share folder: the workload's test is then a name (no /, campaign/workload.py)",
}


def unbounded_reads(source: str) -> list[str]:
    """Calls that read a file (READS) on a value of a file-naming key: named in the call (`.password_file`,
    `script_path(`), or through a variable of the function assigned from one, or a parameter of its name."""
    found = []
    for function in (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        tainted = {a.arg for a in function.args.args + function.args.kwonlyargs if a.arg in KEY_NAMES}
        for _ in range(3):  # assignments from assignments
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
                    text = ast.unparse(node.value)
                    if KEY_VALUE.search(text) or any(re.search(rf"\b{name}\b", text) for name in tainted):
                        tainted |= {t.id for t in node.targets}  # type: ignore[attr-defined]
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            text = ast.unparse(node)
            if name in READS and (KEY_VALUE.search(text) or any(re.search(rf"\b{t}\b", text) for t in tainted)):
                found.append(f"{function.name}: {text}")
    return found


def test_the_scan_finds_a_read_of_a_keys_file() -> None:
    planted = ("def f(variant):\n    path = Path(variant.password_file)\n    text = path.read_text()\n"
               "def g(kubeconfig):\n    config.load_kube_config(config_file=kubeconfig)\n"
               "def h(workload):\n    return open(script_path(workload)).read()\n")
    assert len(unbounded_reads(planted)) == 3
    assert unbounded_reads("def f(variant):\n    return read_user_file(variant.password_file, PASSWORD)\n") == []


def test_no_file_a_key_names_is_read_outside_the_bounded_reader() -> None:
    """Every read of a file a campaign's key names goes through bounded_read.py (read_user_file), which checks
    its type, bounds its size and decodes it strictly; nothing else in src/ opens or reads such a value."""
    found = {(str(path.relative_to(SRC)), read) for path in SRC.rglob("*.py") if path.name != "bounded_read.py"
             for read in unbounded_reads(path.read_text(encoding="utf-8"))}
    assert found == set(NOT_THE_USERS)
