"""docs/validate.md "Keys added since the last hardening" is tied to the code: every key it lists exists in the
campaign's models, and every key of the models that names a file is listed, either as read by the bounded reader
(bounded_read.py; test_hostile_files.py checks that each of those goes through it at validate) or as a program that
is run, not read."""

from __future__ import annotations

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
            text_type = info.annotation in (str, str | None)
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

