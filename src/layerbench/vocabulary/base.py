"""The strict base model of every mapping of the campaign file, and the patterns of its names."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from layerbench.errors import shown
from layerbench.vocabulary.limits import MAX_TEXT


class Strict(BaseModel):
    """A mapping of the campaign file: an unknown key is an error (a typo is never silently ignored), a value is
    never changed after validation, and no number is infinite or NaN (`.inf`, `.nan`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# A name the campaign file gives (a campaign, variant, workload, neighbour, host of `hosts:`): 1-63 characters.
NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"
# A Kubernetes object name (a node, a StorageClass, a VolumeSnapshotClass): a DNS-1123 subdomain.
DNS_SUBDOMAIN_RE = r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$"
# A Docker image reference: [registry[:port]/]path[:tag][@digest], lower-case path components.
IMAGE_RE = (r"^(?:[A-Za-z0-9.-]+(?::[0-9]{1,5})?/)?[a-z0-9]+(?:[._-]+[a-z0-9]+)*(?:/[a-z0-9]+(?:[._-]+[a-z0-9]+)*)*"
            r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")
# An absolute path on one line (a datadir's folder, a disk neighbour's folder), at most MAX_PATH characters.
ABSOLUTE_PATH_RE = r"^/[^\x00-\x1f\x7f-\x9f]*$"

# What a terminal reads as a command, not as text: C0 controls but tab and newline (ESC starts an escape sequence),
# DEL, and the C1 controls (U+0080-U+009F; U+009B is CSI, an escape sequence in one character; YAML writes them
# as "\x9b" or "\x85")
TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable_text(value: str) -> str:
    """Text for people (a description, a citation): ValueError when it holds a control character."""
    found = TERMINAL_CONTROL.search(value)
    if found:
        raise ValueError(f"{shown(found.group())} at character {found.start() + 1} is a control character a "
                         "terminal would act on; remove it")
    return value


# A description, a citation: at most MAX_TEXT characters, newlines and tabs allowed, no other control character
Text = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(printable_text)]


def printable_line(value: str) -> str:
    """A path or a name that reaches a command line or a file as it is (a program, a folder, a user name): one
    line of printable characters (UTF-8 allowed, as Linux paths and MySQL user names take it); no control
    character, no bidi override (U+202E shows the text other than it is), no space but U+0020."""
    bad = next((c for c in value if not c.isprintable()), None)
    if bad is not None:
        raise ValueError(f"{shown(bad)} at character {value.index(bad) + 1} is not a printable character; "
                         "write it without")
    return value


PrintableLine = Annotated[str, AfterValidator(printable_line)]
