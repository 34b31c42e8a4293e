"""The lexical systems as a registry: each ``[lexical]`` system is a name, the Lucene similarity it scores with and
the query it builds from a query's analyzed terms — irglow's own (BM25, multi-field BM25, BM25F, TF-IDF, query
likelihood) and any another package registers under the entry-point group ``irglow.lexical``
(``jm = "my_package:JELINEK_MERCER"``, a :class:`LexicalSystem`).  A registered system is a ``[lexical]`` system
with every right: ``lexical.systems = ["jm"]``, ``Lexical("jm")``, a fusion part tuned on the training queries, a
re-ranker's first stage, a PyTerrier transformer.  Settings a similarity reads (``k1``, ``b``, ``mu``) are
``[lexical]``'s, declared once in :class:`~irglow.lexical.searchers.LexicalConfig`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

ENTRY_POINTS = "irglow.lexical"


@dataclass(frozen=True)
class LexicalSystem:
    """One lexical system: ``similarity(config)`` gives its Lucene ``Similarity`` (``None``: Pyserini's searcher
    scores it — the multi-field sum), ``build(terms, field_weights)`` its Lucene query (``None``: a bag of words on
    ``contents``, searched in bulk); ``multi_field``: its field weights are configured or tuned (on ``tuning_grid``,
    the weights tried per field, none below ``min_field_weight``); ``rm3``: Pyserini's RM3 expands it
    (``<name>-rm3``)."""

    name: str
    meaning: str
    similarity: Callable[[Any], Any] | None = None
    build: Callable[[list[str], dict[str, float]], Any] | None = None
    multi_field: bool = False
    rm3: bool = False
    tuning_grid: tuple[float, ...] = ()
    min_field_weight: float = 0.0  # the smallest field weight its query takes (CombinedFieldQuery: 1)


def _similarity(java_class: str, *settings: str) -> Callable[[Any], Any]:
    def make(config):
        from irglow.lexical import queries as lq

        return lq.J(f"org.apache.lucene.search.similarities.{java_class}")(
            *(float(getattr(config, s)) for s in settings))
    return make


def _bm25f(terms: list[str], weights: dict[str, float]):
    from irglow.lexical import queries as lq

    return lq.bm25f(terms, weights)


BUILT_IN: dict[str, LexicalSystem] = {s.name: s for s in (
    LexicalSystem("bm25", "BM25 on contents (k1, b)", _similarity("BM25Similarity", "k1", "b"), rm3=True),
    LexicalSystem("bm25f", "BM25F: Lucene's CombinedFieldQuery over the weighted fields",
                  _similarity("BM25Similarity", "k1", "b"), _bm25f, multi_field=True, tuning_grid=(1.0, 2.0, 4.0),
                  min_field_weight=1.0),
    LexicalSystem("bm25-mf", "Pyserini's multi-field BM25: the weighted sum of each field's BM25", None,
                  multi_field=True, rm3=True, tuning_grid=(0.25, 0.5, 1.0, 2.0, 4.0)),
    LexicalSystem("tfidf", "TF-IDF: Lucene's ClassicSimilarity", _similarity("ClassicSimilarity")),
    LexicalSystem("qld", "query likelihood with Dirichlet smoothing (mu): Pyserini's set_qld",
                  _similarity("LMDirichletSimilarity", "mu")),
)}


def lexical_systems() -> dict[str, LexicalSystem]:
    """irglow's systems, then the registered ones; a registered name irglow's (or another plugin) uses, or an entry
    point that is no :class:`LexicalSystem`, is an error naming the entry point."""
    from irglow.utils.plugins import registered

    found = dict(BUILT_IN)
    for point in registered(ENTRY_POINTS):
        where = f"entry point {point.name} = {point.value!r} ({ENTRY_POINTS})"
        try:
            system = point.load()
        except Exception as e:  # noqa: BLE001 - a plugin's own failure, named with its entry point
            raise ValueError(f"{where} failed to load: {type(e).__name__}: {e}") from e
        if not isinstance(system, LexicalSystem) or system.name != point.name:
            raise ValueError(f"{where} is not a LexicalSystem named {point.name!r} (irglow.lexical.systems): it is "
                             f"{system!r}")
        if system.name in found:
            raise ValueError(f"{where}: the lexical system {system.name!r} is taken")
        found[system.name] = system
    return found


def lexical_system(name: str) -> LexicalSystem:
    systems = lexical_systems()
    if name not in systems:
        raise ValueError(f"unknown lexical system {name!r}; choose from {', '.join(systems)}")
    return systems[name]


def rm3_systems() -> list[str]:
    """The systems Pyserini's RM3 expands (``<name>-rm3``)."""
    return [n for n, s in lexical_systems().items() if s.rm3]
