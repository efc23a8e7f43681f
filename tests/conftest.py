"""Shared fixtures: isolated cache/work dirs per test session, and the artifacts folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# A loaded 2-core machine (CI, several test sessions at once) makes hypothesis's timing checks fail tests that
# are correct: no per-example deadline and no "data generation too slow" health check, for every test that
# does not set its own. What each test checks, and how many examples it tries, are unchanged.
settings.register_profile("layerbench", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("layerbench")

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session", autouse=True)
def _isolated_dirs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never touch the user's datasets or work dir. The image and Kubernetes binary caches stay shared:
    they are keyed by their inputs, and rebuilding them per test session would cost minutes."""
    base = tmp_path_factory.mktemp("lb")
    for name, folder in (("LAYERBENCH_DATASET_DIR", "datasets"), ("LAYERBENCH_WORK_DIR", "work")):
        if not os.environ.get(name):  # set to "" is unset (layerbench/envvars.py), so it is isolated too
            os.environ[name] = str(base / folder)
    # CI's machine is busy during nearly every run (the suite itself): campaigns that do not say `busy:` keep busy
    # runs, so a test that counts its runs counts what it planned; tests of busy: rerun say so in their campaign
    os.environ.setdefault("LAYERBENCH_BUSY", "keep")


@pytest.fixture
def no_cluster_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """KUBECONFIG set to a kubeconfig whose API server no one answers (port 9 of loopback): a plan of a kubernetes
    variant is made offline, the same whether or not this machine has a local cluster (a clean one has none)."""
    import yaml

    path = tmp_path / "kubeconfig-none"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "none",
        "clusters": [{"name": "none", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "none", "user": {}}],
        "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none"}}]}), encoding="utf-8")
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path


@pytest.fixture
def artifacts() -> Path:
    path = ROOT / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path


K8S_SCRIPT = ROOT / "scripts" / "k8s-local"


K8S_USERS = "k8s_cluster"  # the fixture name a module's tests use to get the one-node cluster
_K8S = {"started": False}  # whether this session started the one-node cluster (and so takes it down)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """The modules whose tests use the one-node cluster run one after another (in their usual order, at the place of
    the first of them), so the cluster is started once per session rather than once per module (10-20 s each). The
    modules of other clusters (test_k8s_local's, the two-node one) then never run while it is up. The tests marked
    `k8s_lane` (no cluster, but in the k8s lane of tests/lanes.py) run last, once every cluster is down."""
    late = [item for item in items if item.get_closest_marker("k8s_lane")]
    items[:] = [item for item in items if not item.get_closest_marker("k8s_lane")] + late
    users = {item.module for item in items if K8S_USERS in getattr(item, "fixturenames", ())}
    if not users:
        return
    first = next(i for i, item in enumerate(items) if item.module in users)
    block = [item for item in items if item.module in users]
    rest = [item for item in items if item.module not in users]
    items[:] = rest[:first] + block + rest[first:]


def _next_module_uses_the_cluster(request: pytest.FixtureRequest) -> bool:
    items = request.session.items
    last = max((i for i, item in enumerate(items) if item.module is request.module), default=len(items))
    return last + 1 < len(items) and K8S_USERS in getattr(items[last + 1], "fixturenames", ())


@pytest.fixture(scope="module")
def k8s_cluster(request: pytest.FixtureRequest):
    """The local Kubernetes (default K8S_LOCAL_DIR) with the static CPU manager policy, for the kubernetes
    backend's tests and examples. Started here when it is not running (a failure to start fails the tests: in
    CI a missing cluster is not a skip). A cluster this session started stays up from one module to the next that
    uses it too (pytest_collection_modifyitems puts them together) and is stopped after the last of them, so
    scripts/k8s-local's own test and the two-node cluster find the machine free."""
    import subprocess

    if request.node.get_closest_marker("k8s") is None:  # it would run in the other lane, beside the cluster's
        pytest.fail(f"{request.node.nodeid} uses the local cluster: mark its module k8s (tests/lanes.py)")
    env = {**os.environ, "K8S_LOCAL_CPU_MANAGER_POLICY": "static"}
    running = subprocess.run([str(K8S_SCRIPT), "status"], env=env, capture_output=True, text=True).returncode == 0
    if not running:
        up = subprocess.run([str(K8S_SCRIPT), "up"], env=env, capture_output=True, text=True, timeout=2400)
        if up.returncode != 0:  # a half-up cluster holds its ports: take it down so the next test's cluster can start
            subprocess.run([str(K8S_SCRIPT), "down"], env=env, capture_output=True, text=True, timeout=600)
        assert up.returncode == 0, f"scripts/k8s-local up failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
        _K8S["started"] = True
    try:
        yield
    finally:
        if _K8S["started"] and not _next_module_uses_the_cluster(request):
            subprocess.run([str(K8S_SCRIPT), "down"], env=env, capture_output=True, text=True, timeout=600)
            _K8S["started"] = False


LAB_SCRIPT = ROOT / "scripts" / "lab-hosts"


@pytest.fixture(scope="session")
def lab_hosts():
    """The two-host lab of scripts/lab-hosts (db: this machine at 10.231.77.1, app: namespace lblab-app), shared by
    every test of the session: brought up when it is not up, and taken down at the end only if this fixture
    brought it up. Yields the inventory (`hosts:` of a campaign)."""
    import subprocess

    import yaml

    started = subprocess.run([str(LAB_SCRIPT), "status"], capture_output=True, check=False).returncode != 0
    if started:
        subprocess.run([str(LAB_SCRIPT), "up"], capture_output=True, check=True, timeout=120)
    try:
        inventory = subprocess.run([str(LAB_SCRIPT), "inventory"], capture_output=True, text=True, check=True)
        yield yaml.safe_load(inventory.stdout)["hosts"]
    finally:
        if started:
            subprocess.run([str(LAB_SCRIPT), "down"], capture_output=True, check=False, timeout=120)


# The isolated lab (scripts/lab-hosts up --isolated): db and app are hosts of their own rootfs (another Debian release,
# so another MariaDB major than this machine's), PID, mount and network namespaces, cgroup, Docker daemon (db) and an
# nft firewall that admits only SSH from this machine until `open`. One per test session, on a prefix and subnet of
# its own (LAYERBENCH_TEST_LAB_PREFIX / LAYERBENCH_TEST_LAB_NET override them, e.g. for a helper's own lab).
ISOLATED_PREFIX = os.environ.get("LAYERBENCH_TEST_LAB_PREFIX", "lbdevi")
ISOLATED_NET = os.environ.get("LAYERBENCH_TEST_LAB_NET", "10.231.79")


def isolated_lab_env() -> dict[str, str]:
    """lab-hosts' settings for the session's isolated lab (its alias goes into root's ~/.ssh/config, where the
    Docker SDK's plain `ssh HOST` reads it)."""
    env = {**os.environ, "LBLAB_PREFIX": ISOLATED_PREFIX, "LBLAB_NET": ISOLATED_NET,
           "LBLAB_DIR": f"/run/{ISOLATED_PREFIX}", "LBLAB_ISOLATED": "1"}
    env.pop("LBLAB_SSH_CONFIG", None)
    return env


@pytest.fixture(scope="session")
def isolated_lab():
    """The session's isolated lab: brought up when it is not up (a cached rootfs: 10-60 s; the first debootstrap
    about 3 min), taken down at the end only if this fixture brought it up. Yields {"env": lab-hosts' settings,
    "hosts": the inventory, "dir": its folder}."""
    import subprocess

    import yaml

    if os.geteuid() != 0:
        pytest.skip("the isolated lab needs root (namespaces, links, cgroups)")
    env = isolated_lab_env()
    started = subprocess.run([str(LAB_SCRIPT), "status"], env=env, capture_output=True, check=False,
                             timeout=120).returncode != 0
    if started:
        up = subprocess.run([str(LAB_SCRIPT), "up", "--isolated"], env=env, capture_output=True, text=True,
                            timeout=1800, check=False)
        assert up.returncode == 0, f"lab-hosts up --isolated failed:\n{up.stdout[-2000:]}\n{up.stderr[-3000:]}"
    try:
        inventory = subprocess.run([str(LAB_SCRIPT), "inventory"], env=env, capture_output=True, text=True,
                                   check=True, timeout=60)
        yield {"env": env, "hosts": yaml.safe_load(inventory.stdout)["hosts"], "dir": Path(env["LBLAB_DIR"])}
    finally:
        if started:  # nothing of it is left: its folder, namespaces and cgroups (their processes: dockerd...)
            down = subprocess.run([str(LAB_SCRIPT), "down"], env=env, capture_output=True, text=True, check=False,
                                  timeout=600)
            netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
            assert down.returncode == 0 and not Path(env["LBLAB_DIR"]).exists(), down.stderr[-2000:]
            assert ISOLATED_PREFIX not in netns and not Path(f"/sys/fs/cgroup/pids/{ISOLATED_PREFIX}-db").exists()
