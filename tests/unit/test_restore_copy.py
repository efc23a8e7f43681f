"""The restore's file copy (server/restore.py): the pipelined O_DIRECT copy and its buffered fallback give the
xxh3-128 of every byte and identical bytes whatever the size, and an error in the middle of a copy is raised as
it was before the pipeline, with no writer thread left running."""

from __future__ import annotations

import errno
import os
import resource
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import xxhash

from layerbench.server.manifest import BLOCK
from layerbench.server.restore import copy_buffered, copy_direct, copy_file

SMALL = 64 << 10  # a small block keeps the O_DIRECT tests quick; the pipeline is the same at any block size


def writers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "layerbench-copy-writer"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    probe = tmp_path / "probe"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600))
    except OSError as error:
        if error.errno == errno.EINVAL:
            pytest.skip(f"{tmp_path} has no O_DIRECT (tmpfs)")
        raise
    probe.unlink()
    return tmp_path


def source_of(folder: Path, size: int) -> tuple[Path, bytes]:
    data = os.urandom(size)
    (folder / "source").write_bytes(data)
    return folder / "source", data


@pytest.mark.parametrize("size", [0, 4096, SMALL, 3 * SMALL + 5 * 4096, 7 * SMALL, 2 * SMALL - 4096])
def test_direct_copy_hashes_every_byte_and_copies_them_all(folder: Path, size: int) -> None:
    source, data = source_of(folder, size)
    digest = copy_direct(source, folder / "target", block=SMALL)
    assert digest == xxhash.xxh3_128(data).hexdigest()
    assert (folder / "target").read_bytes() == data
    assert writers() == []


@pytest.mark.parametrize("buffers", [1, 2, 4])
def test_any_number_of_buffers_gives_the_same_copy(folder: Path, buffers: int) -> None:
    source, data = source_of(folder, 5 * SMALL + 4096)
    assert copy_direct(source, folder / "target", block=SMALL, buffers=buffers) == xxhash.xxh3_128(data).hexdigest()
    assert (folder / "target").read_bytes() == data


@pytest.mark.parametrize("size", [0, 1, 4095, BLOCK, BLOCK + 1, 2 * BLOCK + 3 * 4096])
def test_copy_file_direct_or_buffered_gives_the_same_hash_and_bytes(folder: Path, size: int) -> None:
    source, data = source_of(folder, size)
    assert copy_file(source, folder / "target") == xxhash.xxh3_128(data).hexdigest()
    assert (folder / "target").read_bytes() == data
    assert copy_buffered(source, folder / "again") == xxhash.xxh3_128(data).hexdigest()


def test_a_write_error_mid_copy_is_raised_and_leaves_no_thread(folder: Path) -> None:
    source, _ = source_of(folder, 10 * SMALL)
    with pytest.raises(OSError) as raised:
        with_limit(lambda: copy_direct(source, folder / "target", block=SMALL))
    assert raised.value.errno == errno.EFBIG  # what the serial copy raised: the kernel's own error, not ours
    assert writers() == []
    assert (folder / "target").stat().st_size == 2 * SMALL  # it stopped where the disk refused


def test_a_write_error_mid_copy_is_not_taken_for_a_missing_o_direct(folder: Path) -> None:
    source, _ = source_of(folder, 2 * BLOCK)
    with pytest.raises(OSError) as raised:
        with_limit(lambda: copy_file(source, folder / "target"))
    assert raised.value.errno == errno.EFBIG
    assert writers() == []


def with_limit(copy: Callable[[], str]) -> str:
    """`copy` under a file size limit of two small blocks for this process (writes beyond it fail with EFBIG)."""
    before, handler = resource.getrlimit(resource.RLIMIT_FSIZE), signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2 * SMALL, before[1]))
    try:
        return copy()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, before)
        signal.signal(signal.SIGXFSZ, handler)


def test_a_target_that_cannot_be_opened_raises_before_any_thread_starts(folder: Path) -> None:
    source, _ = source_of(folder, 2 * SMALL)
    (folder / "a-folder").mkdir()
    with pytest.raises(IsADirectoryError):
        copy_direct(source, folder / "a-folder", block=SMALL)
    with pytest.raises(FileNotFoundError):
        copy_direct(source, folder / "missing" / "target", block=SMALL)
    assert writers() == []
