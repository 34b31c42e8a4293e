"""irglow: Lucene baselines, TW-BERT, GLOW/BISON and honest comparison tables."""

import logging as _logging

__version__ = "0.2.0.dev0"  # the one place: pyproject.toml reads it (dynamic), `irglow --version` prints it

# faiss reports at INFO, on every import, which of its AVX builds it could not load: expected on most
# CPUs and not actionable; its real warnings still show.
_logging.getLogger("faiss.loader").setLevel(_logging.WARNING)


RANKERS = ("Ranker", "Lexical", "TWBert", "Dense", "Model", "MonoBERT", "NRMF", "Fusion", "Rerank", "StageRun")


def __getattr__(name: str):
    """``from irglow import Experiment, Lexical, Fusion, Rerank …`` without importing the pipeline on ``import
    irglow`` (the CLI stays fast)."""
    if name == "Experiment":
        from irglow.experiment import Experiment

        return Experiment
    if name in RANKERS:
        from irglow import rankers

        return getattr(rankers, name)
    if name == "QL":
        from irglow.lexical.ql import QL

        return QL
    raise AttributeError(f"module 'irglow' has no attribute {name!r}")


__all__ = ["Experiment", "QL", *RANKERS]
