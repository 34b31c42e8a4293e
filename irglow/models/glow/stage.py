"""GLOW as a pipeline stage: train on the train split, encode the corpus into faiss, write runs, and
fuse each model with a Lucene run (weights tuned on the queries the training held out)."""

from __future__ import annotations

from pathlib import Path

from irglow.config import stage_settings
from irglow.models.glow.model import GlowEncoder
from irglow.models.glow.runner import glow_run, hybrid_runs, validation_queries
from irglow.models.glow.train import GlowTrainConfig, GlowTrainer
from irglow.stages import train_root


def glow_stage(config, collection, index, stats, out: Path, runs: dict | None = None) -> dict:
    gcfg = stage_settings(config.get("glow", {}), "glow")
    variants = gcfg.pop("variants", ["glow"])
    fuse_with = gcfg.pop("fuse_with", ["bm25f"])
    c, lx = config.get("collection", {}), config.get("lexical", {})
    depth = lx.get("depth", 1000)
    docs = {d.doc_id: d for d in collection.docs_iter()}
    train_q, train_qrels = collection.queries(c.get("train_split", "train")), collection.qrels(c.get("train_split", "train"))
    test_q = collection.queries(c.get("test_split", "test"))
    model_cfg = dict(gcfg.get("model", {}))
    model_cfg.setdefault("fields", list(index.fields))
    runs, dense = {}, {}
    tune_q, tune_qrels = [], []
    for variant in variants:
        tc = GlowTrainConfig.from_dict({**gcfg, "model": {**model_cfg, "variant": variant}})
        best = GlowTrainer(tc, train_root(config, out) / f"{variant}-train").train(index, stats, docs, train_q, train_qrels)
        tune_q, tune_qrels = validation_queries(best, train_q, train_qrels)
        run, info = glow_run(GlowEncoder.load(best), index, stats, list(docs.values()), test_q, out, variant,
                             depth=depth, also={"tune": tune_q})
        run.write(out / f"{variant}.run")
        runs[variant] = run
        dense[variant] = (run, info["also"].get("tune"))
    for lexical in fuse_with if tune_q else []:
        fused, _ = hybrid_runs(dense, index, test_q, tune_q, tune_qrels, lexical,
                               field_weights=lx.get("field_weights", {}), depth=depth,
                               k1=lx.get("k1", 0.9), b=lx.get("b", 0.4), out_dir=out)
        runs.update(fused)
    return runs
