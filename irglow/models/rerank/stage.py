"""Re-rankers as a pipeline stage: train each configured model on the train split, re-rank the test
split's BM25 run (and, with ``rerank_also``, other runs such as the hybrid ``bm25f+glow``).

``models`` names kinds (``monobert``, ``nrmf``) or variants defined as named settings, e.g. the NRM-F
ablations of ``configs/bench/rerank.toml``::

    [rerank.variants.nrmf-title]
    kind = "nrmf"
    model = { fields = ["title"] }

A variant starts from its kind's section and changes only what it names.  Hybrids such as ``bm25+nrmf``
are the fusion stage's (``[fusion] runs = ['bm25+nrmf']``: the re-ranked block fused with BM25, weights tuned
on the queries the model's training held out).  Torch is imported inside the stage's methods only."""

from __future__ import annotations

from pathlib import Path

from irglow.config import as_names, merged, stage_settings
from irglow.stage import Stage

KINDS = ("monobert", "nrmf")  # irglow.models.rerank.train.KINDS, without importing torch here
OPTIONS = ("models", "depth", "rerank_also", "model_dir", "variants", "first_stage")
# stages that write their runs of the training queries for a re-ranker (irglow.runs.hybrid.wants_training_run)
TRAINING_RUNS_FROM = ("twbert", "bm25-ngram")


def settings(config, fields: list[str] | None = None) -> tuple[list[str], int, list[str], dict[str, dict]]:
    """The ``[rerank]`` section as (models, re-ranking depth, other runs to re-rank, each model's training
    settings); a misspelt key is named.  A variant named with ``{field}`` (``nrmf-{field}``: one field only)
    stands for one model per field of the training collection when it has more than one (``fields``; before
    the index is known, from ``index.fields`` if configured, else left out)."""
    rcfg = dict(config.get("rerank", {}))
    rcfg.pop("enabled", None)
    if "fuse" in rcfg:
        raise ValueError("rerank.fuse moved to the one fusion stage: write [fusion] runs = ['bm25+monobert', "
                         "'bm25+nrmf', …] (the re-ranked block fused with BM25, weights tuned on held-out queries)")
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


def _top(run, depth: int):
    """The re-ranked block only: the kept-below tail's placeholder scores would stretch min-max."""
    from irglow.runs.trec import Run

    return Run({q: d[:depth] for q, d in run.ranking.items()}, run.tag)


class RerankStage(Stage):
    name = "rerank"
    trains = True

    def tags(self, config) -> list[str]:
        models, _, also, _ = settings(config)
        return models + [f"{a}+{m}" for a in also for m in models]

    def check(self, config) -> None:
        from irglow.models.rerank.train import RerankTrainConfig

        for trainer in settings(config)[3].values():
            RerankTrainConfig.from_dict(trainer)

    def check_inputs(self, config, produced: list[str]) -> None:
        from irglow.lexical.stage import LexicalSettings

        first = config.get("rerank", {}).get("first_stage", "bm25")
        if first == "bm25":
            return
        lexical = LexicalSettings.from_config(config).tags()
        if first in produced and first not in lexical and first not in TRAINING_RUNS_FROM:
            raise ValueError(f"rerank.first_stage = {first!r}: the re-rankers re-rank a lexical run "
                             f"({', '.join(lexical)}) or one of {', '.join(TRAINING_RUNS_FROM)}, whose stage also "
                             f"writes its run of the training queries (the negatives they learn from)")
        if first not in produced:
            raise ValueError(f"rerank.first_stage = {first!r} is not a run of the stages before the re-rankers; "
                             f"their runs: {', '.join(produced)}")

    def resolved(self, config):
        from dataclasses import asdict

        from irglow.models.rerank.train import RerankTrainConfig

        models, depth, also, trainers = settings(config)
        return {"models": {n: asdict(RerankTrainConfig.from_dict(t)) for n, t in trainers.items()}, "depth": depth,
                "rerank_also": also, "model_dir": config.get("rerank", {}).get("model_dir")}

    def reused_models(self, config, fields=None) -> dict[str, Path]:
        """The trained models ``model_dir`` holds for the configured re-rankers (loaded instead of training)."""
        from irglow.models.source import reused_model

        reuse = config.get("rerank", {}).get("model_dir")
        return {name: reused_model(reuse, name) for name in settings(config, fields)[0]} if reuse else {}

    def train(self, config, source, train_root: Path, first_stage=None) -> dict[str, Path]:
        """Train (or find trained, or reuse from ``model_dir``) every model: ``{name: model directory}``.
        ``first_stage``: the run of the training queries they will re-rank (``None``: BM25's)."""
        from irglow.models.rerank.train import RerankTrainConfig, RerankTrainer
        from irglow.models.source import keyed_train_dir
        from irglow.utils.digest import records_digest

        if config.get("rerank", {}).get("model_dir"):
            return self.reused_models(config, list(source.index.fields))
        models, _, _, trainers = settings(config, list(source.index.fields))
        docs = {d.doc_id: d for d in source.collection.docs_iter()}
        inputs = {"source": source.digest}
        if first_stage is not None:
            inputs["first_stage"] = [first_stage.tag, records_digest(
                (q, d, s) for q, ranked in sorted(first_stage.ranking.items()) for d, s in ranked)]
        trained = {}
        for name in models:
            train_dir = keyed_train_dir(Path(train_root) / f"{name}-train", {"settings": trainers[name], **inputs})
            trained[name] = RerankTrainer(RerankTrainConfig.from_dict(trainers[name]), train_dir).train(
                source.index, docs, source.queries(), source.qrels(), first_stage=first_stage)
        return trained

    def first_stage(self, ctx):
        """(the run it re-ranks, that run's training-query run or ``None`` for BM25's own)."""
        from irglow.lexical.searchers import LexicalSearcher
        from irglow.runs.hybrid import TRAINING

        tag = ctx.config.get("rerank", {}).get("first_stage", "bm25")
        if tag == "bm25":
            bm25 = ctx.lexical_config("bm25")
            return ctx.runs.get("bm25") or LexicalSearcher(ctx.index, bm25).search(ctx.test_queries, tag="bm25"), None
        if tag in ctx.lexical.tags():
            cfg = ctx.lexical_config(tag)
            return ctx.runs[tag], LexicalSearcher(ctx.source.index, cfg).search(ctx.source.queries(), tag=tag)
        return ctx.runs[tag], ctx.runs[TRAINING + tag]

    def run(self, ctx) -> dict:
        import time

        from irglow.lexical.searchers import LexicalSearcher
        from irglow.models.checkpoints import read_training
        from irglow.models.rerank.rerank import load_reranker, rerank
        from irglow.models.source import write_stage_notes
        from irglow.runs.hybrid import wants_tuning, write_tuning_run
        from irglow.runs.trec import Run

        source, test_q = ctx.source, ctx.test_queries
        docs = {d.doc_id: d for d in ctx.collection.docs_iter()}
        models, depth, also, _ = settings(ctx.config, list(source.index.fields))
        bm25 = ctx.lexical_config("bm25")
        first, first_training = self.first_stage(ctx)
        trained = self.train(ctx.config, source, ctx.train_root, first_training)
        produced, rates = {}, {}
        train_docs = None
        for name in models:
            model = load_reranker(trained[name])
            t = time.perf_counter()
            produced[name] = rerank(model, first, test_q, docs, depth, tag=name, desc=name)
            rates[name] = sum(min(depth, len(r)) for r in first.ranking.values()) / max(1e-9, time.perf_counter() - t)
            produced[name].write(ctx.out / f"{name}.run")
            for base_tag in also:
                base = ctx.runs.get(base_tag)
                if base is not None:
                    tag = f"{base_tag}+{name}"
                    produced[tag] = rerank(model, base, test_q, docs, depth, tag=tag, desc=tag)
                    produced[tag].write(ctx.out / f"{tag}.run")
            if wants_tuning(ctx.config, name) and not ctx.zero_shot:  # the held-out queries, for the fusion
                val_ids = set(read_training(trained[name]).get("val_query_ids", []))
                tune_q = [q for q in source.queries() if q.query_id in val_ids]
                if tune_q:
                    train_docs = train_docs or docs
                    tune_bm25 = LexicalSearcher(source.index, bm25).search(tune_q, tag="bm25") \
                        if first_training is None else Run({q.query_id: first_training.ranking.get(q.query_id, [])
                                                            for q in tune_q}, first_training.tag)
                    tune_run = rerank(model, tune_bm25, tune_q, train_docs, depth, tag=name,
                                      desc=f"{name} (held-out training queries)")
                    produced.update([write_tuning_run(ctx.out, name, _top(tune_run, depth))])
        write_stage_notes(ctx.out, "rerank", {"models": {k: str(v) for k, v in trained.items()},
                                              "pairs_per_s": rates, "depth": depth, "first_stage": first.tag})
        return produced

    def add_commands(self, sub) -> None:
        from irglow.models.rerank.cli import add_rerank_commands

        add_rerank_commands(sub)
