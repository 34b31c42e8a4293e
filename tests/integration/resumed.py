"""One check for every trainer: killed after its first checkpoint and resumed, it trains what the uninterrupted
run trains (same loss curve, same weights)."""

import json
from pathlib import Path
from typing import Callable

import pytest
import torch


def assert_resumed_is_uninterrupted(monkeypatch, train_module, train: Callable[[Path], None], tmp_path: Path,
                                    evaluations: int) -> None:
    """``train(folder)`` trains into ``folder``; ``train_module`` is the module whose ``save_trainer_checkpoint``
    is made to kill the run right after writing the first checkpoint (:mod:`irglow.models.training`, the one
    loop); ``evaluations``: the curve's length."""
    train(tmp_path / "whole")
    save = train_module.save_trainer_checkpoint

    def save_then_die(*args, **kwargs):
        save(*args, **kwargs)
        raise KeyboardInterrupt("killed after the first checkpoint")

    monkeypatch.setattr(train_module, "save_trainer_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        train(tmp_path / "parts")
    monkeypatch.setattr(train_module, "save_trainer_checkpoint", save)
    train(tmp_path / "parts")
    losses = [[h["loss"] for h in json.loads((tmp_path / f / "training.json").read_text())["state"]["history"]]
              for f in ("whole", "parts")]
    assert len(losses[0]) == evaluations and losses[0] == losses[1], losses
    whole, parts = (torch.load(tmp_path / f / "checkpoint" / "trainer.pt", weights_only=True)["model"]
                    for f in ("whole", "parts"))
    assert all(torch.equal(whole[k], parts[k]) for k in whole)
