"""Fixtures of the integration tests that several files use."""

from __future__ import annotations

import os
import subprocess

import pytest


@pytest.fixture
def small_mount(tmp_path):
    """A 3 MB tmpfs (root only; skipped elsewhere), unmounted afterwards."""
    folder = tmp_path / "mnt"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3M", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root and mount(8) to make a small or read-only file system")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)
