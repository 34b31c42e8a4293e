"""PyTerrier itself, imported in one place (the ``[pyterrier]`` extra; its message says how to install it), and
irglow's fusion as a transformer."""

from __future__ import annotations

from typing import Sequence

import pandas as pd
from irglow.runs.fusion import check_fusion, fuse

try:
    import pyterrier as pt
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("irglow.pyterrier needs PyTerrier: pip install 'irglow[pyterrier]' (PyPI's pyterrier; no "
                      "Terrier jar or Java start is needed for irglow's transformers)") from exc

from irglow.defaults import DEPTH, FUSION_METHOD, FUSION_NORM, RRF_K
from irglow.runs.frames import frame_to_run, run_to_frame

class Fusion(pt.Transformer):
    """irglow's fusion of several pipelines' results (``irglow fuse``): reciprocal-rank fusion (``rrf``) or a
    weighted sum of normalised scores (``wsum`` with ``weights``, equal if none).

    Args:
        *parts: The transformers fused (two or more), each given the same query frame.
        method: A registered fusion method (:func:`~irglow.runs.fusion.fusion_method`): ``wsum`` or ``rrf``.
        norm: The score normalisation before a weighted sum: ``min-max``, ``z-score`` or ``none``.
        weights: One weight per part (``None``: each 1).
        depth: Documents kept per query.
    """

    def __init__(self, *parts: pt.Transformer, method: str = FUSION_METHOD, norm: str = FUSION_NORM,
                 weights: Sequence[float] | None = None, depth: int = DEPTH):
        if len(parts) < 2:
            raise ValueError("Fusion needs at least two transformers")
        if weights is not None and len(weights) != len(parts):
            raise ValueError(f"{len(weights)} weights for {len(parts)} transformers")
        check_fusion(method, norm, RRF_K, depth)
        self.parts, self.method, self.norm, self.weights, self.depth = parts, method, norm, weights, depth

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        """A query frame run through every part, their results fused (method, normalisation, weights) to ``depth``.

        Args:
            topics: The queries: a frame with ``qid`` and ``query`` columns.
        """
        runs = [frame_to_run(part.transform(topics), f"part{i}") for i, part in enumerate(self.parts)]
        fused = fuse(runs, method=self.method, norm=self.norm, weights=self.weights, depth=self.depth, tag="fusion")
        return run_to_frame(fused, topics)
