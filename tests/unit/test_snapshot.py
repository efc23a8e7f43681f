"""Listing the dataset cache while a build folder is removed (`layerbench datasets` beside a running campaign, or
two campaigns at once): what vanishes is not counted, and the listing never raises (it once raised
FileNotFoundError out of Path.rglob's iterator, seen in test_datasets.py)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from layerbench.hosts.workdirs import folder_size


def test_folder_size_while_folders_vanish(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    for i in range(40):
        deep = root / f"build-{i}" / "x" / "y"
        deep.mkdir(parents=True)
        (deep / "f").write_bytes(b"1" * 10)
    remover = threading.Thread(target=lambda: [shutil.rmtree(root / f"build-{i}") for i in range(40)])
    remover.start()
    while remover.is_alive():
        assert 0 <= folder_size(root) <= 400
    remover.join()
    assert folder_size(root) == 0
