"""Bounded reading of a user's file (boundedyaml.py, the YAML; bounded_read.py, the file), at the module: what
the loader refuses before it expands anything, and what the reader refuses before it reads.
tests/unit/test_hostile_inputs.py sends the same kinds of file through `validate`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from layerbench.bounded_read import FileKind, read_user_file
from layerbench.boundedyaml import (
    MAX_ALIASES,
    MAX_DEPTH,
    MAX_NODES,
    MAX_SCALAR_CHARS,
    load_text,
)
from layerbench.errors import BadInput


def test_plain_yaml_with_a_merge_key_reads() -> None:
    text = "base: &b {threads: 4}\nvariant:\n  <<: *b\n  name: a\n"
    assert load_text(text, "c.yaml") == {"base": {"threads": 4}, "variant": {"threads": 4, "name": "a"}}
    assert load_text("", "c.yaml") is None


@pytest.mark.parametrize(("text", "refusal"), [
    ("a: 1\nb: 2\na: 3\n", r"^c\.yaml: refused: line 3: key 'a' appears twice in one mapping; keep one$"),
    ("a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n", rf"nesting deeper than {MAX_DEPTH} levels"),
    ("a: &a [1]\n" + "".join(f"b{i}: *a\n" for i in range(MAX_ALIASES + 1)), rf"more than {MAX_ALIASES} aliases"),
    ("a: " + "x" * (MAX_SCALAR_CHARS + 1) + "\n", rf"a value of {MAX_SCALAR_CHARS + 1:,} characters"),
    ("a: !!set {x: null}\n", r"line 1: the tag set has no place in a campaign"),
    ("a: [1\n", r"^c\.yaml: malformed YAML at line 2, column 1: "),
])
def test_what_the_loader_refuses_in_one_line(text: str, refusal: str) -> None:
    with pytest.raises(BadInput, match=refusal):
        load_text(text, "c.yaml")


def test_an_alias_bomb_is_refused_before_it_is_expanded() -> None:
    levels = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 6)]  # 10**6 values
    with pytest.raises(BadInput, match=rf"aliases and merges expand to more than {MAX_NODES:,} values"):
        load_text("\n".join(levels) + "\n", "bomb.yaml")


def test_the_reader_takes_a_small_regular_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: é\n", encoding="utf-8")
    assert read_user_file(path, FileKind("campaign file", 1 << 20, "fix")) == "name: é\n"


@pytest.mark.parametrize(("make", "refusal"), [
    (lambda p: None, r"c\.yaml': no such campaign file; check the path$"),
    (lambda p: p.mkdir(), r"c\.yaml': a folder, not a regular file; give the path of a campaign file$"),
    (lambda p: os.mkfifo(p), r"c\.yaml': a FIFO, not a regular file"),
    (lambda p: p.write_bytes(b"x" * 101), r"c\.yaml': 101 bytes; a campaign file is at most 100 bytes$"),
    (lambda p: p.write_bytes(b"a: \xff\n"), r"c\.yaml': not UTF-8 text \(byte 3\); save it as UTF-8$"),
])
def test_what_the_reader_refuses_in_one_line(tmp_path: Path, make, refusal: str) -> None:
    path = tmp_path / "c.yaml"
    make(path)
    with pytest.raises(BadInput, match=refusal):
        read_user_file(path, FileKind("campaign file", 100, "check the path"))
