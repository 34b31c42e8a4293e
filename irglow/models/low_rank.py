"""Low-rank updates (LoRA; Hu et al., ICLR 2022): fine-tuning that can move each projection of a transformer
only by a rank-r matrix, so a few thousand training queries cannot rewrite what the checkpoint knew.

Every ``nn.Linear`` inside the encoder's layers becomes ``W x + s · B A x`` with ``W`` frozen, ``A`` (r × in)
random, ``B`` (out × r) zero — the model starts exactly as the checkpoint — and ``s`` the scale (LoRA's α / r).
A trained model is saved *merged* (``W + s · B A``): the same layout as any checkpoint, loaded, searched and
exported to int8 like one, with nothing left of the adapters.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn


class LowRankLinear(nn.Module):
    """A frozen ``nn.Linear`` plus its trainable rank-``rank`` update."""

    def __init__(self, base: nn.Linear, rank: int, scale: float):
        super().__init__()
        if rank < 1 or rank > min(base.in_features, base.out_features):
            raise ValueError(f"low-rank update of rank {rank}: a {base.out_features} × {base.in_features} "
                             f"projection takes a rank between 1 and {min(base.in_features, base.out_features)}")
        self.base, self.scale = base.requires_grad_(False), float(scale)
        self.down = nn.Parameter(torch.empty(rank, base.in_features, device=base.weight.device))
        nn.init.kaiming_uniform_(self.down, a=math.sqrt(5))  # A as nn.Linear starts its weights (and LoRA does)
        self.up = nn.Parameter(torch.zeros(base.out_features, rank, device=base.weight.device))  # B = 0: W unchanged

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + nn.functional.linear(nn.functional.linear(x, self.down), self.up) * self.scale

    def merged(self) -> nn.Linear:
        """The plain layer ``W + s · B A`` (same bias)."""
        out = copy.deepcopy(self.base)
        with torch.no_grad():
            out.weight += self.scale * (self.up.float() @ self.down.float()).to(out.weight.dtype)
        return out.requires_grad_(True)


def add_low_rank(encoder: nn.Module, rank: int, scale: float) -> int:
    """Freeze ``encoder`` and give every ``nn.Linear`` below it a rank-``rank`` update; returns how many."""
    encoder.requires_grad_(False)
    return _swap(encoder, nn.Linear, lambda layer: LowRankLinear(layer, rank, scale))


def merge_low_rank(model: nn.Module) -> nn.Module:
    """A copy of ``model`` with every low-rank update folded into its layer (``model`` keeps its adapters, so
    training goes on)."""
    out = copy.deepcopy(model)
    _swap(out, LowRankLinear, LowRankLinear.merged)
    return out


def _swap(root: nn.Module, kind: type, make) -> int:
    """Replace every ``kind`` module below ``root`` by ``make(module)``; returns how many.  A module reachable
    from two parents (an attention module that kept its original's projections) is replaced once and the same
    replacement set on both: every name is visited (``named_children()`` skips a second one)."""
    made: dict[int, nn.Module] = {}
    for parent in list(root.modules()):
        for name, child in list(parent._modules.items()):
            if isinstance(child, kind):
                if id(child) not in made:
                    made[id(child)] = make(child)
                setattr(parent, name, made[id(child)])
    return len(made)
