"""`layerbench --version`'s answers per program (versions.py): the first line a program prints, `not found` when it
is absent, and what it did when it printed nothing. tests/unit/test_cli.py runs the whole command."""

from __future__ import annotations

import sys

from layerbench.versions import program_version


def test_the_first_line_a_program_prints() -> None:
    assert program_version(sys.executable, ["-c", "print(); print(' v1.2 '); print('v9')"]) == "v1.2"
    assert program_version(sys.executable, ["--version"]).startswith("Python 3.")  # on stdout or stderr


def test_an_absent_program_and_a_silent_one() -> None:
    assert program_version("layerbench-no-such-program", ["--version"]) == "not found"
    assert program_version("true", []).endswith(": printed no version (exit 0)")

