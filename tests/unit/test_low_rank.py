"""Low-rank updates (irglow.models.low_rank): W x + s·B A x by hand, a start that is the checkpoint, merging."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from irglow.models.low_rank import LowRankLinear, add_low_rank, merge_low_rank


def _identity() -> nn.Linear:
    layer = nn.Linear(2, 2)
    with torch.no_grad():
        layer.weight.copy_(torch.eye(2))
        layer.bias.zero_()
    return layer


def test_the_update_by_hand_and_merged():
    layer = LowRankLinear(_identity(), rank=1, scale=2.0)
    x = torch.tensor([[1.0, 2.0]])
    assert torch.equal(layer(x), x)  # B = 0: exactly the checkpoint's layer
    with torch.no_grad():
        layer.down.copy_(torch.tensor([[1.0, 1.0]]))  # A x = 3
        layer.up.copy_(torch.tensor([[0.5], [0.0]]))  # B (A x) = (1.5, 0); × s = (3, 0)
    assert layer(x).tolist() == [[4.0, 2.0]]
    merged = layer.merged()  # W + s·B A = [[2, 1], [0, 1]]
    assert merged.weight.tolist() == [[2.0, 1.0], [0.0, 1.0]] and merged(x).tolist() == [[4.0, 2.0]]
    assert layer.base.weight.tolist() == [[1.0, 0.0], [0.0, 1.0]]  # merging copies: training goes on
    assert not layer.base.weight.requires_grad and layer.down.requires_grad and layer.up.requires_grad


def test_every_projection_is_wrapped_once_and_merges_back():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.first, self.second = _identity(), nn.Linear(2, 3)
            self.alias = self.first  # one layer reachable from two parents (an attention module keeps its projections)

        def forward(self, x):
            return self.second(torch.relu(self.alias(x)))

    model = Two()
    assert add_low_rank(model, rank=1, scale=1.0) == 2
    assert model.alias is model.first and isinstance(model.alias, LowRankLinear)
    assert [n for n, p in model.named_parameters() if p.requires_grad] == ["first.down", "first.up", "second.down",
                                                                            "second.up"]
    with torch.no_grad():
        for m in (model.first, model.second):
            m.up.normal_()
    x = torch.randn(5, 2)
    plain = merge_low_rank(model)
    assert not any(isinstance(m, LowRankLinear) for m in plain.modules())
    assert plain.alias is plain.first
    assert torch.allclose(plain(x), model(x), atol=1e-6)
    assert isinstance(model.second, LowRankLinear)  # the model trained keeps its adapters


def test_a_rank_the_layer_cannot_hold_is_refused():
    with pytest.raises(ValueError, match="rank between 1 and 2"):
        LowRankLinear(_identity(), rank=3, scale=1.0)
