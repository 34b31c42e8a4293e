"""GLOW as a pipeline stage: train on the train split, encode the corpus into faiss, write runs."""

from __future__ import annotations

from pathlib import Path

from irglow.models.glow.model import GlowEncoder
from irglow.models.glow.runner import glow_run
from irglow.models.glow.train import GlowTrainConfig, GlowTrainer


def glow_stage(config, collection, index, stats, out: Path) -> dict:
    gcfg = dict(config.get("glow", {}))
    gcfg.pop("enabled", None)
    variants = gcfg.pop("variants", ["glow"])
    c = config.get("collection", {})
    docs = {d.doc_id: d for d in collection.docs_iter()}
    train_q, train_qrels = collection.queries(c.get("train_split", "train")), collection.qrels(c.get("train_split", "train"))
    test_q = collection.queries(c.get("test_split", "test"))
    model_cfg = dict(gcfg.get("model", {}))
    model_cfg.setdefault("fields", list(index.fields))
    runs = {}
    for variant in variants:
        tc = GlowTrainConfig.from_dict({**gcfg, "model": {**model_cfg, "variant": variant}})
        best = GlowTrainer(tc, out / f"{variant}-train").train(index, stats, docs, train_q, train_qrels)
        run, _ = glow_run(GlowEncoder.load(best), index, stats, list(docs.values()), test_q, out, variant,
                          depth=config.get("lexical", {}).get("depth", 1000))
        run.write(out / f"{variant}.run")
        runs[variant] = run
    return runs
