"""What the tests of scripts/k8s-local share: the script run with a state folder of the test's own (K8S_LOCAL_DIR),
its cached kubectl, `kubectl apply` of a dict, and the busybox image (this machine's busybox-static in a
FROM-scratch image) their test pods run."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "k8s-local"
SHELL_IMAGE = "localhost/layerbench-test/busybox:csi-test"


class LocalCluster:
    """scripts/k8s-local with K8S_LOCAL_DIR=state_dir: a failed command fails the test with its output."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    def env(self) -> dict[str, str]:
        return {**os.environ, "K8S_LOCAL_DIR": str(self.state_dir)}

    def run_script(self, *args: str, timeout: float, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([str(SCRIPT), *args], env=self.env(), capture_output=True, text=True, timeout=timeout,
                              check=False)
        if check and proc.returncode != 0:
            pytest.fail(f"scripts/k8s-local {' '.join(args)} exited {proc.returncode}\n"
                        f"--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-6000:]}")
        return proc

    def kubectl(self, *args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run_script("kubectl", *args, timeout=timeout, check=check)

    def apply(self, obj: dict) -> None:
        path = self.state_dir / f"test-{obj['kind'].lower()}-{obj['metadata']['name']}.json"
        path.write_text(json.dumps(obj))
        self.kubectl("apply", "-f", str(path))


def busybox_image_tar(dest: Path) -> Path:
    """A docker-archive of a FROM-scratch image holding this machine's busybox-static as /bin/busybox."""
    busybox = shutil.which("busybox")
    assert busybox, "busybox-static is installed by scripts/setup"
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        info = tar.gettarinfo(busybox, arcname="bin/busybox")
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        with open(busybox, "rb") as f:
            tar.addfile(info, f)
    layer_bytes = layer.getvalue()
    diff_id = hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": ["/bin/busybox"], "Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
    }).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [SHELL_IMAGE], "Layers": [f"{diff_id}/layer.tar"]}])
    with tarfile.open(dest, mode="w") as tar:
        for name, data in ((f"{diff_id}/layer.tar", layer_bytes), (config_name, config),
                           ("manifest.json", manifest.encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return dest
