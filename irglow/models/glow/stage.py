"""GLOW as a pipeline stage: train on the train split, encode the corpus into faiss, write runs, and
fuse each model with a Lucene run (weights tuned on the queries the training held out).

Zero-shot (models trained on another collection) no query of the evaluated collection may tune
anything, and the held-out training queries belong to another corpus: the hybrid is then
reciprocal-rank fusion, which has no weight to tune."""

from __future__ import annotations

from pathlib import Path

from irglow.config import stage_settings
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.glow.model import GlowEncoder
from irglow.models.glow.runner import glow_run, hybrid_runs, validation_queries
from irglow.models.glow.train import GlowTrainConfig, GlowTrainer
from irglow.runs.fusion import fuse
from irglow.models.source import TrainSource, keyed_train_dir, train_root


def settings(config) -> tuple[dict, list[str], list[str]]:
    """The ``[glow]`` section as (training settings, model variants, lexical runs each variant is fused with)."""
    gcfg = stage_settings(config.get("glow", {}), "glow")
    return gcfg, list(gcfg.pop("variants", ["glow"])), list(gcfg.pop("fuse_with", ["bm25f"]))


def tags(config) -> list[str]:
    """The runs this stage writes."""
    _, variants, fuse_with = settings(config)
    return variants + [f"{lexical}+{v}" for lexical in fuse_with for v in variants]


def check(config) -> None:
    """Stop on a wrong training setting before any work."""
    GlowTrainConfig.from_dict(settings(config)[0])


def glow_stage(config, collection, index, stats, out: Path, runs: dict | None = None,
               source: TrainSource | None = None) -> dict:
    gcfg, variants, fuse_with = settings(config)
    c, lx = config.get("collection", {}), config.get("lexical", {})
    depth = lx.get("depth", 1000)
    given = dict(runs or {})
    docs = {d.doc_id: d for d in collection.docs_iter()}
    source = source or TrainSource(collection, index, stats, c.get("train_split", "train"))
    zero_shot = source.is_other_than(collection)
    train_docs = docs if not zero_shot else {d.doc_id: d for d in source.collection.docs_iter()}
    train_q, train_qrels = source.queries(), source.qrels()
    test_q = collection.queries(c.get("test_split", "test"))
    model_cfg = dict(gcfg.get("model", {}))
    model_cfg.setdefault("fields", list(source.index.fields))
    runs, dense = {}, {}
    tune_q, tune_qrels = [], []
    for variant in variants:
        tc = GlowTrainConfig.from_dict({**gcfg, "model": {**model_cfg, "variant": variant}})
        train_dir = keyed_train_dir(train_root(config, out) / f"{variant}-train",
                                    {"settings": gcfg, "model": model_cfg, "variant": variant, "source": source.digest})
        best = GlowTrainer(tc, train_dir).train(
            source.index, source.stats, train_docs, train_q, train_qrels)
        if not zero_shot:
            tune_q, tune_qrels = validation_queries(best, train_q, train_qrels)
        run, info = glow_run(GlowEncoder.load(best), index, stats, list(docs.values()), test_q, out, variant,
                             depth=depth, also={"tune": tune_q} if tune_q else None)
        run.write(out / f"{variant}.run")
        runs[variant] = run
        dense[variant] = (run, info["also"].get("tune"))
    if zero_shot:
        for lexical in fuse_with:
            base = given.get(lexical) or LexicalSearcher(index, LexicalConfig(
                lexical, k1=lx.get("k1", 0.9), b=lx.get("b", 0.4), depth=depth,
                field_weights=lx.get("field_weights", {}))).search(test_q, tag=lexical)
            for variant in variants:
                tag = f"{lexical}+{variant}"
                runs[tag] = fuse([base, runs[variant]], "rrf", depth=depth, tag=tag)
                runs[tag].write(out / f"{tag}.run")
        return runs
    for lexical in fuse_with if tune_q else []:
        fused, _ = hybrid_runs(dense, index, test_q, tune_q, tune_qrels, lexical,
                               field_weights=lx.get("field_weights", {}), depth=depth,
                               k1=lx.get("k1", 0.9), b=lx.get("b", 0.4), out_dir=out)
        runs.update(fused)
    return runs
