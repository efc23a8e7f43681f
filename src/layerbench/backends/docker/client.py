"""sysbench in a container (variant `client: container`): the same image as the server, on the server's network,
with its config file and report hook mounted read-only, never passed through argv or the environment."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from layerbench.backends.base import ServerSpec
from layerbench.errors import RunFailed
from layerbench.hosts.client_files import CLIENT_DIR, collect_stream, rewrite
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.lease import LEASE_LABEL, local_lease
from layerbench.hosts.procs import Completed, record_command
from layerbench.secrets import Secret, redact, write_private


class ContainerClient:
    where = "a container on the server's network"

    def __init__(self, client: Any, image: str, network: str, spec: ServerSpec, cpus: str | None) -> None:
        self.client, self.image, self.network, self.spec, self.cpus = client, image, network, spec, cpus

    def run_client(self, cmd: list[str], files: dict[str, str], *, log_path: Path, timeout: float,
                   on_line: Any = None, secrets: list[Secret] | None = None) -> Completed:
        folder = Path(tempfile.mkdtemp(prefix="lb-client-", dir=self.spec.private_dir))
        for name, text in files.items():
            write_private(folder / name, text)
        args = rewrite(cmd, files)
        record_command(log_path.parent, ["docker run", self.image, *args], secrets or [])
        container = None
        try:
            with signals_deferred():  # created and known to the finally below, with no signal in between
                container = self.client.containers.create(
                    self.image, args, name=f"{self.spec.label}-client", detach=True,
                    labels={"layerbench": "1", "layerbench.campaign": self.spec.campaign,
                            "layerbench.label": self.spec.label, "layerbench.role": "client",
                            "layerbench.harness": str(os.getpid()), LEASE_LABEL: local_lease()},
                    volumes={str(folder.resolve()): {"bind": CLIENT_DIR, "mode": "ro"}},
                    **({"network_mode": "host"} if self.network == "host" else {"network": self.network}),
                    **({"cpuset_cpus": self.cpus} if self.cpus else {}))
            container.start()
            output = self._stream(container, log_path, on_line, secrets or [])
            code = int(container.wait(timeout=timeout).get("StatusCode", 1))
        except Exception as error:
            message = redact(str(error), secrets or [])
            raise RunFailed(f"sysbench container failed: {type(error).__name__}: {message}") from None
        finally:
            with signals_deferred(), contextlib.suppress(Exception):
                if container is not None:
                    container.remove(force=True)
            shutil.rmtree(folder, ignore_errors=True)
        return Completed(code, output)

    @staticmethod
    def _stream(container: Any, log_path: Path, on_line: Any, secrets: list[Secret]) -> str:
        return collect_stream(container.logs(stream=True, follow=True), log_path, on_line, secrets)


__all__ = ["CLIENT_DIR", "ContainerClient", "rewrite"]
