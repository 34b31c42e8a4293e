"""The workload the JVM's start-up cache is recorded from (:mod:`irglow.index.jvm_aot`): what a lexical command
does, in a process of its own that ends through ``System.exit`` (the JVM writes its cache on that exit only).

    IRGLOW_JVM_AOT_RECORD=<cache file> python -m irglow.lexical.jvm_warmup <index folder>
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from irglow.data.demo import DemoCollection, DemoConfig
from irglow.data.records import Query
from irglow.index.jvm import autoclass
from irglow.index.jvm_aot import FAILED, RECORDING, recording
from irglow.index.lucene_index import IndexConfig, LuceneIndex, build_index
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher


def index_terms(index: LuceneIndex, limit: int = 40) -> list[str]:
    """Up to ``limit`` terms spread over the first ``50 × limit`` of the index's ``contents`` vocabulary: queries
    that match documents, so scoring runs, not only analysis."""
    terms = autoclass("org.apache.lucene.index.MultiTerms").getTerms(index.lucene_reader, "contents")
    if terms is None:
        return []
    found, it = [], terms.iterator()
    while len(found) < 50 * limit:
        term = it.next()
        if term is None:
            break
        found.append(term.utf8ToString())
    return found[::max(1, len(found) // limit)][:limit]


def workload(index_path: Path) -> None:  # its version: irglow.index.jvm_aot.WORKLOAD
    """Open the index (Lucene's reader of its codec), index a small generated collection with fields (Anserini's
    indexer, irglow's generator, the id table), then analyze and search bag-of-words queries on it with each lexical
    system and read the hits.  The searches run on the small index, not the named one: on a million documents the
    five systems took 90 s, which the command that records the cache waits for."""
    LuceneIndex.open(index_path).lucene_reader.numDocs()  # first: a wrong path fails before anything is built
    with tempfile.TemporaryDirectory(prefix="irglow-warmup-") as scratch:
        small = DemoCollection(DemoConfig(n_topics=3, docs_per_topic=2, n_roundups=1, n_background=4))
        index = build_index(small, IndexConfig(threads=1), root=scratch)
        terms = index_terms(index) or ["information", "retrieval"]
        queries = [Query(str(i), " ".join(terms[i:i + 3])) for i in range(0, len(terms), 3)]
        for system in ("bm25", "bm25-mf", "bm25f", "tfidf", "qld"):
            LexicalSearcher(index, LexicalConfig(system=system, depth=100)).search(queries)


def main(argv: list[str] | None = None) -> None:
    args = argv if argv is not None else sys.argv[1:]
    if not recording() or len(args) != 1:
        raise SystemExit(f"usage: {RECORDING}=<cache file> python -m irglow.lexical.jvm_warmup <index folder>")
    code = 0
    try:
        workload(Path(args[0]))
    except Exception as e:  # noqa: BLE001 - reported to the parent, which goes on without a cache
        print(f"{FAILED} {type(e).__name__}: {e}", file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    autoclass("java.lang.System").exit(code)


if __name__ == "__main__":
    main()
