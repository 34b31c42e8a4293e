"""Re-rankers as a pipeline stage: train each configured model on the train split, re-rank the test
split's BM25 run (and, with ``rerank_also``, other runs such as the hybrid ``bm25f+glow``).

``models`` names kinds (``monobert``, ``nrmf``) or variants defined as named settings, e.g. the NRM-F
ablations of ``configs/bench/rerank.toml``::

    [rerank.variants.nrmf-title]
    kind = "nrmf"
    model = { fields = ["title"] }

A variant starts from its kind's section and changes only what it names.  With ``fuse = true`` each
re-ranked run is also fused with BM25 (``bm25+<model>``: min-max, the convex weight tuned on the queries
the model's training held out — training-collection queries, never the evaluated split)."""

from __future__ import annotations

import time
from pathlib import Path

from irglow.config import as_names, merged, stage_settings
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.checkpoints import read_training
from irglow.models.rerank.rerank import load_reranker, rerank
from irglow.models.rerank.train import KINDS, RerankTrainConfig, RerankTrainer
from irglow.models.source import TrainSource, keyed_train_dir, reused_model, train_root, write_stage_notes
from irglow.runs.fusion import fuse, fuse_tuned
from irglow.runs.hybrid import wants_tuning, write_tuning_run
from irglow.runs.trec import Run

OPTIONS = ("models", "depth", "rerank_also", "fuse", "model_dir", "variants")


def settings(config, fields: list[str] | None = None) -> tuple[list[str], int, list[str], dict[str, dict]]:
    """The ``[rerank]`` section as (models, re-ranking depth, other runs to re-rank, each model's training
    settings); a misspelt key is named.  A variant named with ``{field}`` (``nrmf-{field}``: one field only)
    stands for one model per field of the training collection when it has more than one (``fields``; before
    the index is known, from ``index.fields`` if configured, else left out)."""
    rcfg = dict(config.get("rerank", {}))
    rcfg.pop("enabled", None)
    variants = dict(rcfg.get("variants", {}))
    fields = fields if fields is not None else config.get("index", {}).get("fields")
    models = []
    for name in as_names(rcfg.get("models", ["monobert", "nrmf"])):
        if "{field}" not in name:
            models.append(name)
            continue
        if name not in variants:
            raise ValueError(f"rerank.models: {name!r} needs a [rerank.variants.\"{name}\"] table")
        for f in fields if fields and len(fields) > 1 else []:
            models.append(name.replace("{field}", f))
            variants[models[-1]] = _per_field(variants[name], f)
    unknown = sorted(set(rcfg) - set(OPTIONS) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown [rerank] setting(s) {unknown}; known: {', '.join(OPTIONS)}, and one section per "
                         f"kind ({', '.join(KINDS)})")
    trainers = {}
    for name in models:
        if name in KINDS:
            trainers[name] = {**stage_settings(rcfg.get(name, {}), name), "kind": name}
            continue
        if name not in variants:
            raise ValueError(f"rerank.models: {name!r} is neither a kind ({', '.join(KINDS)}) nor a variant "
                             f"defined under [rerank.variants]" + (f" ({', '.join(variants)})" if variants else ""))
        change = dict(variants[name])
        kind = change.pop("kind", None)
        if kind not in KINDS:
            raise ValueError(f"[rerank.variants.{name}] needs kind = one of {', '.join(KINDS)}, not {kind!r}")
        trainers[name] = {**merged(stage_settings(rcfg.get(kind, {}), kind), change), "kind": kind}
    return models, rcfg.get("depth", 100), as_names(rcfg.get("rerank_also", [])), trainers


def _per_field(template: dict, field: str) -> dict:
    """A ``{field}`` variant's settings for one field: every ``"{field}"`` string (in lists too) replaced."""
    def fill(value):
        if isinstance(value, str):
            return value.replace("{field}", field)
        if isinstance(value, list):
            return [fill(v) for v in value]
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        return value

    return fill(template)


def _fuse(config) -> bool:
    return bool(config.get("rerank", {}).get("fuse", False))


def tags(config) -> list[str]:
    """The runs this stage writes."""
    models, _, also, _ = settings(config)
    return models + [f"{a}+{m}" for a in also for m in models] + ([f"bm25+{m}" for m in models] if _fuse(config) else [])


def check(config) -> None:
    """Stop on a wrong training setting before any work."""
    fuse = config.get("rerank", {}).get("fuse", False)
    if not isinstance(fuse, bool):
        raise ValueError(f"rerank.fuse = {fuse!r} must be true or false")
    for trainer in settings(config)[3].values():
        RerankTrainConfig.from_dict(trainer)


def reused_models(config, fields=None) -> dict[str, Path]:
    """The trained models ``model_dir`` holds for the configured re-rankers (loaded instead of training)."""
    reuse = config.get("rerank", {}).get("model_dir")
    return {name: reused_model(reuse, name) for name in settings(config, fields)[0]} if reuse else {}


def train(config, source: TrainSource, out: Path) -> dict[str, Path]:
    """Train (or find trained, or reuse from ``model_dir``) every model: ``{name: model directory}``."""
    models, _, _, trainers = settings(config, list(source.index.fields))
    reuse = config.get("rerank", {}).get("model_dir")
    if reuse:
        return {name: reused_model(reuse, name) for name in models}
    docs = {d.doc_id: d for d in source.collection.docs_iter()}
    trained = {}
    for name in models:
        train_dir = keyed_train_dir(train_root(config, out) / f"{name}-train",
                                    {"settings": trainers[name], "source": source.digest})
        trained[name] = RerankTrainer(RerankTrainConfig.from_dict(trainers[name]), train_dir).train(
            source.index, docs, source.queries(), source.qrels())
    return trained


def _top(run: Run, depth: int) -> Run:
    """The re-ranked block only: the kept-below tail's placeholder scores would stretch min-max."""
    return Run({q: d[:depth] for q, d in run.ranking.items()}, run.tag)


def rerank_stage(config, collection, index, stats, out: Path, runs: dict | None = None,
                 source: TrainSource | None = None) -> dict:
    c, lx = config.get("collection", {}), config.get("lexical", {})
    docs = {d.doc_id: d for d in collection.docs_iter()}
    source = source or TrainSource(collection, index, stats, c.get("train_split", "train"))
    models, depth, also, _ = settings(config, list(source.index.fields))
    test_q = collection.queries(c.get("test_split", "test"))
    bm25 = LexicalConfig("bm25", k1=lx.get("k1", 0.9), b=lx.get("b", 0.4), depth=lx.get("depth", 1000))
    first = (runs or {}).get("bm25") or LexicalSearcher(index, bm25).search(test_q, tag="bm25")
    trained = train(config, source, out)
    produced, rates, fusion = {}, {}, {}
    train_docs = None
    for name in models:
        model = load_reranker(trained[name])
        t = time.perf_counter()
        produced[name] = rerank(model, first, test_q, docs, depth, tag=name, desc=name)
        rates[name] = sum(min(depth, len(r)) for r in first.ranking.values()) / max(1e-9, time.perf_counter() - t)
        produced[name].write(out / f"{name}.run")
        for base_tag in also:
            base = (runs or {}).get(base_tag)
            if base is not None:
                tag = f"{base_tag}+{name}"
                produced[tag] = rerank(model, base, test_q, docs, depth, tag=tag, desc=tag)
                produced[tag].write(out / f"{tag}.run")
        held_out = wants_tuning(config, name) and not source.is_other_than(collection)
        if _fuse(config) or held_out:
            val_ids = set(read_training(trained[name]).get("val_query_ids", []))
            tune_q = [q for q in source.queries() if q.query_id in val_ids]  # none held out: equal weights
            train_docs = train_docs or (docs if not source.is_other_than(collection)
                                        else {d.doc_id: d for d in source.collection.docs_iter()})
            tune_bm25 = LexicalSearcher(source.index, bm25).search(tune_q, tag="bm25") if tune_q else None
            tune_run = rerank(model, tune_bm25, tune_q, train_docs, depth, tag=name,
                              desc=f"{name} (held-out training queries)") if tune_q else None
            if held_out and tune_run is not None:  # the re-ranked block, for the pipeline's own fusion
                produced.update([write_tuning_run(out, name, _top(tune_run, depth))])
        if _fuse(config):
            tag = f"bm25+{name}"
            if tune_run is not None:
                tune_qrels = [r for r in source.qrels() if r.query_id in val_ids]
                produced[tag], fusion[tag] = fuse_tuned([first, _top(produced[name], depth)],
                                                        [tune_bm25, _top(tune_run, depth)], tune_qrels, "wsum",
                                                        "min-max", depth=bm25.depth, tag=tag)
            else:
                produced[tag] = fuse([first, _top(produced[name], depth)], "wsum", "min-max", [0.5, 0.5],
                                     depth=bm25.depth, tag=tag)
                fusion[tag] = {"method": "wsum", "weights": [0.5, 0.5], "tuning_queries": 0}
            produced[tag].write(out / f"{tag}.run")
    write_stage_notes(out, "rerank", {"models": {k: str(v) for k, v in trained.items()}, "fusion": fusion,
                                      "pairs_per_s": rates, "depth": depth})
    return produced
