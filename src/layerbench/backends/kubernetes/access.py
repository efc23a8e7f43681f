"""The rights a kubernetes variant's plan needs from the API, asked before anything is created, and a 403 from
the API as one line a user can act on.

`needed_rights()` derives the list from the variant (docs/backends/kubernetes.md, "Permissions"): per-run
namespaces, the nodes the server may run on, the kubelet's /configz for the CPU manager policy, StorageClasses
for a PVC, the VolumeSnapshot path's classes and contents, the objects of a run and the sysbench Job in the run's
namespace. `missing_rights()` asks the API server about each one with a SelfSubjectAccessReview (the same client
and credentials the backend uses), so validate names every right that is missing, before any run. `readable_403`
turns a 403 met anyway (a right that changed after validate, a webhook that refuses) into `Forbidden`: one line
naming the verb, the resource, the namespace and what to grant; its exit code is 2 (bad input: an account's
rights are the user's to fix), in a run it fails the run with that line.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from layerbench.errors import EXIT_BAD_INPUT, RunFailed, shown

if TYPE_CHECKING:
    from layerbench.backends.kubernetes.variant import KubernetesVariant

RBAC_FILE = "deploy/kubernetes/rbac.yaml"
TIMEOUT = 15  # seconds, as cluster.TIMEOUT
ALL_NAMESPACES = ""  # a SelfSubjectAccessReview's namespace for rights in namespaces that do not exist yet
MESSAGE_LIMIT = 4096  # of a 403's body: the API server's Status is short; anything longer is not read further
FORBIDDEN_RE = re.compile(
    r'cannot (?P<verb>[a-z]{1,40}) resource "(?P<resource>[a-z0-9./-]{1,120})" in API group "(?P<group>[a-z0-9.-]{0,'
    r'253})"(?: (?:in the namespace "(?P<ns>[a-z0-9-]{1,63})"|(?P<cluster>at the cluster scope)))?')
USER_RE = re.compile(r'User "(?P<user>[^"\n]{1,253})"')


class Forbidden(RunFailed):
    """The API refused a call for want of a right (403); the message names it. Exit 2: nothing was measured, and
    the fix is the account's rights, as for bad input."""

    exit_code = EXIT_BAD_INPUT


@dataclass(frozen=True)
class Right:
    """One right: `verb` on `resource` (with its subresource after a '/', like nodes/proxy) of API `group`,
    at the cluster scope or in the run's namespace(s); `why`: what the plan needs it for."""

    verb: str
    resource: str
    group: str
    cluster: bool
    why: str

    def text(self, namespace: str | None = None) -> str:
        where = "at the cluster scope" if self.cluster else (
            f"in namespace {namespace}" if namespace else "in every namespace (per-run namespaces)")
        group = f" (API group {self.group})" if self.group else ""
        return f"{self.verb} {self.resource}{group} {where}"


def _rights(verbs: str, resource: str, group: str, cluster: bool, why: str) -> list[Right]:
    return [Right(verb, resource, group, cluster, why) for verb in verbs.split()]


SNAPSHOT_GROUP = "snapshot.storage.k8s.io"
LEASE_GROUP = "coordination.k8s.io"


def needed_rights(variant: KubernetesVariant, pinned_neighbours: bool = False) -> list[Right]:
    """Every right the variant's runs use, in the order a run uses them; `pinned_neighbours`: a guaranteed-pinned
    pod neighbour beside it (the CPU manager policy is read then too). In namespace-scoped mode (`namespace:`)
    none at the cluster scope: the run's objects are removed by their label instead of with a namespace."""
    rights = [] if variant.namespace else cluster_rights(variant, pinned_neighbours)
    run, removed = "the run's objects", "removing the run's objects by label (namespace-scoped mode)"
    kinds = [("configmaps", "", run), ("secrets", "", run), ("services", "", run)]
    kinds += [("statefulsets", "apps", run)] if variant.kind == "statefulset" else []
    kinds += [("persistentvolumeclaims", "", run)] if variant.claims_volumes else []
    seeds = variant.namespace is not None and variant.snapshot_class is not None  # made by Jobs there (seed.py)
    kinds += [("jobs", "batch", "sysbench as a Job")] if variant.client == "job" or seeds else []
    if variant.snapshot_class is not None:
        rights += _rights("create get", "volumesnapshots", SNAPSHOT_GROUP, False, "the seed and run snapshots")
        rights += _rights("list delete", "volumesnapshots", SNAPSHOT_GROUP, False, "removing the seed's snapshot "
                          "(namespace-scoped mode; `layerbench clean` finds it by label)") if seeds else []
    rights += _rights("create get list delete deletecollection", "pods", "", False, run)
    rights += _rights("get", "pods/log", "", False, "the server's log, the Jobs' and neighbours' output")
    rights += _rights("create get", "pods/exec", "", False,  # get: the websocket's upgrade; create: kubectl's, 1.35's
                      "the server's CPU and throttling read in its pod off a node (podcpu.py)")
    rights += _rights("list", "events", "", False, "why a pod does not start")
    rights += _rights("create get patch", "leases", LEASE_GROUP, False, "this harness's heartbeat (a `layerbench "
                      "clean` on another machine leaves a live campaign alone)")
    rights += _rights("delete", "leases", LEASE_GROUP, False, "the heartbeat's end in the shared namespace") \
        if variant.namespace else []
    for resource, group, why in kinds:
        rights += _rights("create", resource, group, False, why)
        rights += _rights("get", resource, group, False, why) if resource in ("services", "persistentvolumeclaims") \
            else []
        rights += _rights("list delete", resource, group, False, removed) if variant.namespace else []
    if variant.client == "port-forward":
        rights += _rights("create", "pods/portforward", "", False, "kubectl port-forward")
    return rights


def clean_rights() -> list[Right]:
    """What `layerbench clean` uses besides the plans' rights: finding labelled namespaces and contents."""
    return _rights("list", "namespaces", "", True, "layerbench clean") + _rights(
        "list", "volumesnapshotcontents", SNAPSHOT_GROUP, True, "layerbench clean") + _rights(
        "get", "leases", LEASE_GROUP, False, "layerbench clean: whether another machine's harness lives")


def cluster_rights(variant: KubernetesVariant, pinned_neighbours: bool) -> list[Right]:
    """The cluster-scoped rights of a plan with per-run namespaces."""
    rights = _rights("list", "nodes", "", True, "the nodes the server may run on (placement, capacity)")
    if variant.cpu_manager_static or pinned_neighbours:
        rights += _rights("get", "nodes/proxy", "", True, "the kubelets' CPU manager policy (their /configz)")
    rights += _rights("create get delete", "namespaces", "", True, "a namespace of its own per run")
    if variant.claims_volumes:
        rights += _rights("list", "storageclasses", "storage.k8s.io", True, "the PVC's storage class")
    if variant.snapshot_class is not None:
        rights += _rights("list", "volumesnapshotclasses", SNAPSHOT_GROUP, True, "the snapshot class")
        rights += _rights("create get delete", "volumesnapshotcontents", SNAPSHOT_GROUP, True,
                          "each run's restore from the seed snapshot")
    return rights


def missing_rights(api: Any, rights: list[Right], namespace: str = ALL_NAMESPACES) -> list[Right]:
    """The rights the API server does not grant the client's account (a SelfSubjectAccessReview each)."""
    from kubernetes import client

    authorization = client.AuthorizationV1Api(api)
    missing = []
    for right in rights:
        resource, _, subresource = right.resource.partition("/")
        attributes = client.V1ResourceAttributes(verb=right.verb, resource=resource, group=right.group,
                                                 subresource=subresource or None,
                                                 namespace=None if right.cluster else namespace)
        review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=attributes))
        with readable_403(f"checking the right to {right.text()}"):
            answer = authorization.create_self_subject_access_review(review, _request_timeout=TIMEOUT)
        if not answer.status.allowed:
            missing.append(right)
    return missing


def check_rights(api: Any, rights: list[Right], where: str, namespace: str = ALL_NAMESPACES) -> None:
    """Forbidden naming every missing right (one clause each) and what to grant."""
    missing = missing_rights(api, rights, namespace)
    if missing:
        clauses = "; ".join(f"missing right {n}/{len(missing)}: {r.text(namespace)} (for {r.why})"
                            for n, r in enumerate(missing, 1))
        raise Forbidden(f"{where}: the Kubernetes account lacks {len(missing)} of the {len(rights)} rights the "
                        f"plan needs: {clauses}; grant them (the roles of {RBAC_FILE} have every right layerbench "
                        "uses)")


def forbidden_text(body: object) -> str | None:
    """What a 403's body says was refused, as 'verb resource (API group g) in namespace n' (or at the cluster
    scope), with the account it names; None when the body is not the API server's Status for a denied right."""
    if not isinstance(body, str | bytes):
        return None
    text = body[:MESSAGE_LIMIT].decode("utf-8", "replace") if isinstance(body, bytes) else body[:MESSAGE_LIMIT]
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        text = str(json.loads(text).get("message", ""))
    found = FORBIDDEN_RE.search(text)
    if found is None:
        return None
    right = Right(found["verb"], found["resource"], found["group"], found["cluster"] is not None, "")
    user = USER_RE.search(text)
    words = right.text(found["ns"]) if found["ns"] or found["cluster"] else f"{right.verb} {right.resource}"
    return words + (f" to {shown(user['user'], 80)}" if user else "")


@contextlib.contextmanager
def readable_403(where: str) -> Iterator[None]:
    """A 403 from the API inside the block as Forbidden (one line: what was refused, to whom, what to grant)."""
    from kubernetes.client.exceptions import ApiException

    try:
        yield
    except ApiException as error:
        if error.status != 403:
            raise
        refused = forbidden_text(error.body) or f"a call ({shown(str(error.reason), 60)})"
        raise Forbidden(f"{where}: the Kubernetes API refused {refused} (403 Forbidden); grant that right to the "
                        f"account of the kubeconfig (the roles of {RBAC_FILE} have every right layerbench uses)"
                        ) from None


def rights_summary(rights: list[Right], namespace: str | None = None) -> str:
    """The rights as the plan prints them, grouped: 'at the cluster scope: list nodes, create/get/delete
    namespaces; in the run's namespace: create/get/list/delete/deletecollection pods, ...'."""
    parts = []
    for cluster, scope in ((True, "at the cluster scope"), (False, f"in namespace {namespace}" if namespace else
                                                            "in the run's namespace")):
        verbs: dict[str, list[str]] = {}
        for right in rights:
            if right.cluster == cluster:
                verbs.setdefault(right.resource, []).append(right.verb)
        if verbs:
            parts.append(f"{scope}: " + ", ".join(f"{'/'.join(v)} {r}" for r, v in verbs.items()))
    return "; ".join(parts)


Backend = TypeVar("Backend", bound=type)


def readable_403s(*names: str) -> Callable[[Backend], Backend]:
    """A class decorator: its methods `names` (of an object with a `variant`) turn a 403 into Forbidden."""
    def wrap(cls: Backend) -> Backend:
        for name in names:
            setattr(cls, name, _readable(getattr(cls, name)))
        return cls
    return wrap


def _readable(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        with readable_403(f"variants.{self.variant.name}"):
            return method(self, *args, **kwargs)
    return checked
