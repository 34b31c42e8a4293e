"""irglow: Lucene baselines, TW-BERT, GLOW/BISON and honest comparison tables."""

import logging as _logging

# faiss reports at INFO, on every import, which of its AVX builds it could not load: expected on most
# CPUs and not actionable; its real warnings still show.
_logging.getLogger("faiss.loader").setLevel(_logging.WARNING)
