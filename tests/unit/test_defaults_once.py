"""Issue 68.6: each default declared once (irglow/defaults.py) — the fusion method, normalisation, measure, step and
RRF constant, μ, threads, the baseline, the stemmer, the device — and every function, class, option and setting that
offers one takes it from there, so they cannot disagree (the fusion method was wsum in [fusion] and rrf in ``fuse``,
PyTerrier's Fusion and the recorded result)."""

from __future__ import annotations

import inspect
from dataclasses import fields

from irglow import defaults
from irglow.settings import DECLARED


def _default(func, name):
    return inspect.signature(func).parameters[name].default


def _field(cls, name):
    return next(f.default for f in fields(cls) if f.name == name)


def test_the_fusion_defaults_agree_everywhere():
    from irglow.hybrid import FusionResult
    from irglow.runs import fusion, pt, qpp

    assert DECLARED["fusion"]["method"].default == defaults.FUSION_METHOD == _default(fusion.fuse, "method") \
        == _default(fusion.tune_weights, "method") == _default(fusion.cross_fitted, "method") \
        == _default(pt.Fusion.__init__, "method") == _field(FusionResult, "method")
    assert DECLARED["fusion"]["norm"].default == defaults.FUSION_NORM == _default(fusion.fuse, "norm") \
        == _default(pt.Fusion.__init__, "norm")
    assert DECLARED["fusion"]["measure"].default == defaults.FUSION_MEASURE == _default(fusion.tune_weights, "measure")
    assert DECLARED["fusion"]["step"].default == defaults.FUSION_STEP == _default(fusion.tune_weights, "step")
    assert defaults.RRF_K == _default(fusion.fuse, "k") == _default(qpp.fuse_weighted, "k")


def test_the_lexical_and_model_defaults_agree_everywhere():
    from irglow.cli import build_parser
    from irglow.index.lucene_index import IndexConfig
    from irglow.lexical.pt import QL
    from irglow.lexical.searchers import LexicalConfig
    from irglow.lexical.stage import LexicalSettings
    from irglow.models.glow.train import GlowTrainConfig
    from irglow.models.rerank.train import RerankTrainConfig
    from irglow.models.twbert.train import TrainConfig

    assert "mu" not in DECLARED["ql"] and defaults.QLD_MU == _field(LexicalConfig, "mu") == _field(LexicalSettings, "mu")
    assert defaults.THREADS == _field(LexicalConfig, "threads") == _field(LexicalSettings, "threads") \
        == _default(QL.__init__, "threads")
    assert defaults.BASELINE == DECLARED["eval"]["baseline"].default
    assert defaults.STEMMER == _field(IndexConfig, "stemmer")
    assert defaults.DEVICE == _field(TrainConfig, "device") == _field(GlowTrainConfig, "device") \
        == _field(RerankTrainConfig, "device")
    args = build_parser().parse_args(["search", "demo"])
    assert (args.stemmer, args.mu) == (defaults.STEMMER, defaults.QLD_MU)
    assert build_parser().parse_args(["fuse", "a", "b", "-o", "c"]).k == defaults.RRF_K
