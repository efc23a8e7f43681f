"""A harness's heartbeat in the cluster, so that `layerbench clean` on any machine can tell what a dead harness
left from what a live one is using (issue #41, item 6).

A PID and a hostname (the `layerbench.harness` and `layerbench.host` labels) say whether a harness is alive only
to a `clean` on the same machine; a CI runner that was killed and replaced has another hostname. So every
namespace a harness creates (a run's, a seed's) gets a coordination.k8s.io/v1 Lease `layerbench-harness-<token>`
(holderIdentity: the process's random token, lease.harness_id(); every object it labels carries that token as
`layerbench.owner`), and in namespace-scoped mode the one shared namespace gets it at the first run. A daemon
thread renews each Lease every RENEW s while the process lives; a namespace that is gone drops out of it.

`clean` on another machine reads the Lease in the object's namespace: renewed within STALE s, its harness is live
and nothing is touched; older, or missing from a namespace older than GRACE s (a harness killed between
creating the namespace and its Lease), the harness is gone. Times are the API server's (its HTTP Date header),
never the two machines' clocks: a harness writes renewTime as its own clock plus the offset to the server's that
it measured when it made the Lease, and a cleaner compares with the server's Date at the time it reads."""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import threading
import time
from email.utils import parsedate_to_datetime
from typing import Any

from layerbench.backends.kubernetes import cluster
from layerbench.hosts import lease

PREFIX = "layerbench-harness-"
DURATION = 30  # leaseDurationSeconds: what the Lease says to other readers
RENEW = 10.0  # seconds between renewals
STALE = 45.0  # a Lease not renewed for this long (server time): its harness is gone (4 renewals missed)
GRACE = 45.0  # a namespace without a Lease this old (server time): its harness died before making one
OWNER_LABEL = "layerbench.owner"


def lease_name(token: str) -> str:
    return f"{PREFIX}{token}"


def server_now(api: Any) -> float:
    """The API server's time (epoch seconds) from the Date header of a version request."""
    from kubernetes import client

    _, _, headers = client.VersionApi(api).get_code_with_http_info(_request_timeout=cluster.TIMEOUT)
    return parsedate_to_datetime(headers["Date"]).timestamp()


def micro_time(epoch: float) -> str:
    """A MicroTime (six digits after the second, which the API server requires). Never a whole second: the client
    turns a create's body into its model and back with isoformat(), which drops ".000000", and the API server then
    refused the Lease (400, seen when the time came from the HTTP Date's whole second)."""
    moment = dt.datetime.fromtimestamp(epoch, dt.UTC)
    return (moment if moment.microsecond else moment.replace(microsecond=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: Any) -> float | None:
    """A Lease's renewTime or an object's creationTimestamp (a datetime from the client, or its text), as epoch."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).timestamp()
    with contextlib.suppress(ValueError):
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    return None


class _Beats:
    """The Leases this process renews: (API client, namespace) -> (Lease name, offset to the server's clock). One
    thread renews them while any is held, and ends when none is; at the interpreter's exit it is told to end and
    waited for a moment (`end`), so no renewal is left half-way in the TLS library while the process shuts down."""

    def __init__(self, every: float = RENEW) -> None:
        self.held: dict[tuple[int, str], tuple[Any, str, float]] = {}
        self.guard = threading.Lock()
        self.thread: threading.Thread | None = None
        self.pid = 0
        self.every = every
        self.done = threading.Event()

    def add(self, api: Any, ns: str, name: str, offset: float) -> None:
        import os

        with self.guard:
            if self.pid != os.getpid():  # a forked child renews nothing of its parent's
                self.held.clear()
                self.thread, self.pid = None, os.getpid()
            self.held[(id(api), ns)] = (api, name, offset)
            if self.thread is None:
                self.thread = threading.Thread(target=self.loop, name="layerbench-heartbeat", daemon=True)
                self.thread.start()

    def holds(self, api: Any, ns: str) -> bool:
        with self.guard:
            return (id(api), ns) in self.held

    def loop(self) -> None:
        while not self.done.wait(self.every):
            with self.guard:
                held = list(self.held.items())
                if not held:  # nothing left to renew: the next `add` starts another thread
                    self.thread = None
                    return
            for key, (api, name, offset) in held:
                if self.done.is_set():
                    return
                if not renew(api, key[1], name, offset):
                    with self.guard:
                        self.held.pop(key, None)

    def end(self, wait: float = 2.0) -> None:
        """No more renewals from this process (at its exit): the thread is told to end and waited for `wait` s at
        most (a renewal under way ends within its own timeout; the exit does not wait for that)."""
        self.done.set()
        with self.guard:
            thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=wait)


_BEATS = _Beats()
atexit.register(_BEATS.end)


def renew(api: Any, ns: str, name: str, offset: float) -> bool:
    """One renewal; False when the Lease (its namespace) is gone. Any other failure (the API slow for a while) is
    tried again at the next beat."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    body = {"spec": {"renewTime": micro_time(time.time() + offset)}}
    try:
        client.CoordinationV1Api(api).patch_namespaced_lease(name, ns, body, _request_timeout=cluster.TIMEOUT)
    except ApiException as error:
        return error.status != 404
    except Exception:  # the next beat tries again
        pass
    return True


def beat(api: Any, ns: str, labels: dict[str, str], own_namespace: bool = True) -> None:
    """This harness's Lease in `ns` (made now unless it renews one there already), renewed from now on; it goes
    with a namespace of the harness's own, and from a shared one (`own_namespace` False: namespace-scoped mode)
    when the campaign ends."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    if _BEATS.holds(api, ns):
        return
    if not own_namespace:
        from layerbench.backends.base import at_campaign_end

        at_campaign_end(lambda: stop(api, ns))
    token = lease.harness_id()
    offset = server_now(api) - time.time()
    now = micro_time(time.time() + offset)
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": lease_name(token), "namespace": ns, "labels": labels},
            "spec": {"holderIdentity": token, "leaseDurationSeconds": DURATION, "acquireTime": now,
                     "renewTime": now}}
    try:
        client.CoordinationV1Api(api).create_namespaced_lease(ns, body, _request_timeout=cluster.TIMEOUT)
    except ApiException as error:
        if error.status != 409:  # made by this process before (a second variant in the shared namespace)
            raise
    _BEATS.add(api, ns, lease_name(token), offset)


def owner_gone(api: Any, ns: str, token: str, created: Any, now: float) -> tuple[bool, float | None]:
    """Whether the harness of `token` is gone, as seen from the Lease in `ns` at server time `now`: not renewed for
    STALE s, or missing although the namespace (`created`: its creationTimestamp) is older than GRACE s; and the
    seconds since the Lease's last renewal (None without one)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        if not ns:
            raise ApiException(status=404)
        found = client.CoordinationV1Api(api).read_namespaced_lease(lease_name(token), ns,
                                                                    _request_timeout=cluster.TIMEOUT)
    except ApiException as error:
        if error.status != 404:  # the Lease cannot be read (no right to, the API slow): cannot tell, so kept
            return False, None
        made = parse_time(created)
        return made is not None and now - made > GRACE, None
    renewed = parse_time(found.spec.renew_time)
    age = None if renewed is None else max(0.0, now - renewed)
    return age is None or age > STALE, age


def stop(api: Any, ns: str) -> None:
    """No more renewals in `ns`, and the Lease deleted (gone already is fine)."""
    from kubernetes import client

    with _BEATS.guard:
        held = _BEATS.held.pop((id(api), ns), None)
    if held is not None:
        with contextlib.suppress(Exception):
            client.CoordinationV1Api(api).delete_namespaced_lease(held[1], ns, _request_timeout=cluster.TIMEOUT)
