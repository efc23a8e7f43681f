"""Shared fixtures: isolated cache/work dirs per test session, and the artifacts folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session", autouse=True)
def _isolated_dirs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never touch the user's datasets or work dir. The image and Kubernetes binary caches stay shared:
    they are keyed by their inputs, and rebuilding them per test session would cost minutes."""
    base = tmp_path_factory.mktemp("lb")
    os.environ.setdefault("LAYERBENCH_DATASET_DIR", str(base / "datasets"))
    os.environ.setdefault("LAYERBENCH_WORK_DIR", str(base / "work"))


@pytest.fixture
def artifacts() -> Path:
    path = ROOT / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path
