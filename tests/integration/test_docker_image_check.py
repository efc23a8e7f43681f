"""`image:` of a docker variant: validate refuses an image that lacks the programs the server's container runs
(mariadbd, mariadb-install-db) when it has no entrypoint (one with an entrypoint is started through it:
test_mysql_docker.py), in one line with exit 2, and leaves no container behind. The images are made here with
`docker import` from this machine's busybox-static."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from test_host_campaign import campaign_file, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.docker]
REPO = f"layerbench-test/image-check-{os.getpid()}"
FAKE_SERVER = b"#!/bin/sh\nexit 0\n"


def image_tar(programs: dict[str, bytes]) -> bytes:
    """A root filesystem: busybox as /bin/sh and /bin/cp, plus the given files (executable)."""
    busybox = shutil.which("busybox")
    assert busybox, "busybox-static is installed by scripts/setup (the VM's initramfs uses it)"
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.add(busybox, arcname="bin/busybox")
        for name in ("sh", "cp"):
            link = tarfile.TarInfo(f"bin/{name}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
        for path, body in programs.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(body), 0o755
            tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


@pytest.fixture(scope="module")
def images() -> Iterator[dict[str, str]]:
    client = docker.from_env()
    made = {"mysql-like": f"{REPO}:mysql-like", "mariadb-like": f"{REPO}:mariadb-like"}
    try:
        client.api.import_image_from_data(image_tar({"usr/sbin/mysqld": FAKE_SERVER}), repository=REPO,
                                          tag="mysql-like")
        client.api.import_image_from_data(image_tar({"usr/sbin/mariadbd": FAKE_SERVER,
                                                     "usr/bin/mariadb-install-db": FAKE_SERVER}),
                                          repository=REPO, tag="mariadb-like")
        yield made
    finally:
        for tag in made.values():
            with contextlib.suppress(docker.errors.ImageNotFound):
                client.images.remove(tag, force=True)


def containers_of(image: str) -> list[str]:
    """Containers made from this test's own image (the check's container must be gone)."""
    return [c.name for c in docker.from_env().containers.list(all=True, filters={"ancestor": image})]


def validate(tmp_path: Path, image: str) -> tuple[int, str]:
    path = campaign_file(tmp_path, name=f"it-image-check-{os.getpid()}", baseline="base",
                         variants=[{"name": "base", "backend": "host"},
                                   {"name": "box", "backend": "docker", "image": image}])
    done = run_cli(["validate", str(path)])
    return done.returncode, done.stdout + done.stderr


def test_an_image_without_mariadbd_is_refused_in_one_line(tmp_path: Path, images: dict[str, str]) -> None:
    code, output = validate(tmp_path, images["mysql-like"])
    errors = [line for line in output.splitlines() if "variants.box.image" in line]
    assert code == 2, output
    assert len(errors) == 1 and "has no mariadbd, mariadb-install-db on its PATH" in errors[0], output
    assert "an image with the docker-entrypoint.sh of the mysql and mariadb images is started through it" in \
        errors[0] and "Traceback" not in output
    assert containers_of(images["mysql-like"]) == []


def test_an_image_with_the_programs_passes_the_check(tmp_path: Path, images: dict[str, str]) -> None:
    code, output = validate(tmp_path, images["mariadb-like"])
    assert code == 0 and "valid" in output, output
    assert containers_of(images["mariadb-like"]) == []
