"""Query terms for TW-BERT: uni-grams and bi-grams over the words the index's analyzer keeps.

Terms are the *analyzed* forms Lucene will match (same stopwords and stemming as the index);
each keeps its *surface* text from the query, which is what BERT reads.  A bi-gram spans two
consecutive surviving words and keeps Lucene's position gap, so "treatment of lyme" becomes the
phrase ``treatment _ lyme`` (gap 2), exactly what a PhraseQuery with those positions matches.

Terms are distinct, and each carries its count in the query (``qtf``): Pyserini's bag-of-words
query boosts a repeated term by its count, so weights that multiply the count make "every weight
1" *exactly* Lucene's BM25 run, repeated words included.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from irglow.index.lucene_index import LuceneIndex


@dataclass
class QueryTerms:
    query_id: str
    text: str
    unigrams: list[str] = field(default_factory=list)
    unigram_surface: list[str] = field(default_factory=list)
    bigrams: list[tuple[str, str, int]] = field(default_factory=list)  # (t1, t2, position gap)
    bigram_surface: list[str] = field(default_factory=list)
    dropped: int = 0  # terms removed to fit the model's input budget
    unigram_counts: list[int] = field(default_factory=list)  # qtf of each uni-gram (empty: all 1)
    bigram_counts: list[int] = field(default_factory=list)

    @property
    def n_terms(self) -> int:
        return len(self.unigrams) + len(self.bigrams)

    def labels(self) -> list[str]:
        return self.unigrams + [f"{a} {b}" if g == 1 else f"{a} {'_ ' * (g - 1)}{b}" for a, b, g in self.bigrams]

    def surfaces(self) -> list[str]:
        return self.unigram_surface + self.bigram_surface

    def qtf(self) -> list[int]:
        """Query term frequency of every term, uni-grams first (1 where no count was recorded)."""
        uni = self.unigram_counts or [1] * len(self.unigrams)
        bi = self.bigram_counts or [1] * len(self.bigrams)
        return list(uni[: len(self.unigrams)]) + list(bi[: len(self.bigrams)])

    def is_bigram(self) -> list[bool]:
        return [False] * len(self.unigrams) + [True] * len(self.bigrams)

    def head(self, n_uni: int, n_bi: int) -> "QueryTerms":
        """The first ``n_uni`` uni-grams and ``n_bi`` bi-grams (counts and surfaces kept aligned)."""
        q = self.qtf()
        dropped = self.dropped + self.n_terms - n_uni - n_bi
        return QueryTerms(self.query_id, self.text, self.unigrams[:n_uni], self.unigram_surface[:n_uni],
                          self.bigrams[:n_bi], self.bigram_surface[:n_bi], dropped, q[:n_uni],
                          q[len(self.unigrams):len(self.unigrams) + n_bi])


def extract_terms(index: LuceneIndex, query_id: str, text: str, bigrams: bool = True) -> QueryTerms:
    """Distinct uni-grams in first-occurrence order, then distinct bi-grams of consecutive terms."""
    tokens = index.tokens(text) if text.strip() else []
    qt = QueryTerms(query_id, text)
    slot: dict = {}
    for tok in tokens:
        if tok.term in slot:
            qt.unigram_counts[slot[tok.term]] += 1
            continue
        slot[tok.term] = len(qt.unigrams)
        qt.unigrams.append(tok.term)
        qt.unigram_surface.append(text[tok.start:tok.end])
        qt.unigram_counts.append(1)
    if bigrams:
        seen: dict = {}
        for a, b in zip(tokens, tokens[1:]):
            key = (a.term, b.term, b.position - a.position)
            if a.term == b.term:
                continue
            if key in seen:
                qt.bigram_counts[seen[key]] += 1
                continue
            seen[key] = len(qt.bigrams)
            qt.bigrams.append(key)
            qt.bigram_surface.append(text[a.start:b.end])
            qt.bigram_counts.append(1)
    return qt
