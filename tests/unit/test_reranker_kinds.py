"""Issue 68.4: monoBERT and NRM-F are kinds of the one re-ranker registry, declared once, and every kind goes the
same way (fit, load, rerank_run; one PyTerrier class)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from irglow.models.rerank.builtin import TORCH_MODELS
from irglow.models.rerank.kinds import BUILT_IN, RerankerKind, TorchKind, kind_names, reranker_kind, reranker_kinds
from irglow.models.rerank.train import RerankTrainConfig


def test_irglows_kinds_are_registry_entries_declared_once():
    assert list(BUILT_IN) == list(TORCH_MODELS) == ["monobert", "nrmf"]
    assert kind_names()[:2] == ("monobert", "nrmf")
    for name, kind in BUILT_IN.items():
        assert isinstance(kind, RerankerKind) and isinstance(kind, TorchKind) and kind.name == name
        assert reranker_kinds()[name] is kind and reranker_kind(name) is kind
        assert kind.collective and "int8" in kind.precisions and kind.code() is None
    # the training settings' choices and per-kind defaults come from the same table
    choices = next(f for f in fields(RerankTrainConfig) if f.name == "kind").metadata["setting"]["choices"]
    assert tuple(choices) == tuple(TORCH_MODELS)
    assert (RerankTrainConfig(kind="monobert").loss, RerankTrainConfig(kind="monobert").lr) == ("softmax", 1e-4)
    assert (RerankTrainConfig(kind="nrmf").loss, RerankTrainConfig(kind="nrmf").lr) == ("pairwise", 1e-3)


def test_a_kind_binds_its_own_settings_and_names_a_wrong_one():
    bound = BUILT_IN["nrmf"].bound({"epochs": 2, "model": {"dim": 16}}, "rerank.nrmf.model")
    assert isinstance(bound, RerankTrainConfig) and (bound.kind, bound.epochs) == ("nrmf", 2)
    with pytest.raises(ValueError, match=r"rerank.nrmf.model"):
        BUILT_IN["nrmf"].bound({"model": {"dimm": 16}}, "rerank.nrmf.model")
    with pytest.raises(ValueError, match=r"'linear' is not a re-ranker kind; the kinds: monobert, nrmf"):
        reranker_kind("linear")


def test_a_plugin_kinds_default_path_reranks_through_its_own_rerank(tmp_path):
    from irglow.runs.trec import Run

    class Reverse(RerankerKind):
        name = "reverse"

        def rerank(self, model_dir, run, queries, docs, depth, tag):
            return Run({q: [(d, 10.0 - x) for d, x in r[:depth]] + [(d, -x) for d, x in r[depth:]]
                        for q, r in run.ranking.items()}, tag)

    kind = Reverse()
    assert not kind.collective and kind.precisions == ("fp32",) and kind.load(tmp_path) == tmp_path
    run = Run({"q": [("a", 3.0), ("b", 2.0), ("c", 1.0)]}, "bm25")
    out = kind.rerank_run(kind.load(tmp_path), run, [], {}, 2, "reverse", checkpoint=tmp_path / "x", batch_size=8)
    assert [d for d, _ in out.ranking["q"]] == ["b", "a", "c"] and out.tag == "reverse"


def test_a_model_folder_that_is_gone_or_not_irglows_is_said_so(tmp_path):
    """A run folder names a model that was pruned from $IRGLOW_MODELS: the error says it is gone, not that the folder
    is an old one (which it said for both)."""
    from irglow.models.rerank.kinds import kind_of

    with pytest.raises(FileNotFoundError, match=r"the model folder .*gone is gone \(removed from \$IRGLOW_MODELS"):
        kind_of(tmp_path / "gone")
    (tmp_path / "old").mkdir()
    with pytest.raises(FileNotFoundError, match=r"old is not a re-ranker folder irglow wrote"):
        kind_of(tmp_path / "old")
