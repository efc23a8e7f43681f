"""Secrets: generated passwords, a wrapper that never prints itself, redaction of text, private files."""

from __future__ import annotations

import os
import secrets as _random
import string
from collections.abc import Iterable
from pathlib import Path

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


def read_secret_from(env: str | None = None, file: str | None = None) -> Secret | None:
    """A user password, only ever from an environment variable or a file, never the campaign itself."""
    if env:
        value = os.environ.get(env)
        if value is None:
            from layerbench.errors import BadInput

            raise BadInput(f"password_env: environment variable {env} is not set; export it before the run")
        return Secret(value)
    if file:
        try:
            return Secret(Path(file).expanduser().read_text(encoding="utf-8").strip())
        except OSError:
            from layerbench.errors import BadInput

            raise BadInput(f"password_file: {file} cannot be read; check the path and permissions") from None
    return None
