"""What a lexical ranker matched in a document: the query's analyzed terms mapped back to the surface words that
produce them, and each term's BM25 contribution to the document's score — for the results browser's highlighting.

Marking the query's raw words marks stop words ("is", "of") that Lucene never searched and misses stemmed variants
("domesticated" for "Domestication") that it did.  Here every word shown is run through the index's own analyzer
(the same stemmer and stop list it was built with), so a word is marked exactly when it becomes a query term, and
its shade is that term's share of the score Lucene gives the document:

    BM25(t, d) = idf_t · tf_td / (tf_td + k1 · (1 − b + b · dl_d / avgdl))     (Lucene 9, ``contents``)

with ``tf`` from the index's term vectors and ``dl`` the length Lucene stored (its one-byte norm): summed over a
bag-of-words query's terms this is Lucene's own BM25 score of the document (a test checks it against a run).
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from irglow.defaults import STEMMER
from irglow.index.forward import ForwardIndex
from irglow.index.lucene_index import LuceneIndex
from irglow.index.stats import CollectionStats

WORD = re.compile(r"[^\W_]+", re.UNICODE)  # the page's word (\p{L}\p{N}+): what it can mark


class TermMatcher:
    """Analyzed query terms, the surface words that become them, and their BM25 contributions in documents."""

    def __init__(self, index: LuceneIndex, stats: CollectionStats, k1: float, b: float, field: str = "contents"):
        self.index, self.stats, self.k1, self.b, self.field = index, stats, k1, b, field
        self.forward = ForwardIndex(index, field)
        self._term_of: dict[str, str | None] = {}  # lower-cased word → its analyzed term (None: a stop word)
        self._analyzed: dict[str, list[str]] = {}  # query text → its analyzed terms (mean IDF and marking share it)
        self._avgdl = stats.avgdl(field)
        self._norm = stats.docs[f"norm_{field}"]  # memory-mapped: the rows looked up are read

    def describe(self) -> str:
        cfg = self.index.meta.get("config", {})
        stem = cfg.get("stemmer", STEMMER)
        stop = "stop words kept" if cfg.get("keep_stopwords") else "stop words removed"
        return (f"Lucene's English analyzer as the index was built ({stem} stemming, {stop}); shade: the term's "
                f"BM25 score in the document ({self.field}, k1 {self.k1:g}, b {self.b:g})")

    def analyzed(self, text: str) -> list[str]:
        """The query's analyzed terms, repeats kept (analyzed once per text)."""
        if text not in self._analyzed:
            self._analyzed[text] = self.index.analyze(text)
        return self._analyzed[text]

    def query_terms(self, text: str) -> list[str]:
        """The query's analyzed terms, each once, in order."""
        return list(dict.fromkeys(self.analyzed(text)))

    def terms_of_words(self, words: Iterable[str]) -> dict[str, str | None]:
        """Each word's analyzed term, analyzing the unseen ones in one pass (words joined by spaces; a word maps
        to the token whose span it holds).  A word the analyzer drops maps to ``None``."""
        new = sorted({w.lower() for w in words} - set(self._term_of))
        if new:
            text = " ".join(new)
            starts, pos = {}, 0
            for w in new:
                starts[pos] = w
                pos += len(w) + 1
            for w in new:
                self._term_of[w] = None
            for tok in self.index.tokens(text, self.field):
                w = starts.get(tok.start)
                if w is not None and self._term_of[w] is None:
                    self._term_of[w] = tok.term
        return {w.lower(): self._term_of[w.lower()] for w in words}

    def surface(self, texts: Iterable[str], terms: Iterable[str]) -> dict[str, str]:
        """{lower-cased surface word: query term} for every word of ``texts`` that analyzes to one of ``terms``."""
        wanted = set(terms)
        words = {w.lower() for t in texts if t for w in WORD.findall(t)}
        return {w: t for w, t in self.terms_of_words(words).items() if t in wanted}

    def contributions(self, doc_id: str, terms: Iterable[str]) -> dict[str, float]:
        """{term: BM25(t, d)} for the query terms the document holds (Lucene's formula and stored length)."""
        row = self.stats.row_of_doc.get(doc_id)
        if row is None:
            return {}
        try:
            positions = self.forward.positions(doc_id)
        except KeyError:
            return {}
        norm = self.k1 * (1 - self.b + self.b * float(self._norm[row]) / self._avgdl) if self._avgdl else self.k1
        out = {}
        for t in terms:
            p = positions.get(t)
            if p is not None and len(p):
                tf = float(len(p))
                out[t] = self.stats.idf(t, self.field) * tf / (tf + norm)
        return out

    def mean_idf(self, queries: Mapping[str, str]) -> dict[str, float | None]:
        """Mean IDF of each query's analyzed terms (``None``: a query the analyzer leaves empty)."""
        out = {}
        for q, text in queries.items():
            terms = self.analyzed(text)
            out[q] = sum(self.stats.idf(t, self.field) for t in terms) / len(terms) if terms else None
        return out
