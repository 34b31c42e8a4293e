"""Word-level global weights for GLOW / BISON, from the exported collection statistics.

* queries: "inherent" BM25 — tf counted inside the query, query length over the average
  training-query length:  idf(w) · tf (k1 + 1) / (tf + k1 (1 − b + b · |q| / avg|q|))
* documents: BM25F (BISON Eq. 5–6) — field-weighted, per-field length-normalised adjusted tf
      tf~(w, d) = Σ_f  α_f · tf(w, f) / (1 − b_f + b_f · len_f / avglen_f)
      weight    = idf(w) · tf~ (k1 + 1) / (tf~ + k1)
* ``idf`` variant (GLOW_idf): idf(w) alone.

idf is ln(1 + (N − df + 0.5) / (df + 0.5)) with df over ``contents`` and N the real document
count by default (``idf_n = 1e8`` reproduces the papers' constant).  Words are mapped to index
terms with the index's own analyzer (cached: one JNI call per distinct word, never per occurrence).

Weights are normalised per sequence to mean 1 over content words, so a pretrained encoder sees
logits on their usual scale.  Decided and documented here: words the analyzer drops (stopwords,
punctuation) get ``stopword_weight`` (0.5 — attended, but less than any average content word),
content words unknown to the collection get the maximum idf (they are as rare as it gets),
and [CLS] / [SEP] / padding get ``special_weight`` (1.0, neutral).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from irglow.index.lucene_index import LuceneIndex
from irglow.index.stats import CollectionStats

_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_URL_SPLIT = re.compile(r"[\W_]+", re.UNICODE)


def split_words(text: str, is_url: bool = False) -> list[str]:
    """Words the way BERT's pre-tokenizer sees them; URLs are split into their alphanumeric parts."""
    if is_url:
        return [w for w in _URL_SPLIT.split(text) if w]
    return _WORD.findall(text)


@dataclass
class WeightConfig:
    query_k1: float = 2.0
    query_b: float = 0.75
    doc_k1: float = 2.0
    field_weights: dict[str, float] = field(default_factory=dict)  # α_f, default 1.0
    field_b: dict[str, float] = field(default_factory=dict)  # b_f, default 0.75
    idf_n: float | None = None  # None: the real N; 1e8: the papers' constant
    stopword_weight: float = 0.5
    special_weight: float = 1.0
    avg_query_len: float | None = None  # None: set from training queries


class TermMapper:
    """word → analyzed index term (or ``None`` for words the analyzer drops), cached."""

    def __init__(self, index: LuceneIndex):
        self.index = index
        self._cache: dict[str, str | None] = {}

    def __call__(self, word: str) -> str | None:
        key = word.lower()
        if key not in self._cache:
            terms = self.index.analyze(word) if any(ch.isalnum() for ch in word) else []
            self._cache[key] = terms[0] if terms else None
        return self._cache[key]


class WordWeighter:
    def __init__(self, index: LuceneIndex, stats: CollectionStats, config: WeightConfig | None = None):
        self.config = config or WeightConfig()
        self.stats = stats
        self.mapper = TermMapper(index)
        n = self.config.idf_n or stats.N
        self._n = float(n)
        self._field_avg = {f: stats.avgdl(f) for f in stats.meta["fields"]}

    def idf(self, term: str | None) -> float:
        """Lucene's BM25 idf over ``contents`` with this weighter's N; an unknown term gets df 0 (the maximum)."""
        return 0.0 if term is None else self.stats.idf(term, "contents", n=self._n)

    def content_length(self, words: Sequence[str]) -> int:
        """Words the analyzer keeps: the length BM25 counts (and Lucene's field length)."""
        return sum(1 for w in words if self.mapper(w))

    def set_avg_query_len(self, queries: Sequence[str]) -> float:
        lengths = [self.content_length(split_words(q)) for q in queries]
        self.config.avg_query_len = max(1.0, float(np.mean(lengths))) if lengths else 1.0
        return self.config.avg_query_len

    # -- raw (un-normalised) weights per word; None = analyzer drops the word -------------------
    def query_words(self, words: Sequence[str], mode: str = "bm25", length: int | None = None) -> list[float | None]:
        """``length``: the query length to normalise by (default: its content words); glow-tw passes
        the length in words while its units are WordPieces, so only the unit changes, not the statistics."""
        terms = [self.mapper(w) for w in words]
        if mode == "idf":
            return [None if t is None else self.idf(t) for t in terms]
        c = self.config
        tf = Counter(t for t in terms if t is not None)
        ql = sum(tf.values()) if length is None else length
        avg = c.avg_query_len or max(1.0, ql)
        norm = c.query_k1 * (1 - c.query_b + c.query_b * ql / avg)
        return [None if t is None else self.idf(t) * tf[t] * (c.query_k1 + 1) / (tf[t] + norm) for t in terms]

    def document_words(self, fields: dict[str, list[str]], mode: str = "bm25",
                       lengths: dict[str, int] | None = None) -> dict[str, list[float | None]]:
        """``fields``: field → its words (instances already concatenated). Returns a weight per word.
        ``lengths``: field lengths to normalise by (default: the field's content words), as for queries."""
        c = self.config
        terms = {f: [self.mapper(w) for w in ws] for f, ws in fields.items()}
        if mode == "idf":
            return {f: [None if t is None else self.idf(t) for t in ts] for f, ts in terms.items()}
        adjusted: Counter = Counter()
        for f, ts in terms.items():
            counts = Counter(t for t in ts if t is not None)
            length = sum(counts.values()) if lengths is None else lengths[f]
            b = c.field_b.get(f, 0.75)
            avg = self._field_avg.get(f) or max(1.0, length)
            denom = 1 - b + b * length / avg
            alpha = c.field_weights.get(f, 1.0)
            for t, n in counts.items():
                adjusted[t] += alpha * n / denom
        k1 = c.doc_k1
        weight = {t: self.idf(t) * a * (k1 + 1) / (a + k1) for t, a in adjusted.items()}
        return {f: [None if t is None else weight[t] for t in ts] for f, ts in terms.items()}

    def normalise(self, raw: Sequence[float | None]) -> list[float]:
        """Mean-1 over content words; analyzer-dropped words get ``stopword_weight``."""
        content = [w for w in raw if w is not None and w > 0]
        mean = float(np.mean(content)) if content else 1.0
        return [self.config.stopword_weight if (w is None or w <= 0) else w / mean for w in raw]
