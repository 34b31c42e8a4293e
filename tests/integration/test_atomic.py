"""Atomic outputs (irglow.utils.atomic) when the disk is full."""

from __future__ import annotations

import os
import subprocess

import pytest

from irglow.cli import main


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


def test_a_full_disk_is_one_line_naming_the_folder_and_nothing_is_left(small_mount, capsys):
    assert main(["search", "demo", "--query", "brulzem", "--data-dir", str(small_mount)]) == 2
    err = capsys.readouterr().err
    assert f"no space left on the device holding {small_mount}/indexes while indexing demo" in err
    assert "java.io.IOException" not in err and "Traceback" not in err
    assert not any((small_mount / "indexes").iterdir())
