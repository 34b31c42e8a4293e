"""Re-rankers as a pipeline stage: train each configured model on the train split, re-rank the test
split's BM25 run (and, with ``rerank_also``, other runs such as the hybrid ``bm25f+glow``)."""

from __future__ import annotations

from pathlib import Path

from irglow.config import stage_settings
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.rerank.rerank import load_reranker, rerank
from irglow.models.rerank.train import RerankTrainConfig, RerankTrainer
from irglow.models.source import TrainSource, keyed_train_dir, train_root


def settings(config) -> tuple[list[str], int, list[str], dict[str, dict]]:
    """The ``[rerank]`` section as (models, re-ranking depth, other runs to re-rank, each model's training
    settings); a misspelt key is named."""
    rcfg = dict(config.get("rerank", {}))
    rcfg.pop("enabled", None)
    models = list(rcfg.pop("models", ["monobert", "nrmf"]))
    unknown = sorted(set(rcfg) - {"depth", "rerank_also", *models})
    if unknown:
        raise ValueError(f"unknown [rerank] setting(s) {unknown}; known: models, depth, rerank_also, and one "
                         f"section per model ({', '.join(models)})")
    trainers = {kind: {**stage_settings(rcfg.get(kind, {}), kind), "kind": kind} for kind in models}
    return models, rcfg.get("depth", 100), list(rcfg.get("rerank_also", [])), trainers


def tags(config) -> list[str]:
    """The runs this stage writes."""
    models, _, also, _ = settings(config)
    return models + [f"{a}+{m}" for a in also for m in models]


def check(config) -> None:
    """Stop on a wrong training setting before any work."""
    for trainer in settings(config)[3].values():
        RerankTrainConfig.from_dict(trainer)


def rerank_stage(config, collection, index, stats, out: Path, runs: dict | None = None,
                 source: TrainSource | None = None) -> dict:
    models, depth, also, trainers = settings(config)
    c, lx = config.get("collection", {}), config.get("lexical", {})
    docs = {d.doc_id: d for d in collection.docs_iter()}
    source = source or TrainSource(collection, index, stats, c.get("train_split", "train"))
    train_docs = docs if not source.is_other_than(collection) else {d.doc_id: d for d in source.collection.docs_iter()}
    test_q = collection.queries(c.get("test_split", "test"))
    first = (runs or {}).get("bm25") or LexicalSearcher(index, LexicalConfig("bm25", k1=lx.get("k1", 0.9),
                                                                              b=lx.get("b", 0.4), depth=depth)
                                                         ).search(test_q, tag="bm25")
    produced = {}
    for kind in models:
        train_dir = keyed_train_dir(train_root(config, out) / f"{kind}-train",
                                    {"settings": trainers[kind], "source": source.digest})
        best = RerankTrainer(RerankTrainConfig.from_dict(trainers[kind]), train_dir).train(
            source.index, train_docs, source.queries(), source.qrels())
        model = load_reranker(best)
        for name, base in [("bm25", first)] + [(a, (runs or {}).get(a)) for a in also]:
            if base is None:
                continue
            tag = kind if name == "bm25" else f"{name}+{kind}"
            produced[tag] = rerank(model, base, test_q, docs, depth, tag=tag)
            produced[tag].write(out / f"{tag}.run")
    return produced
