"""Secrets: generated passwords, a wrapper that never prints itself, redaction of text, private files."""

from __future__ import annotations

import os
import secrets as _random
import string
from collections.abc import Iterable
from pathlib import Path

from layerbench.bounded_read import PASSWORD_FILE, read_user_file
from layerbench.errors import BadInput

REDACTED = "********"


class Secret:
    """A string that prints as ******** in repr/str/f-strings/logs; `.reveal()` gives the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({REDACTED})"

    def __str__(self) -> str:
        return REDACTED

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def generate_password(length: int = 24) -> Secret:
    alphabet = string.ascii_letters + string.digits
    return Secret("".join(_random.choice(alphabet) for _ in range(length)))


def redact(text: str, secrets: Iterable[Secret | str | None]) -> str:
    """Replace every occurrence of each secret's value in text."""
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if value:
            text = text.replace(value, REDACTED)
    return text


def write_private(path: Path, content: str) -> Path:
    """Write a file readable only by its owner (0600), created with that mode from the start."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content)
    return path


def read_secret_from(env: str | None = None, file: str | None = None, where: str = "") -> Secret | None:
    """A user password, only ever from an environment variable or a file, never the campaign itself: one line of
    printable text (it goes into sysbench's config file, where a second line would be a second option), the file
    read within bounds (bounded_read.py). `where`: the variant's key prefix for the one-line refusals."""
    if env:
        value = os.environ.get(env)
        if value is None:
            raise BadInput(f"{where}password_env: environment variable {env} is not set; export it before the run")
        if not value.isprintable():  # empty is a user without a password
            raise BadInput(f"{where}password_env: {env} holds a newline or a control character; set it to the "
                           "password alone, on one line of printable text")
        return Secret(value)
    if file:
        return Secret(read_user_file(Path(file).expanduser(), PASSWORD_FILE, f"{where}password_file").strip())
    return None
