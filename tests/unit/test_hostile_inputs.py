"""Hostile campaign files at `validate`: every one exits 2 with one line naming a field or the file, and nothing
else (no traceback, no "internal error", no hang). The corpus is tests/data/hostile (see its README); a few
cases (a FIFO, a device, a folder, an oversized file) are made here, and hypothesis adds generated ones.

Time is bounded by construction (size limit, alias/merge budget, run cap computed without the schedule); the
alarm below only turns a hang into a failure instead of a stuck suite. Timings go to bench/hostile_validate.py.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layerbench.cli.main import main

CORPUS = Path(__file__).resolve().parent.parent / "data" / "hostile"
HANG_GUARD_SECONDS = 120


def validate(path: Path | str, *options: str) -> tuple[int, str]:
    err = io.StringIO()
    from layerbench.cli import terminal as cli

    # console._file, not .file: the property returns sys.stderr when unset, and restoring that would pin the
    # console to this test's capture for every later test
    old_file, old_debug = cli.console._file, cli.STATE["debug"]
    cli.console.file, cli.STATE["debug"] = err, False  # another test may have left --debug on
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(HANG_GUARD_SECONDS)
    try:
        with pytest.raises(SystemExit) as done, contextlib.redirect_stdout(io.StringIO()):
            main(["validate", *options, str(path)])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        cli.console._file, cli.STATE["debug"] = old_file, old_debug
    return int(done.value.code or 0), err.getvalue()


def _hung(signum: int, frame: object) -> None:
    raise AssertionError(f"validate did not answer within {HANG_GUARD_SECONDS} s")


def assert_one_line_bad_input(code: int, err: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "internal error" not in err and "Traceback" not in err
    assert len(lines[0]) < 1200


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.yaml")), ids=lambda p: p.stem)
def test_hostile_corpus_is_refused_in_one_line(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # relative paths in the corpus resolve here, not in the repo
    assert_one_line_bad_input(*validate(path))


def test_corpus_covers_every_category() -> None:
    counts = {kind: len(list(CORPUS.glob(f"{kind}-*.yaml"))) for kind in ("crash", "hang", "later", "inject")}
    assert min(counts.values()) >= 10, counts


def test_files_that_are_not_regular_files(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # reading it would block forever
    big = tmp_path / "big.yaml"
    big.write_bytes(b"name: x\n" + b"#" * (2 << 20))
    for path in (fifo, Path("/dev/zero"), tmp_path, big, tmp_path / "missing.yaml"):
        assert_one_line_bad_input(*validate(path))


def test_markup_in_the_file_name_is_printed_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "[bold red]x[blink].yaml"
    path.write_text("name: [")
    code, err = validate(path)
    assert_one_line_bad_input(code, err)
    assert "[bold red]x[blink].yaml" in err


VALID = yaml.safe_load((CORPUS / "README.md").read_text().split("```yaml\n", 1)[1].split("```", 1)[0])
HOSTILE_VALUES = st.one_of(
    st.sampled_from(["[bold]x[/]", "[/]", "\x1b[31m", "a\nb", "", " ", "-1", "=1+1", "0-99999999", "../..",
                     "\u202e", "%s%n", "{0}", "*", "&a", "<<"]),
    st.integers(min_value=-(10**30), max_value=10**30), st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(), st.none(), st.text(max_size=30),
    st.lists(st.integers(min_value=-5, max_value=10**6), max_size=5),
    st.dictionaries(st.text(max_size=8), st.integers(), max_size=3),
)


def paths(node: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += paths(value, (*prefix, index))
    return out


def replaced(doc: object, where: tuple, value: object) -> object:
    if not where:
        return value
    copy = dict(doc) if isinstance(doc, dict) else list(doc)  # type: ignore[call-overload]
    copy[where[0]] = replaced(copy[where[0]], where[1:], value)
    return copy


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_wrong_value_at_any_key_is_one_line(tmp_path: Path, data: st.DataObject) -> None:
    where = data.draw(st.sampled_from(paths(VALID)[1:]))
    value = data.draw(HOSTILE_VALUES)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(replaced(VALID, where, value), allow_unicode=True))
    code, err = validate(path)
    if code != 0:  # some replacements are valid values (a bool where a bool is asked)
        assert_one_line_bad_input(code, err)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["alias", "merge", "nest", "flow"]), width=st.integers(2, 12), depth=st.integers(3, 60))
def test_expansion_bombs_and_deep_nesting_are_refused(tmp_path: Path, kind: str, width: int, depth: int) -> None:
    text = bomb(kind, width, depth)
    path = tmp_path / "bomb.yaml"
    path.write_text(text + (CORPUS / "README.md").read_text().split("```yaml\n", 1)[1].split("```", 1)[0])
    code, err = validate(path)
    if code != 0:
        assert_one_line_bad_input(code, err)
    else:  # a small one: it fits the bounds, and the campaign does not accept the extra key, so never here
        raise AssertionError(err)


def bomb(kind: str, width: int, depth: int) -> str:
    if kind == "nest":
        return "x: " + "[" * depth * 3 + "]" * depth * 3 + "\n"
    if kind == "flow":
        return "x: " + "{a: " * depth + "1" + "}" * depth + "\n"
    text = "b0: &b0 {k: 1}\n" if kind == "merge" else "b0: &b0 [1]\n"
    for level in range(1, min(depth, 25)):
        refs = ", ".join([f"*b{level - 1}"] * width)
        text += f"b{level}: &b{level} {{<<: [{refs}]}}\n" if kind == "merge" else f"b{level}: &b{level} [{refs}]\n"
    return text


def test_a_key_refused_by_its_pattern_says_what_it_takes_not_the_regular_expression(tmp_path: Path) -> None:
    """client_image (kubernetes) and the neighbours' image are checked by a pattern: the line names the form."""
    path = tmp_path / "k.yaml"
    for value in ("a\nb", "[/x]", "Bad Image"):
        path.write_text(yaml.safe_dump({
            "name": "k", "baseline": "k", "repetitions": 3, "workload": {"tables": 1, "table_size": 10},
            "variants": [{"name": "k", "backend": "kubernetes", "client": "job", "client_image": value}]}))
        code, err = validate(path)
        assert_one_line_bad_input(code, err)
        assert "variants[0].client_image: " in err and "is not an image reference" in err, err
        assert "should match pattern" not in err and "(?:" not in err, err
