"""sysbench as a Kubernetes Job (variant `client: job`): the server's image, its config file and report hook
from a Secret mounted read-only (the config holds the password), the report lines read from the pod's log."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from layerbench.backends import kubernetes_manifests as manifests
from layerbench.backends.base import ServerSpec
from layerbench.backends.docker_client import collect_stream, rewrite
from layerbench.campaign import KubernetesVariant
from layerbench.errors import RunFailed
from layerbench.procs import Completed, record_command
from layerbench.secrets import Secret, redact


class JobClient:
    def __init__(self, api: Any, ns: str, image: str, spec: ServerSpec, variant: KubernetesVariant) -> None:
        from kubernetes import client

        self.core, self.batch = client.CoreV1Api(api), client.BatchV1Api(api)
        self.ns, self.image, self.spec, self.variant = ns, image, spec, variant

    def run_client(self, cmd: list[str], files: dict[str, str], *, log_path: Path, timeout: float,
                   on_line: Any = None, secrets: list[Secret] | None = None) -> Completed:
        secrets = secrets or []
        args = rewrite(cmd, files)  # the files are mounted where the Docker client mounts them
        record_command(log_path.parent, ["kubernetes job", self.image, *args], secrets)
        labels = manifests.labels(self.spec.campaign, self.spec.label, "client")
        self.core.create_namespaced_secret(self.ns, manifests.secret("sysbench-client", self.ns, files, labels))
        self.batch.create_namespaced_job(self.ns, manifests.client_job(
            self.image, self.ns, args, labels, node_selector=self.variant.node_selector or None))
        deadline = time.monotonic() + timeout
        try:
            pod = self._wait_started(deadline)
            output = self._stream(pod, log_path, on_line, secrets)
            return Completed(self._exit_code(pod, deadline), output)
        except RunFailed:
            raise
        except Exception as error:
            raise RunFailed(f"sysbench job failed: {type(error).__name__}: {redact(str(error), secrets)}") from None

    def _pod(self) -> Any:
        pods = self.core.list_namespaced_pod(self.ns, label_selector="job-name=sysbench").items
        return pods[0] if pods else None

    def _wait_started(self, deadline: float) -> str:
        while time.monotonic() < deadline:
            pod = self._pod()
            if pod is not None and pod.status.phase in ("Running", "Succeeded", "Failed"):
                return str(pod.metadata.name)
            for status in (pod.status.container_statuses or []) if pod else []:
                waiting = status.state.waiting if status.state else None
                if waiting and waiting.reason not in (None, "ContainerCreating", "PodInitializing"):
                    raise RunFailed(f"sysbench job pod: {waiting.reason}: {waiting.message or ''}".strip())
            time.sleep(0.3)
        raise RunFailed("sysbench job did not start before its deadline")

    def _stream(self, pod: str, log_path: Path, on_line: Any, secrets: list[Secret]) -> str:
        response = self.core.read_namespaced_pod_log(pod, self.ns, container="sysbench", follow=True,
                                                     _preload_content=False)
        try:
            return collect_stream(response.stream(4096), log_path, on_line, secrets)
        finally:
            response.release_conn()

    def _exit_code(self, pod_name: str, deadline: float) -> int:
        while time.monotonic() < deadline:
            pod = self.core.read_namespaced_pod(pod_name, self.ns)
            for status in pod.status.container_statuses or []:
                if status.state and status.state.terminated:
                    return int(status.state.terminated.exit_code)
            time.sleep(0.3)
        raise RunFailed("sysbench job did not finish before its deadline")
