"""The lexical defaults, defined once: every system, CLI option and model that uses BM25 without its own
setting reads them here (Anserini's BM25 defaults for MS MARCO passage, k1 0.9 and b 0.4)."""

BM25_K1 = 0.9
BM25_B = 0.4
DEPTH = 1000
