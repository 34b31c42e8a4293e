"""Issue 40 item 4: length bucketing — batches of similar length, results back in the inputs' order."""

from __future__ import annotations

import pytest

from irglow.utils.batching import length_batches


def test_length_batches_by_hand():
    # window of 2 batches of 2: positions 0–3 sorted by length (longest first, ties by position), then 4–5
    assert length_batches([3, 9, 1, 9, 5, 7], size=2, window=2) == [[1, 3], [0, 2], [5, 4]]
    assert length_batches([], 4) == []
    assert sorted(i for b in length_batches(list(range(100)), 7, window=3) for i in b) == list(range(100))
    with pytest.raises(ValueError):
        length_batches([1], 0)


def test_bucketed_encoding_gives_each_input_its_own_vector_in_order():
    """Batches padded to their own longest input give the vectors a batch of one gives, in the input order."""
    import numpy as np
    import torch

    from irglow.dense.encode import encode

    def encoder(batch):  # a pooled "model" whose output depends on padding only if masking were wrong
        width = max(len(t) for t in batch)
        codes = torch.tensor([[ord(c) for c in t] + [0] * (width - len(t)) for t in batch], dtype=torch.float32)
        mask = (codes > 0).float()
        return torch.stack([(codes * mask).sum(1) / mask.sum(1), mask.sum(1), codes[:, 0]], dim=1)

    texts = ["a", "long text here", "mid size", "zz", "another long one", "b"]
    one_by_one = np.concatenate([encode([t], encoder, batch_size=1) for t in texts])
    assert np.allclose(encode(texts, encoder, batch_size=4), one_by_one)
