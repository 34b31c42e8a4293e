"""Mixing a trained model with its starting checkpoint (irglow.models.mixing), worked out by hand on a one-weight
model: θ₀ = 0, trained θ = 4, so θ(m) = 4m."""

import json

import pytest
import torch

from irglow.models.mixing import UNMIXED, check_mixes, choose_mix, mix_weights


class OneWeight(torch.nn.Module):
    def __init__(self, w: float, extra: float = 0.0):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([w]))
        self.head = torch.nn.Parameter(torch.tensor([extra, extra]))  # the checkpoint has it in another shape


def saver(model):
    def save(path):
        path.mkdir(parents=True, exist_ok=True)
        (path / "w.json").write_text(json.dumps(model.w.item()))
    return save


def test_mix_weights_by_hand():
    model = OneWeight(4.0, extra=7.0)
    start = {"w": torch.tensor([0.0]), "head": torch.tensor([1.0])}  # head: other shape, kept as trained
    trained = {n: p.detach().clone() for n, p in model.named_parameters()}
    assert mix_weights(model, start, trained, 0.25) == 1
    assert model.w.item() == 1.0 and model.head.tolist() == [7.0, 7.0]
    mix_weights(model, start, trained, 1.0)
    assert model.w.item() == 4.0


def test_check_mixes():
    assert check_mixes([0.75, 0.5, 0.5]) == [0.5, 0.75] and check_mixes(0.5) == [0.5] and check_mixes([]) == []
    for wrong in ([0.0], [1.0], [1.5], ["half"], [True], "0.5"):
        with pytest.raises(ValueError, match="mix_checkpoint"):
            check_mixes(wrong)


def test_choose_mix_keeps_the_best_and_gives_the_epoch_model_back(tmp_path):
    """validate = −(θ − 1)²: θ(0.25) = 1 scores 0, θ(0.5) = 2 scores −1, θ(0.75) = 3 scores −4; the best
    epoch's model (θ = 4) scored −9."""
    model = OneWeight(4.0)
    (tmp_path / "best").mkdir()
    (tmp_path / "best" / "w.json").write_text("4.0")
    start = {"w": torch.tensor([0.0])}

    def validate():
        return -(model.w.item() - 1.0) ** 2, {"own": 0.0}

    curve = choose_mix(model, start, [0.25, 0.5, 0.75], validate, -9.0, saver(model), tmp_path)
    assert [(c["mix"], c["val_ndcg@10"], c["kept"]) for c in curve] == [(0.25, 0.0, True), (0.5, -1.0, False),
                                                                        (0.75, -4.0, False)]
    assert json.loads((tmp_path / "best" / "w.json").read_text()) == 1.0
    assert json.loads((tmp_path / UNMIXED / "w.json").read_text()) == 4.0 and model.w.item() == 4.0
    # run again (a resumed training) with a fraction that wins too: it replaces the mix, the epoch's model stays
    curve = choose_mix(model, start, [0.75], validate, -9.0, saver(model), tmp_path)
    assert curve[0]["kept"] and json.loads((tmp_path / "best" / "w.json").read_text()) == 3.0
    assert json.loads((tmp_path / UNMIXED / "w.json").read_text()) == 4.0
    # and with none that beats the epoch's model: `best` is that model again
    curve = choose_mix(model, start, [0.75], validate, 0.5, saver(model), tmp_path)
    assert not curve[0]["kept"] and json.loads((tmp_path / "best" / "w.json").read_text()) == 4.0
    assert not (tmp_path / UNMIXED).exists() and not (tmp_path / "mixed").exists()
