"""A differentiable BM25 that computes what Lucene computes for a weighted query — for training only.

For a query of boosted terms and boosted exact phrases over field ``contents``, Lucene 9 scores

    score(d) = Σ_t w_t · idf_t · f_td / (f_td + K_d)          K_d = k1 · (1 − b + b · dl_d / avgdl)

with ``idf_t = ln(1 + (docCount − df + 0.5) / (df + 0.5))``, ``dl_d`` the document length as
stored in Lucene's one-byte norm (decoded, not the exact length), and for a phrase ``f`` its
exact-match count and ``idf`` the sum of its terms' idfs.  Retrieval itself always runs in
Lucene; this module only lets gradients flow to the weights.

The boost ``w_t`` Lucene receives is :func:`term_boosts` of the model's weight: ``qtf · w``, or with
Terrier-style saturation ``qtf · (k3 + 1)·w / (k3 + w)``.  Search and training call the same
function, so a k3 model ranks in Lucene exactly as it was trained.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from irglow.index.forward import ForwardIndex
from irglow.index.stats import CollectionStats
from irglow.models.twbert.terms import QueryTerms


@dataclass
class CandidateFeatures:
    """Everything the torch scorer needs for one query and its candidates (numpy, no JVM)."""

    terms: QueryTerms
    doc_ids: list[str]
    freq: np.ndarray  # [D, M] term / phrase frequencies in ``contents``
    idf: np.ndarray  # [M]
    norm: np.ndarray  # [D] K_d = k1 (1 − b + b dl/avgdl)
    labels: np.ndarray  # [D] graded relevance from the qrels (0 for unjudged; negative labels → 0)
    retrieved: np.ndarray | None = None  # [D] bool: in Lucene's top-k (False: a judged document added for training)


def idf_of(stats: CollectionStats, terms: QueryTerms, field: str = "contents") -> np.ndarray:
    uni = [stats.idf(t, field) for t in terms.unigrams]
    bi = [stats.idf(a, field) + stats.idf(b, field) for a, b, _ in terms.bigrams]
    return np.array(uni + bi, dtype=np.float64)


def build_features(terms: QueryTerms, doc_ids: list[str], stats: CollectionStats, forward: ForwardIndex,
                   k1: float, b: float, labels: dict[str, float] | None = None,
                   field: str = "contents") -> CandidateFeatures:
    freq = np.zeros((len(doc_ids), terms.n_terms), dtype=np.float64)
    for i, d in enumerate(doc_ids):
        pos = forward.positions(d)
        for m, t in enumerate(terms.unigrams):
            p = pos.get(t)
            freq[i, m] = 0 if p is None else len(p)
        for j, (a, c, gap) in enumerate(terms.bigrams):
            freq[i, len(terms.unigrams) + j] = ForwardIndex.phrase_freq(pos, a, c, gap)
    rows = [stats.row_of_doc[d] for d in doc_ids]
    dl = np.asarray(stats.docs[f"norm_{field}"])[rows].astype(np.float64)
    norm = k1 * (1 - b + b * dl / stats.avgdl(field))
    lab = np.array([max(0.0, (labels or {}).get(d, 0.0)) for d in doc_ids], dtype=np.float64)
    return CandidateFeatures(terms, list(doc_ids), freq, idf_of(stats, terms, field), norm, lab)


def term_boosts(weights, qtf=1.0, k3: float | None = None):
    """The Lucene boost of a term: ``qtf · w`` or, with k3, ``qtf · (k3 + 1) w / (k3 + w)``.

    Works on floats and tensors alike; the one definition used by training and by search.
    """
    if k3 is not None:
        weights = (k3 + 1.0) * weights / (k3 + weights)
    return qtf * weights


def bm25_scores(weights: torch.Tensor, freq: torch.Tensor, idf: torch.Tensor, norm: torch.Tensor,
                term_mask: torch.Tensor | None = None, k3: float | None = None,
                qtf: torch.Tensor | None = None) -> torch.Tensor:
    """Batched: weights [B, M], freq [B, D, M], idf [B, M], norm [B, D] → scores [B, D]."""
    weights = term_boosts(weights, 1.0 if qtf is None else qtf, k3)
    if term_mask is not None:
        weights = weights * term_mask
    saturation = freq / (freq + norm.unsqueeze(-1))
    return (saturation * (weights * idf).unsqueeze(1)).sum(-1)


def collate(features: list[CandidateFeatures], device: torch.device | str = "cpu",
            dtype: torch.dtype = torch.float32, retrieved_only: bool = False) -> dict[str, torch.Tensor]:
    """Pad a batch of queries to [B, D, M]; ``doc_mask`` and ``term_valid`` mark real entries.

    ``retrieved_only``: mask out the judged documents that Lucene's top-k did not retrieve.
    """
    B = len(features)
    D = max(len(f.doc_ids) for f in features)
    M = max(1, max(f.terms.n_terms for f in features))
    freq = torch.zeros(B, D, M, dtype=dtype)
    idf = torch.zeros(B, M, dtype=dtype)
    norm = torch.ones(B, D, dtype=dtype)
    labels = torch.zeros(B, D, dtype=dtype)
    doc_mask = torch.zeros(B, D, dtype=torch.bool)
    term_valid = torch.zeros(B, M, dtype=dtype)
    qtf = torch.ones(B, M, dtype=dtype)
    for i, f in enumerate(features):
        d, m = f.freq.shape
        freq[i, :d, :m] = torch.from_numpy(f.freq)
        idf[i, :m] = torch.from_numpy(f.idf)
        norm[i, :d] = torch.from_numpy(f.norm)
        labels[i, :d] = torch.from_numpy(f.labels)
        doc_mask[i, :d] = True if (not retrieved_only or f.retrieved is None) else torch.from_numpy(f.retrieved)
        term_valid[i, :m] = 1.0
        qtf[i, :m] = torch.tensor(f.terms.qtf(), dtype=dtype)
    out = dict(freq=freq, idf=idf, norm=norm, labels=labels, doc_mask=doc_mask, term_valid=term_valid, qtf=qtf)
    return {k: v.to(device) for k, v in out.items()}
