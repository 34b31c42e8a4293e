"""irglow: Lucene baselines, TW-BERT, GLOW/BISON and honest comparison tables."""

import logging as _logging

# faiss reports at INFO, on every import, which of its AVX builds it could not load: expected on most
# CPUs and not actionable; its real warnings still show.
_logging.getLogger("faiss.loader").setLevel(_logging.WARNING)


def __getattr__(name: str):
    """``from irglow import Experiment`` without importing the pipeline on ``import irglow`` (the CLI stays fast)."""
    if name == "Experiment":
        from irglow.experiment import Experiment

        return Experiment
    if name == "Hybrid":
        from irglow.runs.wanted import Hybrid

        return Hybrid
    if name == "Reranked":
        from irglow.models.rerank.stage import Reranked

        return Reranked
    raise AttributeError(f"module 'irglow' has no attribute {name!r}")


__all__ = ["Experiment", "Hybrid", "Reranked"]
