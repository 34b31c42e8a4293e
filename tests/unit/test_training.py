"""The one training loop (irglow.models.training) on a toy task: its validation schedule, early stopping,
checkpoint choice, gradient accumulation and resumption, with expectations worked out by hand."""

import json
import random
from pathlib import Path

import pytest
import torch

import irglow.models.training as training
from irglow.models.training import LoopSettings, Task, TrainingLoop


class Toy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(3))

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.state_dict(), folder / "toy.pt")


class ToyTask(Task):
    """``batches`` batches an epoch; validation returns the next of ``scores`` (the step's model is what it says)."""

    name = "toy"

    def __init__(self, batches: int = 5, scores=None, warm_up: int = 0):
        model = Toy()
        super().__init__(model, torch.optim.SGD(model.parameters(), lr=0.1))
        self.batches, self.scores, self.warm_up_epochs = batches, list(scores or []), warm_up
        self.sampler = random.Random(7)
        self.seen: list = []

    def epoch_batches(self, epoch, warming=False):
        return [(epoch, i, warming) for i in range(self.batches)]

    def loss(self, batch, autocast, warming=False):
        self.seen.append(batch)
        x = torch.tensor([self.sampler.random(), 1.0, -1.0])
        with autocast():
            return ((self.model.w * x).sum() - 1.0) ** 2

    def validate(self):
        step = self.state["step"]
        return (self.scores.pop(0) if self.scores else 0.5 + 0.01 * step), {}


def curve(out: Path) -> list[int]:
    return [h["step"] for h in json.loads((out / "training.json").read_text())["state"]["history"]]


def run(task, tmp_path, **settings):
    loop = TrainingLoop(task, LoopSettings(**{"epochs": 2, "patience": 100, **settings}), tmp_path,
                        torch.device("cpu"))
    return loop.run()


def test_validation_schedule(tmp_path):
    """The start, every eval_every steps (counted over the whole training), every epoch end — never twice at one
    step: 5 steps an epoch, every 2 → 0, 2, 4, 5 (epoch end) | 6, 8, 10 (both)."""
    run(ToyTask(5), tmp_path, eval_every=2)
    assert curve(tmp_path) == [0, 2, 4, 5, 6, 8, 10]


def test_the_last_step_is_always_validated(tmp_path):
    """max_steps 3 with eval_every 2: 0, 2, then 3 — training ends mid-epoch and its last model is validated."""
    state = run(ToyTask(5), tmp_path, eval_every=2, max_steps=3)
    assert curve(tmp_path) == [0, 2, 3] and state["step"] == 3 and state["epoch"] == 1


def test_early_stopping_and_the_kept_model(tmp_path):
    """One step an epoch, so every step is validated.  Scores 0.3 (start), 0.5, 0.4, 0.45: one gain, then two
    evaluations without one stop training at patience 2, and the model kept is step 1's."""
    state = run(ToyTask(1, scores=[0.3, 0.5, 0.4, 0.45, 0.9]), tmp_path, epochs=10, patience=2)
    assert curve(tmp_path) == [0, 1, 2, 3] and state["best_step"] == 1 and state["best"] == 0.5
    assert state["bad"] == 2 and (tmp_path / "best" / "toy.pt").is_file()


def test_a_gain_smaller_than_the_tolerance_is_not_a_gain(tmp_path):
    state = run(ToyTask(1, scores=[0.5, 0.500001, 0.6]), tmp_path, epochs=2, patience=5)
    assert state["best_step"] == 2 and [h["val_ndcg@10"] for h in state["history"]] == [0.5, 0.500001, 0.6]


def test_gradient_accumulation_steps_once_per_group_and_drops_the_remainder(tmp_path):
    """5 batches, groups of 2: 2 optimizer steps an epoch, the fifth batch never seen."""
    task = ToyTask(5)
    state = run(task, tmp_path, grad_accum=2, epochs=1)
    assert state["step"] == 2 and [b[1] for b in task.seen] == [0, 1, 2, 3]


def test_warm_up_epochs_are_neither_counted_nor_validated(tmp_path):
    task = ToyTask(2, warm_up=1)
    state = run(task, tmp_path, epochs=1)
    assert [b[2] for b in task.seen] == [True, True, False, False]
    assert curve(tmp_path) == [0, 2] and state["step"] == 2 and state["warming"] is False


def test_no_validation_queries_keeps_the_latest_model(tmp_path):
    """NaN (no held-out queries) is kept every time: the trained model, never the untrained start."""
    state = run(ToyTask(1, scores=[float("nan")] * 3), tmp_path, epochs=2)
    assert state["best_step"] == 2


def test_a_killed_training_resumes_to_the_uninterrupted_one(tmp_path, monkeypatch):
    """Killed after epoch 1's checkpoint: the resumed run has the same curve, weights and sampler draws."""
    whole = ToyTask(3)
    run(whole, tmp_path / "whole", epochs=3, eval_every=2)
    save = training.save_trainer_checkpoint

    def save_then_die(*args, **kwargs):
        save(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "save_trainer_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        run(ToyTask(3), tmp_path / "parts", epochs=3, eval_every=2)
    monkeypatch.setattr(training, "save_trainer_checkpoint", save)
    resumed = ToyTask(3)
    run(resumed, tmp_path / "parts", epochs=3, eval_every=2)
    assert curve(tmp_path / "whole") == curve(tmp_path / "parts") == [0, 2, 3, 4, 6, 8, 9]
    assert [b[0] for b in resumed.seen] == [1, 1, 1, 2, 2, 2]
    assert torch.equal(whole.model.w, resumed.model.w)
    assert whole.sampler.random() == resumed.sampler.random()


def test_a_checkpoint_of_other_inputs_is_refused(tmp_path):
    TrainingLoop(ToyTask(2), LoopSettings(epochs=1, patience=5), tmp_path, torch.device("cpu")).run(
        inputs={"settings": {"lr": 0.1}, "data": {}})
    with pytest.raises(ValueError, match="settings.lr: 0.1 → 0.2"):
        TrainingLoop(ToyTask(2), LoopSettings(epochs=2, patience=5), tmp_path, torch.device("cpu")).run(
            inputs={"settings": {"lr": 0.2}, "data": {}})


class RecordingTask(ToyTask):
    """A ToyTask that records its weights at every evaluation."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.at_evaluation: dict[int, torch.Tensor] = {}

    def validate(self):
        self.at_evaluation[self.state["step"]] = self.model.w.detach().clone()
        return super().validate()


def test_average_is_the_mean_of_the_last_evaluated_models(tmp_path):
    """Scores 0.3 (start), 0.5, 0.4, 0.45 at patience 2: training stops at step 3; with ``average_last`` 3 the
    average is the mean of the weights validated at steps 1, 2 and 3 — the best and the two after it."""
    task = RecordingTask(1, scores=[0.3, 0.5, 0.4, 0.45])
    state = run(task, tmp_path, epochs=10, patience=2, average_last=3)
    by_hand = (task.at_evaluation[1] + task.at_evaluation[2] + task.at_evaluation[3]) / 3
    average = torch.load(tmp_path / "average" / "toy.pt")["w"]
    assert state["averaged_steps"] == [1, 2, 3] and torch.allclose(average, by_hand, atol=1e-7)
    assert not torch.equal(average, task.at_evaluation[1])  # not the best model itself
    assert torch.equal(torch.load(tmp_path / "best" / "toy.pt")["w"], task.at_evaluation[1])
    assert len(list((tmp_path / "checkpoint" / "averaged").glob("step-*.pt"))) == 3  # no more kept than averaged


def test_average_weights_by_hand():
    a = {"w": torch.tensor([1.0, 2.0]), "ids": torch.tensor([0, 1])}
    b = {"w": torch.tensor([3.0, 6.0]), "ids": torch.tensor([0, 1])}
    avg = training.average_weights([a, b])
    assert torch.equal(avg["w"], torch.tensor([2.0, 4.0])) and torch.equal(avg["ids"], b["ids"])


def test_a_resumed_training_averages_what_the_uninterrupted_one_does(tmp_path, monkeypatch):
    """The snapshots live on disk: killed after its first epoch and resumed, the average is the same."""
    run(RecordingTask(2), tmp_path / "whole", epochs=3, average_last=2)
    calls = {"n": 0}
    real = TrainingLoop._epoch

    def dying(self, warming):
        real(self, warming)
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(TrainingLoop, "_epoch", dying)
    with pytest.raises(KeyboardInterrupt):
        run(RecordingTask(2), tmp_path / "killed", epochs=3, average_last=2)
    monkeypatch.setattr(TrainingLoop, "_epoch", real)
    run(RecordingTask(2), tmp_path / "killed", epochs=3, average_last=2)
    whole, resumed = (torch.load(tmp_path / d / "average" / "toy.pt")["w"] for d in ("whole", "killed"))
    assert torch.allclose(whole, resumed, atol=1e-7)
