"""TW-BERT as a pipeline stage: train on the collection's train split, write twbert runs."""

from __future__ import annotations

import logging
from pathlib import Path

from irglow.config import stage_settings
from irglow.models.twbert.model import TWBert, budget_summary
from irglow.models.twbert.search import prior_queries, twbert_search, weigh_queries
from irglow.models.twbert.train import TrainConfig, Trainer
from irglow.models.checkpoints import read_training
from irglow.models.source import TrainSource, keyed_train_dir, train_root, write_stage_notes
from irglow.runs.hybrid import wants_tuning, write_tuning_run

log = logging.getLogger(__name__)


def settings(config) -> tuple[dict, bool, str | None]:
    """The ``[twbert]`` section as (training settings, whether to add the RM3 run, a trained model to reuse)."""
    tcfg = stage_settings(config.get("twbert", {}), "twbert")
    return tcfg, tcfg.pop("rm3", True), tcfg.pop("model_dir", None)


def tags(config) -> list[str]:
    """The runs this stage writes."""
    return ["bm25-ngram", "twbert"] + (["twbert-rm3"] if settings(config)[1] else [])


def check(config) -> None:
    """Stop on a wrong training setting before any work."""
    TrainConfig.from_dict(settings(config)[0])


def reused_models(config, fields=None) -> dict[str, Path]:
    """The trained model ``model_dir`` names (the stage loads it instead of training): keyed by content."""
    model_dir = settings(config)[2]
    return {"twbert": Path(model_dir)} if model_dir else {}


def train(config, source: TrainSource, out: Path) -> dict[str, Path]:
    """Train (or find trained, or reuse ``model_dir``) the stage's model: ``{"twbert": model directory}``."""
    tcfg, _, model_dir = settings(config)
    if model_dir:
        return {"twbert": Path(model_dir)}
    train_dir = keyed_train_dir(train_root(config, out) / "twbert-train",
                                {"settings": tcfg, "seed": config.get("seed"), "source": source.digest})
    return {"twbert": Trainer(TrainConfig.from_dict(tcfg), train_dir).train(source.index, source.stats,
                                                                            source.queries(), source.qrels())}


def twbert_stage(config, collection, index, stats, out: Path, runs: dict | None = None,
                 source: TrainSource | None = None) -> dict:
    with budget_summary("TW-BERT stage"):  # one line for every query cut to the token budget
        return _twbert_stage(config, collection, index, stats, out, source)


def _twbert_stage(config, collection, index, stats, out: Path, source: TrainSource | None) -> dict:
    _, expansion, _ = settings(config)
    c = config.get("collection", {})
    source = source or TrainSource(collection, index, stats, c.get("train_split", "train"))
    model_dir = train(config, source, out)["twbert"]
    model = TWBert.load(model_dir)
    queries = collection.queries(c.get("test_split", "test"))
    depth = config.get("lexical", {}).get("depth", 1000)
    weighted = weigh_queries(model, index, queries)
    runs = {"bm25-ngram": twbert_search(None, index, queries, depth=depth, tag="bm25-ngram",
                                        weighted=prior_queries(index, queries, model.config), config=model.config),
            "twbert": twbert_search(model, index, queries, depth=depth, tag="twbert", weighted=weighted)}
    if expansion:
        runs["twbert-rm3"] = twbert_search(model, index, queries, depth=depth, tag="twbert-rm3", expansion="rm3",
                                           weighted=weighted)
    for tag, run in runs.items():
        run.write(out / f"{tag}.run")
    if not source.is_other_than(collection):  # the held-out training queries, for the pipeline's fusion
        for tag in [t for t in ("twbert", "bm25-ngram") if wants_tuning(config, t)]:
            ids = set(read_training(model_dir).get("val_query_ids", []))
            tune_q = [q for q in source.queries() if q.query_id in ids]
            run = twbert_search(model if tag == "twbert" else None, source.index, tune_q, depth=depth, tag=tag,
                                weighted=weigh_queries(model, source.index, tune_q) if tag == "twbert" else
                                prior_queries(source.index, tune_q, model.config), config=model.config)
            runs.update([write_tuning_run(out, tag, run)])
    write_stage_notes(out, "twbert", {"models": {"twbert": str(model_dir)}})
    return runs
