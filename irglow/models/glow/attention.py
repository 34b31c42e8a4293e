"""BM25-weighted self-attention that keeps torch's fused ``scaled_dot_product_attention``.

Two readings of the papers, both offered:

* ``key``  (GLOW/BISON Eq. 2):  A_ij = w_j · q_i·k_j / √d  — the *key* token's weight.
  Identical to scaling each key vector by its token's weight: k_j ← w_j k_j.
* ``row``  (Eq. 4 and the authors' TensorFlow code):  A_ij = w_i · q_i·k_j / √d — a per-row
  temperature.  Identical to scaling each query vector: q_i ← w_i q_i.

Either way the weights are multiplied in before the padding mask and the softmax, and the layer
keeps the original query/key/value projections, so the model has exactly BERT's parameters.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

MODES = ("key", "row", "none")


class WeightedSelfAttention(nn.Module):
    """Drop-in replacement for HF ``BertSelfAttention`` (same projections, same state-dict keys)."""

    def __init__(self, original: nn.Module, mode: str = "key"):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"attention weighting must be one of {MODES}, not {mode!r}")
        self.query, self.key, self.value = original.query, original.key, original.value
        self.dropout = original.dropout
        self.num_attention_heads = original.num_attention_heads
        self.attention_head_size = original.attention_head_size
        self.scaling = original.scaling
        self.config = original.config
        self.mode = mode
        self.token_weights: torch.Tensor | None = None  # [B, T], set by the encoder for each forward
        self.capture = False  # explain(): also keep the attention probabilities [B, H, T, T]
        self.last_probs: torch.Tensor | None = None

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None, *args, **kwargs):
        shape = (*hidden_states.shape[:-1], -1, self.attention_head_size)
        q, k, v = self.query(hidden_states), self.key(hidden_states), self.value(hidden_states)  # [B, T, D]
        w = self.token_weights
        if w is not None and self.mode != "none":
            # scale before splitting heads: one contiguous [B, T, D] multiply, and SDPA sees the same layout
            w = w.to(q.dtype).unsqueeze(-1)
            if self.mode == "key":
                k = k * w
            else:
                q = q * w
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))  # [B, H, T, d]
        mask = attention_mask
        if mask is not None and mask.dtype != torch.bool:
            mask = mask.to(q.dtype)
        if self.capture:
            logits = (q @ k.transpose(-1, -2)) * self.scaling
            if mask is not None:
                logits = logits.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else logits + mask
            self.last_probs = torch.softmax(logits, -1).detach()
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                             dropout_p=self.dropout.p if self.training else 0.0, scale=self.scaling)
        return out.transpose(1, 2).reshape(*hidden_states.shape[:-1], -1).contiguous(), None


def install(encoder: nn.Module, mode: str) -> list[WeightedSelfAttention]:
    """Replace every layer's self-attention of an HF BertModel; returns the new modules."""
    layers = []
    for layer in encoder.encoder.layer:
        attn = WeightedSelfAttention(layer.attention.self, mode)
        layer.attention.self = attn
        layers.append(attn)
    return layers
