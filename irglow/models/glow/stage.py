"""GLOW as a pipeline stage: train on the train split, encode the corpus into faiss, write runs, and
fuse each model with a Lucene run (weights tuned on the queries the training held out).

Besides the trained ``variants`` (``bert``, ``glow`` and the ablations ``glow-idf``, ``glow-tw``, …) the
stage can write ``untrained`` runs of the starting checkpoint, so that what training adds is visible:
``minilm`` (the checkpoint as its authors use it: mean pooling over title and text, ``zero_shot_tokens``
tokens), ``minilm-fields`` / ``minilm-glow`` (the checkpoint in GLOW's field input without / with the
weights, no training step).

Zero-shot (models trained on another collection) no query of the evaluated collection may tune
anything, and the held-out training queries belong to another corpus: the hybrid is then
reciprocal-rank fusion, which has no weight to tune."""

from __future__ import annotations

from pathlib import Path

from irglow.config import as_names, stage_settings
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.glow.model import VARIANTS, GlowConfig, GlowEncoder
from irglow.models.glow.runner import featurizer_for, glow_run, hybrid_runs, validation_queries
from irglow.models.glow.train import GlowTrainConfig, GlowTrainer
from irglow.models.source import TrainSource, keyed_train_dir, reused_model, train_root, write_stage_notes
from irglow.runs.fusion import fuse
from irglow.runs.hybrid import wants_tuning, write_tuning_run

UNTRAINED = ("minilm", "minilm-fields", "minilm-glow")
STAGE_KEYS = ("variants", "fuse_with", "untrained", "zero_shot_tokens", "model_dir")
# settings an unweighted encoder (variant "bert") never reads: a grid over them trains it once
WEIGHT_ONLY_MODEL = ("attention", "weights", "weight_alpha")
WEIGHT_ONLY_TRAINING = ("alpha_ramp",)


def settings(config) -> tuple[dict, list[str], list[str], dict]:
    """The ``[glow]`` section as (training settings, model variants, lexical runs each model is fused with,
    the stage's own options: untrained runs, zero-shot token budget, a folder of trained models to reuse)."""
    gcfg = stage_settings(config.get("glow", {}), "glow")
    variants = as_names(gcfg.pop("variants", ["glow"]))
    fuse_with = as_names(gcfg.pop("fuse_with", ["bm25f"]))
    options = {"untrained": as_names(gcfg.pop("untrained", [])), "zero_shot_tokens": gcfg.pop("zero_shot_tokens", 256),
               "model_dir": gcfg.pop("model_dir", None)}
    return gcfg, variants, fuse_with, options


def tags(config) -> list[str]:
    """The runs this stage writes."""
    _, variants, fuse_with, options = settings(config)
    models = options["untrained"] + variants
    return models + [f"{lexical}+{m}" for lexical in fuse_with for m in models]


def check(config) -> None:
    """Stop on a wrong training setting before any work."""
    gcfg, variants, _, options = settings(config)
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"glow.variants: {v!r} is not a GLOW variant; known: {', '.join(VARIANTS)}")
    for u in options["untrained"]:
        if u not in UNTRAINED:
            raise ValueError(f"glow.untrained: {u!r} is not an untrained run; known: {', '.join(UNTRAINED)}")
    tokens = options["zero_shot_tokens"]
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise ValueError(f"glow.zero_shot_tokens = {tokens!r} must be an integer >= 1")
    GlowTrainConfig.from_dict(gcfg)


def _model_config(gcfg: dict, source: TrainSource, variant: str) -> dict:
    model = {**gcfg.get("model", {}), "variant": variant}
    model.setdefault("fields", list(source.index.fields))
    return model


def training_inputs(gcfg: dict, model: dict, variant: str, source_digest: dict) -> dict:
    """What a variant's model depends on: for the unweighted ``bert`` the weighting settings are left out,
    so a grid over them (α, attention side, weight constants) trains ``bert`` once, not once per point."""
    if variant == "bert":
        model = {k: v for k, v in model.items() if k not in WEIGHT_ONLY_MODEL}
        gcfg = {k: v for k, v in gcfg.items() if k not in WEIGHT_ONLY_TRAINING}
    return {"settings": {k: v for k, v in gcfg.items() if k != "model"}, "model": model, "variant": variant,
            "source": source_digest}


def reused_models(config, fields=None) -> dict[str, Path]:
    """The trained models ``model_dir`` holds for the configured variants (loaded instead of training)."""
    _, variants, _, options = settings(config)
    return {v: reused_model(options["model_dir"], v) for v in variants} if options["model_dir"] else {}


def train(config, source: TrainSource, out: Path) -> dict[str, Path]:
    """Train (or find trained, or reuse from ``model_dir``) every variant: ``{variant: model directory}``."""
    gcfg, variants, _, options = settings(config)
    if options["model_dir"]:
        return {v: reused_model(options["model_dir"], v) for v in variants}
    docs = None
    trained = {}
    for variant in variants:
        model = _model_config(gcfg, source, variant)
        train_dir = keyed_train_dir(train_root(config, out) / f"{variant}-train",
                                    training_inputs(gcfg, model, variant, source.digest))
        docs = docs if docs is not None else {d.doc_id: d for d in source.collection.docs_iter()}
        trained[variant] = GlowTrainer(GlowTrainConfig.from_dict({**gcfg, "model": model}), train_dir).train(
            source.index, source.stats, docs, source.queries(), source.qrels())
    return trained


def _untrained(name: str, gcfg: dict, source: TrainSource, fields: list[str], tokens: int):
    """The starting checkpoint without a training step, as ``name`` reads documents."""
    if name == "minilm":
        from irglow.dense.encode import MeanPoolEncoder

        return MeanPoolEncoder(gcfg.get("model", {}).get("base_model", "default"), max_tokens=tokens, fields=fields)
    variant = "bert" if name == "minilm-fields" else "glow"
    config = GlowConfig(**{**_model_config(gcfg, source, variant), "variant": variant})
    model = GlowEncoder.from_pretrained_bert(config)
    if variant == "glow":  # the weights' query-length normaliser, as training sets it
        model.config.weights["avg_query_len"] = featurizer_for(model, source.index, source.stats).weighter \
            .set_avg_query_len([q.text for q in source.queries()])
    return model


def _checkpoint_run(encoder, docs, test_q, tune_q, out: Path, tag: str, depth: int):
    """``minilm``: the checkpoint with mean pooling, searched with faiss like the trained encoders."""
    from irglow.dense.encode import dense_search, encode, encode_corpus, faiss_index, load_embeddings

    emb, rate = encode_corpus(docs, encoder, out / f"{tag}.embeddings", 64)
    vectors, ids = load_embeddings(emb)
    index = faiss_index(vectors)
    run = dense_search(index, ids, test_q, encode(test_q, encoder, 64), depth, tag)
    tune = dense_search(index, ids, tune_q, encode(tune_q, encoder, 64), depth, tag) if tune_q else None
    return run, {"docs_per_s": rate, "also": {"tune": tune} if tune else {}}


def glow_stage(config, collection, index, stats, out: Path, runs: dict | None = None,
               source: TrainSource | None = None) -> dict:
    gcfg, variants, fuse_with, options = settings(config)
    c, lx = config.get("collection", {}), config.get("lexical", {})
    depth = lx.get("depth", 1000)
    given = dict(runs or {})
    source = source or TrainSource(collection, index, stats, c.get("train_split", "train"))
    zero_shot = source.is_other_than(collection)
    test_q = collection.queries(c.get("test_split", "test"))
    trained = train(config, source, out)
    tune_q, tune_qrels = ([], []) if zero_shot or not trained else validation_queries(
        next(iter(trained.values())), source.queries(), source.qrels())
    docs = list(collection.docs_iter())
    also = {"tune": tune_q} if tune_q else None
    runs, dense, rates = {}, {}, {}
    for name in options["untrained"] + variants:
        if name in trained:
            model = GlowEncoder.load(trained[name])
        else:
            model = _untrained(name, gcfg, source, list(index.fields), options["zero_shot_tokens"])
        if name == "minilm":
            run, info = _checkpoint_run(model, docs, test_q, tune_q, out, name, depth)
        else:
            run, info = glow_run(model, index, stats, docs, test_q, out, name, depth=depth, also=also)
        run.write(out / f"{name}.run")
        runs[name], rates[name] = run, info["docs_per_s"]
        dense[name] = (run, info["also"].get("tune"))
        if dense[name][1] is not None and wants_tuning(config, name):  # for the pipeline's own fusion
            runs.update([write_tuning_run(out, name, dense[name][1])])
    fusion = {}
    if zero_shot:
        for lexical in fuse_with:
            base = given.get(lexical) or LexicalSearcher(index, LexicalConfig(
                lexical, k1=lx.get("k1", 0.9), b=lx.get("b", 0.4), depth=depth,
                field_weights=lx.get("field_weights", {}))).search(test_q, tag=lexical)
            for name in dense:
                tag = f"{lexical}+{name}"
                runs[tag] = fuse([base, runs[name]], "rrf", depth=depth, tag=tag)
                runs[tag].write(out / f"{tag}.run")
                fusion[tag] = {"method": "rrf", "weights": [1.0, 1.0]}
    for lexical in fuse_with if tune_q else []:
        fused, info = hybrid_runs(dense, index, test_q, tune_q, tune_qrels, lexical,
                                  field_weights=lx.get("field_weights", {}), depth=depth,
                                  k1=lx.get("k1", 0.9), b=lx.get("b", 0.4), out_dir=out)
        runs.update(fused)
        fusion.update(info)
    write_stage_notes(out, "glow", {"models": {k: str(v) for k, v in trained.items()}, "fusion": fusion,
                                    "encode_docs_per_s": rates,
                                    "untrained": {"zero_shot_tokens": options["zero_shot_tokens"]}
                                    if "minilm" in options["untrained"] else {}})
    return runs
