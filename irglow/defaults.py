"""The defaults several layers share, written once: Anserini's BM25 parameters for MS MARCO passage (k1 0.9,
b 0.4), the depth of a run (TREC's 1,000) and the seed of every draw (validation splits, shuffles, demo
collections, samples), the measures of a table and the significance tests.  Every system, CLI option, model and trainer without its own setting reads them here."""

BM25_K1 = 0.9
BM25_B = 0.4
DEPTH = 1000
FUSION_METHOD = "wsum"  # a hybrid's fusion: the weighted sum of normalised scores, weights tuned (rrf: none tuned)
FUSION_NORM = "min-max"  # score normalisation before a weighted sum
FUSION_MEASURE = "nDCG@10"  # what tuned fusion weights maximise
FUSION_STEP = 0.05  # the convex weight grid's step
RRF_K = 60.0  # reciprocal-rank fusion's constant (Cormack et al., 2009)
THREADS = 2  # search threads where a setting does not say
BASELINE = "bm25"  # the run every other is compared with
STEMMER = "porter"  # the analyzer's stemmer
STEMMERS = ("porter", "krovetz", "none")
DEVICE = "auto"  # CUDA where there is one
QLD_MU = 1000.0  # query likelihood's Dirichlet prior (Anserini's and Pyserini's default)
SEED = 13
# the share of the training queries every trainer holds out (the same ones, with the same seed: a fusion tunes on them)
VAL_FRACTION = 0.1
MEASURES = ("nDCG@10", "RR@10", "R@100", "R@1000", "AP", "NCG@10")  # a table's measures when none are named
SIGNIFICANCE_TESTS = ("randomization", "t", "bootstrap", "wilcoxon")
CORRECTIONS = ("holm", "bonferroni", "bh", "none")
PERMUTATIONS = 10_000  # randomization test's sign flips, bootstrap's resamples
MAX_PERMUTATIONS = 1_000_000  # more sharpen p no further than its printed digits, at minutes of CPU
