"""Query terms for TW-BERT: uni-grams and bi-grams over the words the index's analyzer keeps.

Terms are the *analyzed* forms Lucene will match (same stopwords and stemming as the index);
each keeps its *surface* text from the query, which is what BERT reads.  A bi-gram spans two
consecutive surviving words and keeps Lucene's position gap, so "treatment of lyme" becomes the
phrase ``treatment _ lyme`` (gap 2), exactly what a PhraseQuery with those positions matches.
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

    @property
    def n_terms(self) -> int:
        return len(self.unigrams) + len(self.bigrams)

    def labels(self) -> list[str]:
        return self.unigrams + [f"{a} {b}" if g == 1 else f"{a} {'_ ' * (g - 1)}{b}" for a, b, g in self.bigrams]

    def surfaces(self) -> list[str]:
        return self.unigram_surface + self.bigram_surface


def extract_terms(index: LuceneIndex, query_id: str, text: str, bigrams: bool = True) -> QueryTerms:
    """Distinct uni-grams in first-occurrence order, then distinct bi-grams of consecutive terms."""
    tokens = index.tokens(text) if text.strip() else []
    qt = QueryTerms(query_id, text)
    for tok in tokens:
        if tok.term not in qt.unigrams:
            qt.unigrams.append(tok.term)
            qt.unigram_surface.append(text[tok.start:tok.end])
    if bigrams:
        seen = set()
        for a, b in zip(tokens, tokens[1:]):
            key = (a.term, b.term, b.position - a.position)
            if key not in seen and a.term != b.term:
                seen.add(key)
                qt.bigrams.append(key)
                qt.bigram_surface.append(text[a.start:b.end])
    return qt
