"""A server's files on an ssh: host of the inventory: the dataset snapshot, shipped there once and checked
against the snapshot's manifest, and each run's working copy, restored and checked there.

- ship: `rsync` over the host's own SSH options (and shared connection) into `<work_dir>/datasets/<key>/`;
  then `xxhsum -H2` on the host hashes every file (XXH3-128, the manifest's full hash) and each must match the
  manifest built on this machine; a `shipped.json` marker naming the manifest's digest lets later runs and
  campaigns reuse it. A snapshot whose marker does not match is shipped again. Shipping holds a lock on the
  host (`flock` there, held by one SSH session): a second campaign that needs the same snapshot on the same host
  waits for the first to finish, then reuses its copy instead of writing into it.
- restore: `cp -a --reflink=auto` on the host (a copy-on-write clone where its filesystem can), every file of
  the copy hashed against the manifest, written to disk, and dropped from the page cache (`dd ... nocache`) with
  the snapshot's own pages, so a run on another host starts as cold as one here (server/restore.py).
Parsing of what the host prints is pure (tests/unit/test_remote_server_units.py)."""

from __future__ import annotations

import hashlib
import json
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from layerbench.errors import RunFailed
from layerbench.hosts.inventory import SSH_FAILED, Host
from layerbench.hosts.procs import held
from layerbench.server.manifest import EXCLUDED, Manifest, SnapshotCorrupt, read_manifest
from layerbench.server.restore import FACTS_FILE, RestoreFacts
from layerbench.vocabulary.sizes import byte_text

SHIPPED = "shipped.json"
HASH_MARK = "LB-HASH"
NEEDED = ("rsync", "xxhsum", "cp", "dd", "find", "flock", "ss")  # ss: a free port there (pick_port)


def manifest_digest(manifest: Manifest) -> str:
    """One digest of the manifest's names, sizes and full hashes (what a shipped copy must hold)."""
    rows = sorted((name, e.size, e.xxh3_128) for name, e in manifest.files.items())
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:32]


def parse_hashes(text: str) -> dict[str, str]:
    """`LB-HASH <xxh128>  <relative path>` lines (xxhsum's output, marked) -> {path: hash}; others ignored."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith(HASH_MARK + " "):
            continue
        digest, sep, name = line[len(HASH_MARK) + 1:].partition("  ")
        if sep and len(digest) == 32 and all(c in "0123456789abcdef" for c in digest):
            out[name.removeprefix("./")] = digest
    return out


def hash_problems(manifest: Manifest, hashes: dict[str, str], where: str) -> list[str]:
    """Files of the manifest that are missing or hold other bytes on the host, and files it does not know."""
    problems = [f"{name}: missing on {where}" for name in sorted(set(manifest.files) - set(hashes))]
    files = sorted(manifest.files.items())
    problems += [f"{name}: its bytes on {where} differ from the snapshot's"
                 for name, entry in files if hashes.get(name, entry.xxh3_128) != entry.xxh3_128]
    extra = sorted(set(hashes) - set(manifest.files))
    problems += [f"{name}: on {where}, not in the snapshot's manifest" for name in extra
                 if name.rsplit("/", 1)[-1] not in EXCLUDED]
    return problems


def hash_script(folder: str) -> str:
    """Hash every regular file under folder, one marked line each (file names are MariaDB's: no newlines)."""
    quoted = shlex.quote(folder)
    excluded = " ".join(f"! -name {shlex.quote(n)}" for n in sorted(EXCLUDED))
    return (f"cd {quoted} && find . -type f {excluded} -print0 | xargs -0 -r xxhsum -H2 2>/dev/null | "
            f"sed 's/^/{HASH_MARK} /'")


def check_tools(host: Host) -> list[str]:
    """The programs a server on this host needs for its data, missing there (empty: all present)."""
    script = "; ".join(f"command -v {t} >/dev/null || echo MISSING {t}" for t in NEEDED)
    done = host.shell(script, name=f"tools on {host.name}", timeout=60)
    return [line.split()[1] for line in done.output.splitlines() if line.startswith("MISSING ")]


def runs_root(host: Host, data_dir: str | None) -> str:
    """Where a server's run folders live on an ssh: host: the variant's data_dir there, else <work_dir>/runs."""
    return (data_dir or host.work_dir + "/runs").rstrip("/")


def claim_run_folder(host: Host, data_dir: str | None, label: str) -> tuple[str, str]:
    """A run's folder on the host, noted in an owner record here and on the host before anything exists there (for
    down() and `layerbench clean` after a crash); returns (folder, owner label). Call with signals deferred."""
    from layerbench.hosts.host_owners import claim_on_host

    folder, owner = f"{runs_root(host, data_dir)}/{label}", f"{label}@{host.name}"
    claim_on_host(host, owner, folder)
    return folder, owner


def release_run_folder(host: Host, folder: str | None, owner: str | None) -> None:
    """Stop what runs from the folder and remove it; the owner record goes only when the host confirmed it (else
    `layerbench clean` reaches the host later). Never raises."""
    from layerbench.hosts import owners
    from layerbench.hosts.remote import remove_remote_folder

    if folder is not None and remove_remote_folder(host, folder) and owner:
        owners.forget(owner)


def storage_on_host(host: Host, folder: str) -> dict[str, object]:
    """Where a run's datadir lives on the host: its filesystem, device and mount options (as environment.py
    records them here), read from the host's /proc/self/mounts."""
    from pathlib import PurePosixPath

    from layerbench.hosts.procfs import mount_of

    done = host.shell(f"readlink -f {shlex.quote(folder)}; cat /proc/self/mounts", name=f"mounts on {host.name}",
                      timeout=30)
    real, _, mounts = done.output.partition("\n")
    mount = mount_of(PurePosixPath(real.strip() or folder), mounts) or {}
    return {"path": folder, "host": host.name, **mount}


def remote_snapshot(host: Host, key: str) -> str:
    return f"{host.work_dir}/datasets/{key}"


LOCKED = "LB-LOCKED"


@contextmanager
def host_lock(host: Host, path: str, what: str) -> Iterator[None]:
    """An exclusive `flock` on `path` on the host, held by one SSH session for the duration of the block. The
    lock goes with the session: when this process ends, however it ends, ssh's stdin closes, the remote `cat`
    sees end of file and flock lets go, so a killed harness never leaves a host locked."""
    q = shlex.quote(path)
    script = f"mkdir -p $(dirname {q}) && exec flock -x {q} sh -c 'echo {LOCKED}; exec cat > /dev/null'"
    with held(host.command(["sh", "-c", script]), timeout=30) as proc:
        assert proc.stdout is not None
        said = []  # ssh may speak first (a host's Banner, a warning): only the lock's own word counts
        for line in iter(proc.stdout.readline, ""):  # blocks while another campaign holds the lock (Ctrl-C ends it)
            if line.strip() == LOCKED:
                break
            said.append(line)
        else:  # end of output without the lock: ssh or flock failed
            output = "".join(said)
            if proc.wait(timeout=30) == SSH_FAILED:
                raise RunFailed(host.explain(output))
            raise RunFailed(f"hosts.{host.name}: cannot lock {what} there: "
                            f"{(output.strip().splitlines() or ['no answer'])[-1][:200]}")
        yield


def ship_snapshot(host: Host, folder: Path, log_dir: Path, say: Callable[[str], None]) -> dict[str, object]:
    """The snapshot `folder` (its datadir and manifest) on `host`: reused when its marker matches the manifest,
    else shipped and checked there, under the host's lock for that snapshot. Returns what happened, for the
    run's record."""
    manifest = read_manifest(folder)
    if manifest is None:
        raise RunFailed(f"dataset snapshot {folder.name} has no manifest; remove it (layerbench clean --datasets)")
    target = remote_snapshot(host, folder.name)
    with host_lock(host, f"{target}.lock", f"dataset {folder.name}"):
        return _ship_locked(host, folder, manifest, target, log_dir, say)


def _ship_locked(host: Host, folder: Path, manifest: Manifest, target: str, log_dir: Path,
                 say: Callable[[str], None]) -> dict[str, object]:
    digest = manifest_digest(manifest)
    marker = host.shell(f"cat {shlex.quote(target)}/{SHIPPED} 2>/dev/null; true", name=f"marker on {host.name}")
    if digest in marker.output:
        return {"shipped": False, "host": host.name, "path": target}
    started = time.monotonic()
    say(f"shipping dataset {folder.name} ({byte_text(manifest.total_bytes)}) to host {host.name} ({host.target})")
    host.shell(f"rm -f {shlex.quote(target)}/{SHIPPED} && mkdir -p {shlex.quote(target)}/datadir",
               name=f"mkdir on {host.name}")
    done = host.rsync_to(folder / "datadir", f"{target}/datadir", log_path=log_dir / "ship.log", timeout=None)
    if done.returncode != 0:
        raise RunFailed(f"hosts.{host.name}: shipping dataset {folder.name} failed: "
                        f"{(done.output.strip().splitlines() or ['no output'])[-1][:200]}")
    hashed = host.shell(hash_script(f"{target}/datadir"), name=f"xxhsum on {host.name}", timeout=None)
    problems = hash_problems(manifest, parse_hashes(hashed.output), f"host {host.name}")
    if problems:
        raise RunFailed(f"hosts.{host.name}: the shipped dataset {folder.name} does not match its manifest: "
                        f"{problems[0]}{f' (and {len(problems) - 1} more)' if len(problems) > 1 else ''}")
    seconds = round(time.monotonic() - started, 3)
    note = json.dumps({"manifest": digest, "seconds": seconds, "bytes": manifest.total_bytes})
    host.shell(f"cat > {shlex.quote(target)}/{SHIPPED}", input_text=note, name=f"marker on {host.name}")
    return {"shipped": True, "host": host.name, "path": target, "seconds": seconds, "bytes": manifest.total_bytes}


def restore_script(source: str, target: str) -> str:
    """Copy (or clone) source into target, hash the copy, write it out and drop both from the page cache."""
    s, t = shlex.quote(source), shlex.quote(target)
    drop = "dd of={} oflag=nocache conv=notrunc,fdatasync count=0 status=none"
    return (f"set -e; rm -rf {t}; mkdir -p $(dirname {t}); cp -a --reflink=auto {s} {t}; "
            f"{hash_script(target)}; "
            f"find {t} -type f -exec {drop} \\; ; "
            f"find {s} -type f -exec dd if={{}} iflag=nocache count=0 status=none \\;")


def restore_on_host(host: Host, folder: Path, datadir: str, facts_dir: Path,
                    manifest: Manifest | None = None) -> RestoreFacts:
    """A run's datadir on `host` from the snapshot of `folder` there (shipped, or prepared there: then its manifest
    is the host's, given), every byte checked against the manifest (xxh3-128 of the copy). Writes restore.json in
    facts_dir like a restore on this machine."""
    manifest = manifest or read_manifest(folder)
    if manifest is None:
        raise RunFailed(f"dataset snapshot {folder.name} has no manifest")
    started = time.monotonic()
    source = f"{remote_snapshot(host, folder.name)}/datadir"
    done = host.shell(restore_script(source, datadir), name=f"restore on {host.name}", timeout=None,
                      log_path=facts_dir / "restore-remote.log")
    if done.returncode != 0:
        raise RunFailed(f"hosts.{host.name}: restoring the dataset into {datadir} failed: "
                        f"{(done.output.strip().splitlines() or ['no output'])[-1][:200]}")
    problems = hash_problems(manifest, parse_hashes(done.output), f"host {host.name}")
    facts = RestoreFacts(f"copy on host {host.name} (cp --reflink=auto)", len(manifest.files), manifest.total_bytes,
                         round(time.monotonic() - started, 3),
                         f"xxh3-128 of every byte of the copy on host {host.name}", problems)
    (facts_dir / FACTS_FILE).write_text(json.dumps(asdict(facts)))
    if problems:
        host.shell(f"rm -rf {shlex.quote(remote_snapshot(host, folder.name))}", name=f"rm on {host.name}")
        raise SnapshotCorrupt(f"dataset snapshot {folder.name} on host {host.name}: {problems[0]} (removed there; "
                              "it is shipped again)")
    return facts
