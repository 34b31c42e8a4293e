"""GLOW as a pipeline stage: train on the train split, encode the corpus into faiss, write runs (and, for a
``[fusion]`` entry naming a model, its run of the queries the training held out; hybrids such as
``bm25f+glow`` are the fusion stage's).

Besides the trained ``variants`` (``bert``, ``glow`` and the ablations ``glow-idf``, ``glow-tw``, …) the
stage can write ``untrained`` runs of the starting checkpoint, so that what training adds is visible:
``minilm`` (the checkpoint as its authors use it: mean pooling over title and text, ``zero_shot_tokens``
tokens), ``minilm-fields`` / ``minilm-glow`` (the checkpoint in GLOW's field input without / with the
weights, no training step).

Torch and transformers are imported inside the stage's methods only."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irglow.defaults import DEVICE
from irglow import settings as declared
from irglow.config import as_names
from irglow.data.docstore import docs_store
from irglow.lexical.searchers import LexicalSearcher, pool_inputs
from irglow.models.validation import ChoosesOnOtherSources, chosen_on
from irglow.stage import ModelsResult, Produced, Stage, Unit, unit_name
from irglow.models.checkpoints import pick_device
from irglow.models.fields import resolve_auto_budgets
from irglow.models.glow import VARIANTS
from irglow.models.source import held_out_run_on_training_corpus, keyed_train_dir, reused_model
from irglow.utils.atomic import output_lock
from irglow.runs.keys import held_out
from irglow.utils.digest import model_digest, queries_digest
from irglow.utils.distributed import on_main

log = logging.getLogger(__name__)

UNTRAINED = ("minilm", "minilm-fields", "minilm-glow")
# settings an unweighted encoder (variant "bert") never reads: a grid over them trains it once
WEIGHT_ONLY_MODEL = ("attention", "weights", "weight_alpha")
WEIGHT_ONLY_TRAINING = ("alpha_ramp",)
SPEED_ONLY_TRAINING = ("encode_workers",)  # left out of what a trained model is keyed on


def check_runs(variants, untrained) -> None:
    """Each trained variant a GLOW variant and each untrained run one irglow makes, named where not."""
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"glow.variants: {v!r} is not a GLOW variant; known: {', '.join(VARIANTS)}")
    for u in untrained:
        if u not in UNTRAINED:
            raise ValueError(f"glow.untrained: {u!r} is not an untrained run; known: {', '.join(UNTRAINED)}")


def model_config(train, chosen: frozenset[str], fields, variant: str):
    """The :class:`~irglow.models.glow.model.GlowConfig` a variant trains with: ``[glow.model]`` as bound, with the
    training collection's ``fields`` unless the configuration chose them (``chosen``: the keys it set), and a
    model whose fields were taken from a one-field collection reads every field of the one it searches
    (``read_all_fields``).  A copy: training sets the weights' query-length normaliser on it."""
    import copy
    from dataclasses import replace

    changes: dict = {"variant": variant}
    if "fields" not in chosen:
        changes["fields"] = list(fields)
        if len(fields) == 1 and "read_all_fields" not in chosen:
            changes["read_all_fields"] = True
    return replace(copy.deepcopy(train.model), **changes)


def training_inputs(train, model, variant: str, source_digest: dict, chosen_on: dict | None = None) -> dict:
    """What a variant's model depends on (``train``: the bound GlowTrainConfig, ``model``: its GlowConfig): for
    the unweighted ``bert`` the weighting settings are left out, so a grid over them (α, attention side, weight
    constants) trains ``bert`` once, not once per point."""
    from dataclasses import asdict

    # how many processes featurize for the encoder changes its speed, never its vectors: no model trained again for it
    settings = {k: v for k, v in asdict(train).items() if k not in ("model", *SPEED_ONLY_TRAINING)}
    model = asdict(model)
    if variant == "bert":
        model = {k: v for k, v in model.items() if k not in WEIGHT_ONLY_MODEL}
        settings = {k: v for k, v in settings.items() if k not in WEIGHT_ONLY_TRAINING}
    inputs = {"settings": settings, "model": model, "variant": variant, "source": source_digest}
    return {**inputs, **(chosen_on or {})}  # chosen_on: validation.for_stage_keyed's key fragment


def _untrained(name: str, s: "GlowSettings", source, fields: list[str], tokens: int):
    """The starting checkpoint without a training step, as ``name`` reads documents."""
    from irglow.models.glow.model import GlowEncoder
    from irglow.models.glow.runner import featurizer_for

    if name == "minilm":
        from irglow.dense.encode import MeanPoolEncoder

        return MeanPoolEncoder(s.train.model.base_model, max_tokens=tokens, fields=fields)
    variant = "bert" if name == "minilm-fields" else "glow"
    model = GlowEncoder.from_pretrained_bert(s.model_config(source, variant))
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


@dataclass(frozen=True)
class GlowSettings:
    """``[glow]`` bound: the training settings (a :class:`~irglow.models.glow.train.GlowTrainConfig`, its ``"auto"``
    token budgets chosen for this device) and the ``[glow.model]`` keys the configuration set (the others, fields
    above all, follow the training collection), the variants trained, the untrained runs and their token budget,
    a folder of trained models to reuse, and whether checkpoints are also chosen on ``[validation] also``."""

    train: Any  # irglow.models.glow.train.GlowTrainConfig, bound once here
    model_chosen: frozenset[str]
    variants: tuple[str, ...]
    untrained: tuple[str, ...]
    zero_shot_tokens: int
    model_dir: str | None
    token_budget: dict | None
    # whether its trainers also choose checkpoints on [validation] also: the plan says so (ValidationSettings.uses)
    validate_elsewhere: bool = True
    precision: str = "fp32"
    faiss: str = "flat"  # the faiss index kind the trained encoders' corpus encodings are searched with

    def model_config(self, source, variant: str):
        """The model ``variant`` trains on ``source`` (:func:`model_config`)."""
        return model_config(self.train, self.model_chosen, tuple(source.index.fields), variant)

    @classmethod
    def from_config(cls, config) -> "GlowSettings":
        from irglow.models.glow.model import VARIANTS
        from irglow.models.glow.train import GlowTrainConfig

        gcfg = dict(config.get("glow", {}))
        declared.check_table("glow", gcfg)
        gcfg.pop("enabled", None)
        model, budget = resolve_auto_budgets(gcfg.get("model", {}), gcfg.get("device", DEVICE))  # for this device
        if budget is not None:
            gcfg["model"] = model
        # the stage's own keys taken out; what is left is the trainer's
        variants, untrained = (as_names(declared.take(gcfg, "glow", k)) for k in ("variants", "untrained"))
        zero_shot_tokens, model_dir, precision, faiss = (declared.take(gcfg, "glow", k) for k in (
            "zero_shot_tokens", "model_dir", "precision", "faiss"))
        check_runs(variants, untrained)
        return cls(GlowTrainConfig.from_dict(gcfg), frozenset(gcfg.get("model", {})), tuple(variants),
                   tuple(untrained), zero_shot_tokens, model_dir, budget, precision=precision, faiss=faiss)


class GlowStage(ChoosesOnOtherSources, Stage):
    name = "glow"
    settings_class = GlowSettings
    trains = True
    collective = True  # under torchrun: data-parallel training, corpus encoding in shards (rank 0 searches)

    def tags(self, s: GlowSettings) -> list[str]:
        return [*s.untrained, *s.variants]

    def with_nodes(self, s: GlowSettings, nodes) -> GlowSettings:
        """The variants and untrained runs its nodes are (an untrained run's held-out queries are the first
        variant's)."""
        from dataclasses import replace

        tags = [n.tag for n in nodes]
        variants, untrained = [t for t in tags if t not in UNTRAINED], [t for t in tags if t in UNTRAINED]
        check_runs(variants, untrained)
        return replace(s, variants=tuple(variants), untrained=tuple(untrained))

    def starting_checkpoints(self, s: GlowSettings) -> dict[str, str]:
        """Every trained variant against ``minilm``, the checkpoint as its authors use it, when that run is made."""
        return {v: "minilm" for v in s.variants} if "minilm" in s.untrained else {}

    def transformer(self, ranker, folder):
        """A trained encoder's faiss retrieval over the corpus encoding the run kept."""
        from irglow.models.glow.pt import Dense

        done = folder.result(ranker)
        if done is None or ranker.tag not in done.models or ranker.tag not in done.encodings:
            return super().transformer(ranker, folder)
        return Dense(done.models[ranker.tag], folder.index, done.encodings[ranker.tag], folder.lexical.depth)

    def node(self, tag, s: GlowSettings, node_of):
        from irglow.rankers import Dense

        return Dense(tag)

    def resolved(self, s: GlowSettings):
        """For the manifest and the key: the training settings in full, with the ``"auto"`` token budgets as
        chosen here (256 on a GPU, 96 on CPU: runs made on one device are not taken for the other's)."""
        from dataclasses import asdict

        return {"train": asdict(s.train), "variants": list(s.variants),
                "untrained": list(s.untrained), "zero_shot_tokens": s.zero_shot_tokens, "model_dir": s.model_dir,
                "token_budget": s.token_budget, **({"precision": s.precision} if s.precision != "fp32" else {}),
                **({"faiss": s.faiss} if s.faiss != "flat" else {})}  # the defaults: the keys of before

    def reused_models(self, s: GlowSettings) -> dict[str, Path]:
        """The trained models ``model_dir`` holds for the configured variants (loaded instead of training)."""
        return {v: reused_model(s.model_dir, v) for v in s.variants} if s.model_dir else {}

    def train(self, s: GlowSettings, source, train_root: Path, bm25=None, nodes=(), only=None) -> dict[str, Path]:
        """Train (or find trained, or reuse from ``model_dir``) every variant (``only`` those named): ``{variant:
        model directory}``; ``bm25``: the experiment's BM25 (a :class:`~irglow.lexical.searchers.LexicalConfig`),
        which searches the hard negatives and validation pools."""
        import copy
        from dataclasses import replace

        from irglow.models.glow.train import GlowTrainer

        wanted = [v for v in s.variants if only is None or v in only]
        if s.model_dir:
            return {v: p for v, p in self.reused_models(s).items() if v in wanted}
        also, chosen = chosen_on(source, s.validate_elsewhere)
        docs = None
        trained = {}
        for variant in wanted:
            model = s.model_config(source, variant)
            train_dir = keyed_train_dir(Path(train_root) / f"{variant}-train",
                                        {**training_inputs(s.train, model, variant, source.digest, chosen),
                                         **pool_inputs(bm25)})
            docs = docs if docs is not None else docs_store(source.collection)
            with output_lock(train_dir):  # shared by every output folder: one trains it, another then finds it
                trained[variant] = GlowTrainer(replace(copy.deepcopy(s.train), model=model), train_dir).train(
                    source.index, source.stats, docs, source.queries(), source.qrels(), validation=also, bm25=bm25)
        return trained

    def units(self, node, ctx) -> list[Unit]:
        """One unit per run: a trained variant (trained once, kept by content) or an untrained checkpoint, its corpus
        encoded and searched, and its run of the held-out training queries where a fusion tunes on it."""
        tag = node.tag
        return [Unit(unit_name(self.name, tag), self.resolved(ctx.settings), {}, lambda: self.run(ctx, tag), (tag,),
                     collective=self.collective)]

    def run(self, ctx, tag: str = "glow") -> Produced:
        """The run ``tag`` (a trained variant or an untrained checkpoint) of the test queries.  The held-out training
        queries are a trained variant's (an untrained run's: the first variant's, so a fusion with it tunes on
        queries no fused model saw)."""
        from irglow.dense.encode import check_faiss_size
        from irglow.models.glow.model import GlowEncoder
        from irglow.models.glow.runner import glow_run, validation_queries

        s, name = ctx.settings, tag
        depth, source, index, test_q = ctx.lexical.depth, ctx.source, ctx.index, ctx.test_queries
        check_faiss_size(s.faiss, index.meta.get("documents"))  # before training: the corpus's size is known
        trained = self.train(s, source, ctx.train_root, ctx.lexical_config("bm25"),
                             only=[name] if name in s.variants else list(s.variants[:1]))
        tune_q, _ = ([], []) if not trained else validation_queries(
            next(iter(trained.values())), source.queries(), source.qrels())
        docs = docs_store(ctx.collection).sequence()  # read a batch at a time as the corpus is encoded
        also = {"tune": tune_q} if tune_q and not ctx.zero_shot else None  # in domain: the same corpus
        if name in s.variants:
            model = GlowEncoder.load(trained[name])
        else:
            model = _untrained(name, s, source, list(index.fields), s.zero_shot_tokens)
        used, check = self._precision(s.precision, name, model, trained.get(name), ctx)
        if name == "minilm":  # the untrained checkpoint's run: rank 0's
            run, info = on_main(lambda: _checkpoint_run(model.in_precision(used), docs, test_q, tune_q, ctx.out,
                                                        name, depth))
        else:
            run, info = glow_run(model, index, ctx.stats, docs, test_q, ctx.train_root / "encodings", name,
                                 depth=depth, also=also,
                                 precision=used, faiss_kind=s.faiss, workers=s.train.encode_workers)
        run.write(ctx.out / f"{name}.run")
        runs = {name: run}
        tune_run = info["also"].get("tune")
        if ctx.zero_shot and tune_q and ctx.reads_held_out(name):
            tune_run = on_main(lambda: self._held_out_run_elsewhere(
                model.in_precision(used) if name == "minilm" else model, name, used, ctx, tune_q))
        if tune_run is not None and ctx.reads_held_out(name):  # for the pipeline's fusion
            runs.update([held_out(name).write(ctx.out, tune_run)])
        return Produced(runs, ModelsResult({name: str(trained[name])} if name in s.variants else {},
                                           {name: info["docs_per_s"]},
                                           {name: check} if s.precision != "fp32" else {},
                                           {"zero_shot_tokens": s.zero_shot_tokens} if name == "minilm" else {},
                                           {name: info["embeddings"]} if "embeddings" in info else {}))

    @staticmethod
    def _held_out_run_elsewhere(model, name: str, precision: str, ctx, tune_q):
        """Zero-shot: ``name``'s run of the training collection's held-out queries on the *training* corpus (one
        encoding of it), shared by every collection of a zero-shot suite
        (:func:`~irglow.models.source.held_out_run_on_training_corpus`), keyed by the model's weights, the corpus
        index, the queries and the depth."""
        import copy

        source, depth = ctx.source, ctx.lexical.depth
        fields = list(source.index.fields)
        if name == "minilm":  # the checkpoint reads the training collection's own fields
            model = copy.copy(model)
            model.fields = fields
        key = model_digest(model.model if name == "minilm" else model, run=name, precision=precision, depth=depth,
                           config=getattr(model, "config", None), tokens=getattr(model, "max_tokens", None),
                           fields=fields, index=Path(source.index.path).name, queries=queries_digest(tune_q))

        def make(work: Path):
            from irglow.models.glow.runner import glow_run

            log.info("%s: encoding the training corpus for its run of %d held-out training queries (the zero-shot "
                     "fusion's carried weights; fusion.zero_shot = 'rrf' skips this)", name, len(tune_q))
            docs = docs_store(source.collection).sequence()
            if name == "minilm":
                return _checkpoint_run(model, docs, tune_q, [], work, name, depth)[0]
            return glow_run(model, source.index, source.stats, docs, tune_q, work, name, depth=depth,
                            precision=precision)[0]

        return held_out_run_on_training_corpus(ctx.train_root, name, key, make)

    POOL_QUERIES = 50  # held-out training queries the int8 check ranks pools for
    POOL_DEPTH = 10  # BM25's top documents in each pool, besides the query's judged ones

    def _precision(self, asked: str, name: str, model, trained_dir, ctx) -> tuple[str, dict]:
        """(the precision ``name`` encodes in, the check's figures).  int8 is kept only where, on up to
        ``POOL_QUERIES`` held-out training queries (a seeded sample of judged ones for an untrained model), its
        nDCG@10 ranking each query's pool (BM25's top ``POOL_DEPTH`` and the judged documents) is within
        the tolerance of fp32's (:func:`~irglow.models.int8.kept_precision`): a fraction of a corpus encoding, on the
        training collection."""
        import random

        import torch

        from irglow.models.glow.runner import featurizer_for, glow_encoders, pool_scores, validation_queries
        from irglow.models.int8 import check_precision, kept_precision

        if asked == "fp32" or check_precision(asked, pick_device()) == "fp32":
            return "fp32", {}
        source = ctx.source
        if trained_dir is not None:
            queries, qrels = validation_queries(trained_dir, source.queries(), source.qrels())
        else:
            qrels = source.qrels()
            judged = {q.query_id for q in qrels if q.relevance > 0}
            queries = [q for q in source.queries() if q.query_id in judged]
        queries = random.Random(13).sample(queries, min(self.POOL_QUERIES, len(queries)))
        wanted = {q.query_id for q in queries}
        qrels = [q for q in qrels if q.query_id in wanted]
        if not queries:
            log.warning("%s: no judged training queries to check int8 on; encoding in fp32", name)
            return "fp32", {"used": "fp32", "why": "no judged training queries to check int8 on"}
        bm25 = LexicalSearcher(source.index, ctx.lexical_config("bm25")).search(queries, tag="bm25")
        by_id = docs_store(source.collection)
        pools = {q.query_id: [by_id[d] for d in dict.fromkeys(
            [d for d, _ in bm25.ranking.get(q.query_id, [])[:self.POOL_DEPTH]] +
            [r.doc_id for r in qrels if r.query_id == q.query_id]) if d in by_id] for q in queries}
        if name == "minilm":
            encoders = {p: (m, m) for p, m in (("fp32", model), ("int8", model.in_precision("int8")))}
        else:
            feat = featurizer_for(model, source.index, source.stats)
            encoders = {p: glow_encoders(model.cpu().eval(), feat, torch.device("cpu"), p) for p in ("fp32", "int8")}
        return kept_precision(name, pool_scores(encoders, queries, qrels, pools), len(queries),
                              "training queries' pools", "encoding in fp32", pool_docs=sum(len(p) for p in pools.values()))

