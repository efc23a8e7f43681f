"""Every command's --help keeps the bracketed text its source gives ([default: ...], [threads]: Rich markup once
ate them), and docs/cli.md is what the command line prints today (scripts/gen-cli-docs regenerates it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from layerbench.cli.doc import commands, help_text, render
from layerbench.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
BRACKETED = re.compile(r"\[[^\[\]]+\]")
COMMANDS = commands()


def flat(text: str) -> str:
    return " ".join(text.split())


def source_texts(command) -> list[str]:
    texts = [command.help or ""]
    texts += [getattr(param, "help", None) or "" for param in command.params]
    return texts


def test_every_command_is_rendered() -> None:
    paths = [path for path, _, _ in COMMANDS]
    for name in ("run", "resume", "validate", "list", "show", "report", "compare", "import", "clean", "init",
                 "doctor", "cache list", "cache clear", "image build"):
        assert f"layerbench {name}" in paths


def printed_help(path: str, capsys: pytest.CaptureFixture[str]) -> str:
    """What `<path> --help` prints, through the real entry point."""
    with pytest.raises(SystemExit) as done:
        main([*path.split()[1:], "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(("path", "command", "ctx"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_help_keeps_every_bracketed_text(path: str, command, ctx, capsys) -> None:
    rendered = flat(printed_help(path, capsys))
    assert rendered.startswith(f"Usage: {path}")
    wanted = [found for text in source_texts(command) for found in BRACKETED.findall(flat(text))]
    assert [w for w in wanted if w not in rendered] == [], path


def test_the_bracket_check_would_catch_a_lost_default() -> None:
    assert BRACKETED.findall("SQLite store [default: results/layerbench.db]") == ["[default: results/layerbench.db]"]
    _, command, ctx = next(c for c in COMMANDS if c[0] == "layerbench list")
    assert "[default: $LAYERBENCH_DB, else results/layerbench.db]" in flat(help_text(command, ctx))


def test_import_help_shows_the_optional_threads_column() -> None:
    _, command, ctx = next(c for c in COMMANDS if c[0] == "layerbench import")
    assert "[threads]" in flat(help_text(command, ctx))


def test_docs_cli_md_is_up_to_date() -> None:
    assert (ROOT / "docs" / "cli.md").read_text() == render(), "run scripts/gen-cli-docs and commit docs/cli.md"
