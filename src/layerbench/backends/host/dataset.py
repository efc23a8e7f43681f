"""The dataset snapshots of a host variant on an ssh: host, prepared on that host by the variant's own server and
kept there: the harness never makes or holds their bytes.

- key: the dataset's inputs and the `--version` line of the server binary on the host (read over SSH), as a
  snapshot made here is keyed by this machine's server (server/snapshot.py);
- found: `<work_dir>/datasets/<key>/` on the host with its `meta.json` (written last: a build that died before it
  is no snapshot, and the next build starts that folder over), under the host's lock for that key
  (remote_files.host_lock: one build per dataset and host at a time);
- prepared: a server of the variant's own (backends/host/remote.py's RemoteHostBackend, the very code a run
  starts its server with) on an empty datadir initialised there (mariadb-install-db or mysqld
  --initialize-insecure of that host), `sysbench prepare` from the run's client host (the sysbench the runs use,
  over the network path the runs use), row counts and CHECKSUM TABLE once, a clean shutdown, the datadir moved
  into the snapshot's folder there, its manifest made there (server/remote_manifest.py), then `manifest.json`
  and `meta.json` written there. `meta.json`'s `prepared` names the host, the binary and its `--version` line;
- each run restores it there (remote_files.restore_on_host, every byte hashed against the host's manifest);
  `verify: checksum` runs CHECKSUM TABLE in another server of the variant's there, on its own restore."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from layerbench.endpoint import Endpoint
from layerbench.errors import RunFailed
from layerbench.hosts.inventory import Host
from layerbench.secrets import generate_password
from layerbench.server.datadir import query
from layerbench.server.manifest import EXCLUDED, MANIFEST_FILE, Manifest, SnapshotCorrupt
from layerbench.server.prepare import helper_settings, prepare_tables, table_facts
from layerbench.server.remote_files import host_lock, remote_snapshot
from layerbench.server.remote_manifest import manifest_script, parse_manifest
from layerbench.server.servers import ChosenServer, ServerProgram, server_fields
from layerbench.server.snapshot import Snapshot, dataset_key
from layerbench.server.spec import DatasetRequest, ServerSpec
from layerbench.server.tables import table_checksums, workload_tables
from layerbench.versions import version_on

META = "meta.json"
PREPARE_MEMORY, VERIFY_MEMORY = "1G", "128M"  # as Builder's and verify.py's private servers (helper_settings)


class ServerOnHost(Protocol):
    """What this module uses of a server on the host (RemoteHostBackend)."""

    folder: str | None

    def program(self, say: Callable[[str], None], log_dir: Path | None) -> ServerProgram: ...

    def up(self, spec: ServerSpec) -> Endpoint: ...

    def forget_password(self, user: str, database: str) -> None: ...

    def stop_server(self) -> None: ...

    def down(self) -> None: ...


def data_bytes(manifest: Manifest) -> int:
    """The tables' bytes (InnoDB's sbtest/*.ibd, or PostgreSQL's base/), as prepare.table_bytes counts them here."""
    if "PG_VERSION" in manifest.files:
        return sum(e.size for name, e in manifest.files.items() if name.startswith("base/"))
    return sum(e.size for name, e in manifest.files.items() if name.startswith("sbtest/") and name.endswith(".ibd")
               and name.count("/") == 1)


def read_host_manifest(host: Host, folder: Path) -> Manifest:
    """The manifest the host made of its snapshot `folder` (a path there); SnapshotCorrupt when it cannot be read
    (the snapshot is then removed there and prepared again)."""
    done = host.shell(f"cat {shlex.quote(str(folder))}/{MANIFEST_FILE}", name=f"manifest on {host.name}", timeout=120)
    try:
        return Manifest.from_json(json.loads(done.output))
    except ValueError as error:
        host.shell(f"rm -rf {shlex.quote(str(folder))}", name=f"rm on {host.name}", timeout=300)
        raise SnapshotCorrupt(f"dataset snapshot {folder.name} on host {host.name}: its manifest is unreadable "
                              f"({str(error)[:120]}); removed there, it is prepared again") from None


def publish_script(datadir: str, target: str) -> str:
    """Move a cleanly stopped server's datadir into the snapshot's folder, less the files no snapshot carries."""
    t = shlex.quote(target)
    excluded = " ".join(shlex.quote(f"{target}/datadir/{name}") for name in sorted(EXCLUDED))
    return f"set -e; rm -rf {t}; mkdir -p {t}; mv {shlex.quote(datadir)} {t}/datadir; rm -f {excluded}"


class SnapshotsOnHost:
    """The dataset snapshots `variant`'s server prepares on `host` (the HostDatasets of server/spec.py); `make`
    gives a fresh server of the variant there."""

    def __init__(self, variant: ChosenServer, host: Host, make: Callable[[], ServerOnHost]) -> None:
        self.variant, self.host, self.make = variant, host, make

    def identity(self, request: DatasetRequest) -> tuple[str, str]:
        """(binary, its `--version` line) of the variant's server on the host."""
        program = self.make().program(request.say, request.log_dir)
        done = version_on(self.host, program.command, name=f"server --version on {self.host.name}", timeout=60)
        said = done.output.strip()
        if done.returncode != 0 or not said:
            raise RunFailed(f"hosts.{self.host.name}: {program.program} --version failed there: {said[:200]}")
        return program.program, said

    def snapshot(self, request: DatasetRequest) -> Snapshot:
        binary, version = self.identity(request)
        key, inputs = dataset_key(request.workload, version, request.page_size)
        target = remote_snapshot(self.host, key)
        with host_lock(self.host, f"{target}.lock", f"dataset {key}"):
            found = self.kept(key, target)
            if found is not None:
                return found
            request.say(f"preparing dataset {key} on host {self.host.name} with its own {Path(binary).name}")
            prepared = {"where": f"host {self.host.name} ({self.host.target})", "host": self.host.name,
                        "binary": binary, "version": version}
            meta = self.build(request, key, target) | {"key": key, "inputs": inputs, "prepared": prepared,
                                                          "server": server_fields(self.variant)}
            self.host.shell(f"cat > {shlex.quote(target)}/{META}", input_text=json.dumps(meta, indent=2),
                            name=f"meta.json on {self.host.name}", timeout=60)
            return Snapshot(key, Path(target) / "datadir", meta, host=self.host.name)

    def kept(self, key: str, target: str) -> Snapshot | None:
        """The finished snapshot of `key` on the host (its meta.json names that key), or None."""
        done = self.host.shell(f"cat {shlex.quote(target)}/{META} 2>/dev/null; true", name=f"meta on {self.host.name}",
                               timeout=60)
        try:
            meta = json.loads(done.output)
        except ValueError:
            return None
        if not isinstance(meta, dict) or meta.get("key") != key:
            return None
        return Snapshot(key, Path(target) / "datadir", meta, host=self.host.name)

    def build(self, request: DatasetRequest, key: str, target: str) -> dict[str, Any]:
        """Prepare the dataset in a server of the variant's on the host and publish it into `target` there; the
        facts of meta.json that the build knows."""
        server, started = self.make(), time.monotonic()
        flavour = server.program(request.say, request.log_dir).flavour
        config = helper_settings(flavour, PREPARE_MEMORY, durable=False) | (
            {"innodb_page_size": request.page_size} if request.page_size else {})
        spec = ServerSpec("prepare", f"{request.label}-prepare", request.log_dir, request.private_dir,
                          request.log_dir, config=config, password=generate_password(),
                          listen_address=request.listen_address, say=request.say)
        try:
            endpoint = server.up(spec)
            prepare_tables(request.workload, endpoint, request.private_dir, request.log_dir, request.on_line,
                           client=request.client)
            facts = table_facts(endpoint, request.workload)
            if flavour.is_postgresql:  # the snapshot keeps the account without a password
                server.forget_password(endpoint.user, endpoint.database)
            else:
                query(endpoint, "SET GLOBAL innodb_buffer_pool_dump_at_shutdown = OFF")  # runs start cold
            server.stop_server()
            assert server.folder is not None
            self.host.shell(publish_script(f"{server.folder}/datadir", target), name=f"publish on {self.host.name}",
                            timeout=600)
        finally:
            server.down()
        hashed = self.host.shell(manifest_script(f"{target}/datadir"), name=f"manifest on {self.host.name}",
                                 timeout=None)
        if hashed.returncode != 0:
            raise RunFailed(f"hosts.{self.host.name}: hashing dataset {key} there failed: "
                            f"{(hashed.output.strip().splitlines() or ['no output'])[-1][:200]}")
        manifest = parse_manifest(hashed.output)
        self.host.shell(f"cat > {shlex.quote(target)}/{MANIFEST_FILE}", input_text=json.dumps(manifest.to_json()),
                        name=f"manifest.json on {self.host.name}", timeout=60)
        return {**facts, "created_at": time.time(), "data_bytes": data_bytes(manifest),
                "prepare_seconds": round(time.monotonic() - started, 2)}

    def checksums(self, snapshot: Snapshot, request: DatasetRequest) -> dict[str, int]:
        server = self.make()
        flavour = server.program(request.say, request.log_dir).flavour
        log_dir = request.log_dir / "verify"
        log_dir.mkdir(parents=True, exist_ok=True)
        spec = ServerSpec("verify", f"{request.label}-verify", log_dir, request.private_dir, log_dir,
                          config=helper_settings(flavour, VERIFY_MEMORY), password=generate_password(),
                          snapshot=snapshot.path,
                          listen_address=request.listen_address, say=request.say)
        try:
            endpoint = server.up(spec)
            return table_checksums(endpoint, workload_tables(endpoint, request.workload))
        finally:
            server.down()

    def forget(self, snapshot: Snapshot) -> None:
        self.host.shell(f"rm -rf {shlex.quote(str(snapshot.folder))}", name=f"rm on {self.host.name}", timeout=300)
