"""Atomic outputs (irglow.utils.atomic) when the disk is full."""

from __future__ import annotations

from irglow.cli import main


def test_a_full_disk_is_one_line_naming_the_folder_and_nothing_is_left(small_mount, capsys):
    assert main(["search", "demo", "--query", "brulzem", "--data-dir", str(small_mount)]) == 2
    err = capsys.readouterr().err
    assert f"no space left on the device holding {small_mount}/indexes while indexing demo" in err
    assert "java.io.IOException" not in err and "Traceback" not in err
    assert not any((small_mount / "indexes").iterdir())
