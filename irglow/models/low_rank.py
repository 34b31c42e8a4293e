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
    """Freeze ``encoder`` and give every ``nn.Linear`` below it a rank-``rank`` update; returns how many.  A
    layer reachable from two parents (an attention module that kept its original's projections) is wrapped once
    and the same wrapper set on both."""
    encoder.requires_grad_(False)
    wrapped: dict[int, LowRankLinear] = {}
    for parent in list(encoder.modules()):
        for name, child in list(parent._modules.items()):  # every name: named_children() skips a second one
            if isinstance(child, nn.Linear):
                if id(child) not in wrapped:
                    wrapped[id(child)] = LowRankLinear(child, rank, scale)
                setattr(parent, name, wrapped[id(child)])
    return len(wrapped)


def merge_low_rank(model: nn.Module) -> nn.Module:
    """A copy of ``model`` with every low-rank update folded into its layer (``model`` keeps its adapters, so
    training goes on)."""
    out = copy.deepcopy(model)
    merged: dict[int, nn.Linear] = {}
    for parent in list(out.modules()):
        for name, child in list(parent._modules.items()):
            if isinstance(child, LowRankLinear):
                if id(child) not in merged:
                    merged[id(child)] = child.merged()
                setattr(parent, name, merged[id(child)])
    return out
