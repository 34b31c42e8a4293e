"""Atomic outputs (irglow.utils.atomic): permissions, concurrent writers, killed writers."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from irglow.utils.atomic import atomic_dir, atomic_file


def _replace_many(path: str, tag: str) -> int:
    for i in range(40):
        with atomic_dir(path) as tmp:
            (tmp / "who").write_text(f"{tag}{i}")
    return 0


def test_files_written_inside_an_atomic_dir_get_the_umask_permissions(tmp_path):
    from irglow.utils.atomic import atomic_dir

    old = os.umask(0o022)
    try:
        with atomic_dir(tmp_path / "model") as tmp:
            fd = os.open(tmp / "weights.safetensors", os.O_CREAT | os.O_WRONLY, 0o600)  # as safetensors does
            os.close(fd)
    finally:
        os.umask(old)
    assert oct((tmp_path / "model" / "weights.safetensors").stat().st_mode & 0o777) == "0o644"


def test_atomic_outputs_respect_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_file(tmp_path / "f.txt") as tmp:
            tmp.write_text("x")
        with atomic_dir(tmp_path / "d") as tmp:
            (tmp / "a").write_text("x")
    finally:
        os.umask(old)
    assert (tmp_path / "f.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o755


def test_atomic_dir_is_safe_under_concurrent_writers(tmp_path):
    target = str(tmp_path / "shared")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        assert pool.starmap(_replace_many, [(target, "a"), (target, "b")]) == [0, 0]
    assert (tmp_path / "shared" / "who").read_text() in {"a39", "b39"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared"]  # nothing left beside it


def test_leftovers_of_a_killed_writer_are_swept(tmp_path):
    """A process killed mid-build never runs its ``finally``: its pid-tagged temp folder is removed by
    the next writer; a live process's folder and unrelated names stay."""
    import subprocess
    import sys

    from irglow.utils.atomic import sweep_stale

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    stale = tmp_path / f".index.{dead_pid}.abcd.tmp"
    live = tmp_path / f".index.{os.getpid()}.efgh.tmp"
    other = tmp_path / ".index.notapid.tmp"
    for p in (stale, live, other):
        (p / "segment").mkdir(parents=True)
    with atomic_dir(tmp_path / "index") as tmp:
        (tmp / "done").write_text("1")
        assert tmp.name.startswith(f".index.{os.getpid()}.")
    assert not stale.exists() and live.exists() and other.exists() and (tmp_path / "index" / "done").is_file()
    assert sweep_stale(tmp_path, ".index.") == []


def test_a_version_moved_aside_by_a_killed_writer_is_put_back(tmp_path):
    """Killed (no ``finally``) between moving the old folder aside and moving the new one in: the next
    writer finds no target and puts the old version back before it starts, so a failed rewrite still
    leaves it; with the target present, a stale copy is only removed."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    aside = tmp_path / f".model.{int(dead.stdout)}.wxyz.old"
    half = tmp_path / f".model.{int(dead.stdout)}.abcd.tmp"
    (aside / "weights").mkdir(parents=True)
    (aside / "weights" / "w").write_text("version 1")
    half.mkdir()
    with pytest.raises(RuntimeError):
        with atomic_dir(tmp_path / "model") as tmp:
            (tmp / "w").write_text("version 2, never finished")
            raise RuntimeError("training crashed")
    assert (tmp_path / "model" / "weights" / "w").read_text() == "version 1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    (tmp_path / f".model.{int(dead.stdout)}.efgh.old").mkdir()  # a stale copy beside a target that is there
    with atomic_dir(tmp_path / "model") as tmp:
        (tmp / "w").write_text("version 2")
    assert (tmp_path / "model" / "w").read_text() == "version 2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_killed_writers_half_file_is_swept_by_the_next_write(tmp_path):
    """``atomic_file`` temp names carry the pid: a dead writer's is removed, a live one's and a file
    without a pid are kept."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".trainer.pt.{int(dead.stdout)}.abcd.tmp"
    live = tmp_path / f".trainer.pt.{os.getpid()}.efgh.tmp"
    other = tmp_path / ".trainer.pt.notapid.tmp"
    for p in (stale, live, other):
        p.write_bytes(b"half")
    with atomic_file(tmp_path / "trainer.pt") as tmp:
        assert tmp.name.startswith(f".trainer.pt.{os.getpid()}.")
        tmp.write_bytes(b"whole")
    assert (tmp_path / "trainer.pt").read_bytes() == b"whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["trainer.pt", live.name, other.name])


def test_atomic_dir_interrupted_mid_swap_keeps_the_previous_version(tmp_path, monkeypatch):
    """Ctrl-C between moving the old directory aside and moving the new one in leaves the old one in place."""
    import os

    from irglow.utils import atomic

    target = tmp_path / "checkpoint"
    with atomic.atomic_dir(target) as tmp:
        (tmp / "trainer.pt").write_text("epoch 1")
    real, calls = os.replace, []

    def interrupted(src, dst):
        calls.append((src, dst))
        if len(calls) == 3:  # 1: new onto the full old one (fails), 2: old aside, 3: new in → Ctrl-C here
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with atomic.atomic_dir(target) as tmp:
            (tmp / "trainer.pt").write_text("epoch 2")
    monkeypatch.undo()
    assert (target / "trainer.pt").read_text() == "epoch 1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]


def test_a_new_checkpoint_replaces_the_old_without_a_moment_of_none(tmp_path, monkeypatch):
    """A checkpoint is one file renamed over the last: at no point is there no ``trainer.pt`` (a kill then
    would lose it; a folder swap had such a moment, and a test polling for the file saw it vanish)."""
    import torch

    from irglow.models.checkpoints import load_trainer_checkpoint, save_trainer_checkpoint
    from irglow.utils import atomic

    folder = tmp_path / "checkpoint"
    layer = torch.nn.Linear(2, 1)
    save_trainer_checkpoint(folder, {"epoch": 1}, rng=False, model=layer)
    real, seen = os.replace, []

    def watched(src, dst):
        seen.append((str(dst), (folder / "trainer.pt").is_file()))
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", watched)
    save_trainer_checkpoint(folder, {"epoch": 2}, rng=False, model=layer)
    monkeypatch.undo()
    assert seen == [(str(folder / "trainer.pt"), True)]
    assert json.loads(load_trainer_checkpoint(folder / "trainer.pt")["state"]) == {"epoch": 2}
    assert sorted(p.name for p in folder.iterdir()) == ["trainer.pt"]
