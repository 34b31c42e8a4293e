"""Issue 70.1: irglow as a package a user installs — the wheel holds what runs need outside the clone (the shipped
configurations, the bulk helper's Java source, the report page), and, installed on its own, finds its configurations
from an empty folder."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_its_configurations_and_runs_from_an_empty_folder(tmp_path):
    pytest.importorskip("setuptools", minversion="70.1")  # builds wheels itself (the build is offline: no isolation)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                            "-q", "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=600,
                           cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("irglow-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("irglow/configs/demo.toml", "irglow/configs/regressions.yaml", "irglow/configs/regressions/twbert.toml",
                   "irglow/configs/bench/best.toml", "irglow/index/java/BulkSearch.java", "irglow/eval/report_page.html"):
        assert needed in names, needed
    assert not any(n.startswith(("tests/", "docs/", "bench/")) for n in names)
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                                str(tmp_path / "site"), str(wheel)], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    empty = tmp_path / "empty"
    empty.mkdir()
    code = ("import irglow, sys; from irglow.config import config_path, load_config; "
            "p = config_path('configs/demo.toml'); c = load_config('configs/bench/best.toml'); "
            "print(irglow.__file__, p, c['twbert']['epochs'], irglow.__version__)")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}  # the wheel's irglow, the environment's dependencies
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=empty, env=env)
    assert ran.returncode == 0, ran.stderr[-2000:]
    module, config, epochs, version = ran.stdout.split()
    assert module.startswith(str(tmp_path / "site")) and config.startswith(str(tmp_path / "site"))
    assert int(epochs) > 0 and version == wheel.name.split("-")[1]
    assert list(empty.iterdir()) == []  # nothing written into the folder it ran from
