"""The strict base model of every mapping of the campaign file, and the patterns of its names."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A mapping of the campaign file: an unknown key is an error (a typo is never silently ignored), a value is
    never changed after validation, and no number is infinite or NaN (`.inf`, `.nan`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# A name the campaign file gives (a campaign, variant, workload, neighbour, host of `hosts:`): 1-63 characters.
NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"
# A Kubernetes object name (a node, a StorageClass, a VolumeSnapshotClass): a DNS-1123 subdomain.
DNS_SUBDOMAIN_RE = r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$"
# A Docker image reference: [registry[:port]/]path[:tag][@digest], lower-case path components.
IMAGE_RE = (r"^(?:[A-Za-z0-9.-]+(?::\d{1,5})?/)?[a-z0-9]+(?:[._-]+[a-z0-9]+)*(?:/[a-z0-9]+(?:[._-]+[a-z0-9]+)*)*"
            r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")
# An absolute path on one line (a datadir's folder, a disk neighbour's folder), at most MAX_PATH characters.
ABSOLUTE_PATH_RE = r"^/[^\x00-\x1f\x7f]*$"
