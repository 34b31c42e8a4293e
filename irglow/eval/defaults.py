"""What a table shows when no measures are named — ``irglow compare``/``eval``, the pipeline and the Experiment
API alike (a light module: the CLI reads it without importing ir_measures); written once in
:mod:`irglow.defaults`."""

from irglow.defaults import MEASURES

DEFAULT_MEASURES = list(MEASURES)
