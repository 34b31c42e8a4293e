"""A process holding both the JVM and torch ends cleanly: Ctrl-C mid-training exits 130 with a message,
leaves no JVM crash dump, and the checkpoint it had written still resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.integration.test_rerank import _beir


TINY = ["--set=model.embedding_dim=8", "--set=model.filters=8", "--set=model.dim=8", "--set=model.hidden=8",
        "--set=model.hash_buckets=1000", "--set=batch_queries=4", "--set=negatives=1"]


@pytest.mark.slow
def test_ctrl_c_mid_training_exits_cleanly_and_resumes(tmp_path):
    data = _beir(tmp_path / "coll")
    out = tmp_path / "model"
    cmd = [sys.executable, "-m", "irglow", "nrmf", "train", str(data), "--out", str(out), "--data-dir",
           str(tmp_path / "idx"), "--set=epochs=100000", "--set=patience=100000", *TINY]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    # The child's output goes to files, not pipes: an undrained pipe fills with progress bars and blocks
    # the child in write(), which is not what a terminal does and made this test hang.
    log_out, log_err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    with open(log_out, "w") as so, open(log_err, "w") as se:
        # A job started in the background by a non-interactive shell (`make test &`, nohup) inherits
        # SIGINT ignored, and Python then keeps ignoring it: give the child the default disposition a
        # terminal would, so Ctrl-C means KeyboardInterrupt whatever launched the test run.
        p = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=so, stderr=se, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            deadline = time.time() + 240
            while not (out / "checkpoint" / "trainer.pt").is_file() and time.time() < deadline and p.poll() is None:
                time.sleep(0.5)
            assert (out / "checkpoint" / "trainer.pt").is_file(), log_err.read_text()[-2000:]
            time.sleep(1.0)  # mid-epoch, JVM and torch both up
            p.send_signal(signal.SIGINT)
            p.wait(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
    err = log_err.read_text()
    assert p.returncode == 130, err[-2000:]
    assert "interrupted" in err
    assert not list(tmp_path.glob("hs_err_pid*.log")) and not list(tmp_path.glob("*/hs_err_pid*.log"))
    # the last complete checkpoint resumes: one more epoch than it holds, and the run ends with 0
    import json

    from irglow.models.checkpoints import load_trainer_checkpoint

    epoch = json.loads(load_trainer_checkpoint(out / "checkpoint" / "trainer.pt")["state"])["epoch"]
    again = cmd[:-len(TINY) - 2] + [f"--set=epochs={epoch + 1}", "--set=patience=100000", *TINY]
    done = subprocess.run(again, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"resuming nrmf training from {out / 'checkpoint' / 'trainer.pt'} (epoch {epoch}" in done.stderr
    assert not list(tmp_path.glob("hs_err_pid*.log"))
