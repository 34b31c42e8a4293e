"""The defaults several layers share, written once: Anserini's BM25 parameters for MS MARCO passage (k1 0.9,
b 0.4), the depth of a run (TREC's 1,000) and the seed of every draw (validation splits, shuffles, demo
collections, samples).  Every system, CLI option, model and trainer without its own setting reads them here."""

BM25_K1 = 0.9
BM25_B = 0.4
DEPTH = 1000
SEED = 13
