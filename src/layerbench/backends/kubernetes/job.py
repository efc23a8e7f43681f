"""sysbench as a Kubernetes Job (variant `client: job`): the server's image, its config file and report hook
from a Secret mounted read-only (the config holds the password), the report lines read from the pod's log. Every
step that talks to the server (cleanup, prepare, run) is a Job of its own in the run's namespace, so a study
works on a cluster whose Service addresses this host cannot reach."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from layerbench.backends.base import ServerSpec
from layerbench.backends.kubernetes import access, manifests
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.errors import RunFailed
from layerbench.hosts.client_files import collect_stream, rewrite
from layerbench.hosts.procs import Completed, record_command
from layerbench.secrets import Secret, redact


class JobClient:
    where = "a Job in the cluster"

    def __init__(self, api: Any, ns: str, image: str, spec: ServerSpec, variant: KubernetesVariant, *,
                 server: tuple[str, int], placement: dict[str, Any] | None = None) -> None:
        from kubernetes import client

        self.core, self.batch = client.CoreV1Api(api), client.BatchV1Api(api)
        self.ns, self.spec, self.variant, self.server = ns, spec, variant, server
        self.image = manifests.client_image(variant, image)  # beside MySQL: the image that has sysbench
        self.name = "sysbench"
        self.placement = placement if placement is not None else {}  # the backend's record: nodes, read back

    def run_client(self, cmd: list[str], files: dict[str, str], *, log_path: Path, timeout: float,
                   on_line: Any = None, secrets: list[Secret] | None = None) -> Completed:
        secrets = secrets or []
        args = rewrite(cmd, files)  # the files are mounted where the Docker client mounts them
        self.name = job_name(cmd)
        record_command(log_path.parent, ["kubernetes job", self.name, self.image, *args], secrets)
        labels = manifests.labels(self.spec.campaign, self.spec.label, "client")
        secret = f"{self.name}-files"
        with access.readable_403(f"variants.{self.variant.name}.client"):
            self.core.create_namespaced_secret(self.ns, manifests.secret(secret, self.ns, files, labels))
            self.batch.create_namespaced_job(self.ns, manifests.client_job(
                self.image, self.ns, wait_for_server(*self.server, args, rtt=self.name in MEASURED), labels,
                name=self.name, secret=secret,
                placement=manifests.client_placement(self.variant, manifests.labels(
                    self.spec.campaign, self.spec.label, "server"))))
        deadline = time.monotonic() + timeout
        try:
            pod = self._wait_started(deadline)
            self._record_node(pod)
            output = self._stream(pod, log_path, on_line, secrets)
            self._record_rtt(output)
            return Completed(self._exit_code(pod, deadline), output)
        except RunFailed:
            raise
        except Exception as error:
            raise RunFailed(f"sysbench job failed: {type(error).__name__}: {redact(str(error), secrets)}") from None

    def _pod(self) -> Any:
        pods = self.core.list_namespaced_pod(self.ns, label_selector=f"job-name={self.name}").items
        return pods[0] if pods else None

    def _record_node(self, pod: str) -> None:
        """The node the scheduler chose for this step's pod, as the API reports it (spec.nodeName)."""
        node = self.core.read_namespaced_pod(pod, self.ns).spec.node_name
        self.placement.setdefault("client_nodes", {})[self.name] = node
        if self.name in MEASURED:
            self.placement["client_node"] = node
            self.placement["network_path"] = network_path(self.placement.get("server_node"), node,
                                                          self.variant.client_target)

    def _record_rtt(self, output: str) -> None:
        """The run Job's connect times to the server (µs), measured before sysbench started."""
        times = parse_rtt(output) if self.name in MEASURED else []
        if times:
            self.placement |= {"rtt_us": times, "rtt_median_us": sorted(times)[len(times) // 2]}

    def _wait_started(self, deadline: float) -> str:
        while time.monotonic() < deadline:
            pod = self._pod()
            if pod is not None and pod.status.phase in ("Running", "Succeeded", "Failed"):
                return str(pod.metadata.name)
            unschedulable = unschedulable_reason(pod)
            if unschedulable:
                raise RunFailed(f"sysbench job pod cannot be scheduled: {unschedulable}; check "
                                f"variants.{self.variant.name}.client_node_selector and client_anti_affinity")
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


def unschedulable_reason(pod: Any) -> str | None:
    """The scheduler's own message when it found no node for the pod (condition PodScheduled=False,
    reason Unschedulable): a node selector or anti-affinity no node satisfies. Failing on it at once beats
    waiting for the run's deadline; the scheduler re-tries only when nodes change, which a benchmark should not
    wait for."""
    for condition in (pod.status.conditions or []) if pod is not None and pod.status else []:
        if condition.type == "PodScheduled" and condition.status == "False" and condition.reason == "Unschedulable":
            return str(condition.message or "no node fits")
    return None


MEASURED = ("sysbench-run", "pgbench-run")  # the Jobs of the measured window: their connect times are recorded


def job_name(cmd: list[str]) -> str:
    """One Job per step in a run's namespace: sysbench-cleanup, sysbench-prepare, sysbench-run (and a dataset
    made in the cluster's server stopped by mariadb-admin's `shutdown` or MySQL's `SHUTDOWN`: sysbench-shutdown,
    seed.shutdown_command); a pgbench workload's pgbench-init, pgbench-warmup and pgbench-run (its measured run
    is the one with per-statement latencies: pgbench/command.py run_argv)."""
    if any(part.rsplit("/", 1)[-1] == "pgbench" for part in cmd):
        return "pgbench-init" if "--initialize" in cmd else \
            "pgbench-run" if "--report-per-command" in cmd else "pgbench-warmup"
    last = cmd[-1].lower() if cmd else ""
    step = last if last in ("cleanup", "prepare", "shutdown") else "run"
    return f"sysbench-{step}"


WAIT_SECONDS = 60
RTT_CONNECTS = 5
RTT_PREFIX = "layerbench-rtt-us:"
RTT_SCRIPT = ('for _ in $(seq $4); do t0=$EPOCHREALTIME; if exec 3<>"/dev/tcp/$1/$2"; then t1=$EPOCHREALTIME; '
              'exec 3>&-; r="$r $(( ${t1/./} - ${t0/./} ))"; fi; done 2>/dev/null; echo "' + RTT_PREFIX + '$r"; ')


def wait_for_server(host: str, port: int, args: list[str], rtt: bool = False) -> list[str]:
    """`args` behind a bounded wait, inside the Job, until the server address accepts TCP: a pod is Ready
    before its Service's endpoints and kube-proxy rules catch up, and sysbench does not retry a refused
    connection. After the wait sysbench runs anyway and reports what it finds. With `rtt`, first RTT_CONNECTS
    timed TCP connects (bash's $EPOCHREALTIME around connect(): one SYN/SYN-ACK round trip each, in µs, no ICMP),
    printed on one line that parse_rtt reads back."""
    script = ('for _ in $(seq $((2 * $3))); do (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && break; sleep 0.5; '
              f'done; {RTT_SCRIPT if rtt else ""}shift 4; exec "$@"')
    return ["bash", "-c", script, "wait-for-server", host, str(port), str(WAIT_SECONDS), str(RTT_CONNECTS), *args]


def parse_rtt(output: str) -> list[int]:
    """The connect times the Job printed (wait_for_server with rtt), in µs; [] when there is no such line."""
    for line in output.splitlines():
        if line.startswith(RTT_PREFIX):
            return [int(x) for x in line.removeprefix(RTT_PREFIX).split() if x.isdigit()]
    return []


def network_path(server_node: str | None, client_node: str | None, target: str) -> str:
    """Where a Job's packets go: between the nodes' pod networks (routed, a veth and the other node's bridge) or
    on the server's node (its bridge), to the Service's cluster IP (kube-proxy's DNAT) or straight to the pod IP."""
    where = "cross-node (routed between the nodes' pod networks)" if server_node != client_node else \
        "on-node (the node's bridge)"
    return f"{where}, via the {'Service cluster IP (kube-proxy)' if target == 'service' else 'pod IP'}"
