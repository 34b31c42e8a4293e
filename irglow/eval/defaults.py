"""What a table shows when no measures are named — ``irglow compare``/``eval``, the pipeline and the Experiment
API alike (a light module: the CLI reads it without importing ir_measures)."""

DEFAULT_MEASURES = ["nDCG@10", "RR@10", "R@100", "R@1000", "AP", "NCG@10"]
