"""The training loop on a GPU: mixed precision with a loss scale that adapts, dropout drawn from the CUDA
generator, and a killed training that resumes to the uninterrupted one.  Skipped without a CUDA device.

The loss is made large on purpose, so fp16's gradient scale overflows in the first steps and the scaler backs off
(skipping those steps): a resumption that restarted the scale at 65,536, or that drew other dropout masks, would
train other weights."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import irglow.models.training as training
from irglow.models.training import LoopSettings, Task, TrainingLoop
from tests.integration.resumed import assert_resumed_is_uninterrupted

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Dropout(0.3),
                                          torch.nn.Linear(64, 1))

    def forward(self, x):
        return self.layers(x)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.state_dict(), folder / "net.pt")


class RegressionTask(Task):
    name = "cuda-regression"

    def __init__(self):
        torch.manual_seed(0)
        model = Net().cuda()
        super().__init__(model, torch.optim.AdamW(model.parameters(), lr=1e-2))
        g = torch.Generator().manual_seed(1)
        self.x, self.y = torch.randn(6, 8, 16, generator=g).cuda(), torch.randn(6, 8, 1, generator=g).cuda()

    def epoch_batches(self, epoch, warming=False):
        return list(range(6))

    def loss(self, i, autocast, warming=False):
        with autocast():
            out = self.model(self.x[i])
        return 1e3 * ((out.float() - self.y[i]) ** 2).mean()

    def validate(self):
        self.model.eval()
        with torch.no_grad():
            score = -float(((self.model(self.x) - self.y) ** 2).mean())
        self.model.train()
        return score, {}


def train(out: Path) -> dict:
    return TrainingLoop(RegressionTask(), LoopSettings(epochs=3, patience=100, eval_every=2, amp=True), out,
                        torch.device("cuda")).run()


def test_a_killed_amp_training_on_cuda_resumes_to_the_uninterrupted_one(tmp_path, monkeypatch):
    assert_resumed_is_uninterrupted(monkeypatch, training, train, tmp_path, evaluations=10)
    state = json.loads((tmp_path / "whole" / "training.json").read_text())["state"]
    assert state["scaler"]["scale"] < 65536.0  # the scale backed off: the resumption had a scale to restore
    assert state == json.loads((tmp_path / "parts" / "training.json").read_text())["state"] | {
        "train_seconds": state["train_seconds"]}
