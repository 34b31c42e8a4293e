"""Training GLOW / BISON Siamese encoders.

One encoder embeds queries (field 0) and documents (their fields); relevance is the cosine of
their pooled vectors.  Each training query brings one judged-relevant document and
``hard_negatives`` BM25 hard negatives from Lucene (judged documents excluded).  Two losses:

* ``contrastive`` (default; Tevatron, sentence-transformers' MultipleNegativesRankingLoss):
  softmax cross-entropy of cos/τ over the query's positive, every hard negative and every other
  document in the batch; a batch document judged relevant to the query is masked, not a negative.
* ``bce`` (the papers): binary cross-entropy on sigmoid(w · cos + b) with trainable w, b
  initialised w = 20 (the authors' w = 1 leaves a pretrained checkpoint's near-identical
  cosines 1e-4 apart and nothing is learned in a short run), b set from the first batch to
  −w · mean cosine, positives and negatives weighted half each (unbalanced, the encoder
  collapses to "every cosine low" on small training sets); negatives are the hard negative and
  in-batch documents sampled in proportion to exp(temperature · cos).

Growing into the weighting (``alpha_ramp``): a pretrained checkpoint never saw weighted
attention, and switching it on at full strength moves every layer's attention at once (with BCE
and full-strength weights from step 0, glow ended 0.03 nDCG@10 below bert on SciFact; bench-glow's
``minilm-fields`` / ``minilm-glow`` rows show what the weights do to the untrained checkpoint).  The token weights enter attention as w^α, α ramped linearly
from 0 — exactly the checkpoint — to ``model.weight_alpha`` over the first ``alpha_ramp`` of the
steps; no new parameters.  ``alpha_ramp = 0`` is the papers' plain form.

AdamW with linear warm-up and decay in the one training loop (:mod:`irglow.models.training`: AMP, gradient
accumulation, checkpoints and resumption, early stopping), validation nDCG@10 on queries carved out of the
training split — the checkpoint itself is evaluated first and stays the answer if training never beats it — on
what a retriever would see: the whole corpus up to ``val_max_docs``, else the union of the validation queries'
BM25 top-``val_pool_depth`` lists (judged documents are *not* added: that inflates nDCG@10).  Data-parallel when
launched with ``torchrun`` (the loop's gradient sum: each rank takes its share of every step's batches).
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass, field
from pathlib import Path

import torch

from irglow.config import check_settings, check_values
from irglow.data.records import Document, Qrel, Query
from irglow.dense.encode import dense_search, encode, faiss_index
from irglow.eval.measures import parse_measures
from irglow.index.lucene_index import LuceneIndex
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher, pool_config, pool_inputs
from irglow.models.checkpoints import (fit_batch, pick_device, seed_everything, training_inputs,
                                      validation_score)
from irglow.models.glow.model import Featurizer, GlowConfig, GlowEncoder, featurizer_for
from irglow.models.glow.weights import WordWeighter
from irglow.models.low_rank import LowRankLinear, add_low_rank, merge_low_rank
from irglow.models.mixing import check_mixes, choose_mix
from irglow.models.training import Examples, LoopSettings, Task, TrainingLoop, warmup_then_decay
from irglow.models.validation import selection_score
from irglow.utils.distributed import join
from irglow.defaults import DEVICE, SEED, VAL_FRACTION
from irglow.settings import setting
from irglow.models.fields import resolve_auto_budgets

log = logging.getLogger(__name__)


@dataclass
class GlowTrainConfig:
    model: GlowConfig = field(default_factory=GlowConfig)
    loss: str = setting("contrastive", "contrastive: softmax over the batch's documents; bce: the papers' pointwise "
                        "loss", choices=("contrastive", "bce"))
    contrastive_temperature: float = setting(0.05, "τ: softmax over cos / τ (sentence-transformers' scale 20)", above=0)
    hard_negatives: int = setting(1, "BM25 hard negatives per query and step", low=0)
    alpha_ramp: float = setting(0.0, "share of the steps over which α goes 0 → model.weight_alpha (0: off)",
                                low=0, high=1)
    batch_size: int = setting(16, "queries per batch", low=1)
    grad_accum: int = setting(1, "batches per optimizer step, over every process under torchrun "
                                          "(N processes take the steps one takes)", low=1)
    epochs: int = setting(2, "training epochs", low=1)
    max_steps: int | None = setting(None, "stop after N optimizer steps (unset: the epochs decide)", low=1)
    eval_every: int = setting(0, "validate every N optimizer steps as well as at epoch ends (0: epoch ends only)",
                              low=0)
    lr: float = setting(8e-5, "the encoder's learning rate", above=0)
    scorer_init_w: float = setting(20.0, "the calibration scale w's start (the authors use 1.0; see the module "
                                   "docstring)", low=0)
    scorer_lr: float = setting(1e-2, "the calibration scalars w, b's learning rate (at 8e-5 they would not move in a "
                               "short run)", above=0)
    warmup_ratio: float = setting(0.1, "share of the steps over which the learning rate warms up", low=0, high=1)
    weight_decay: float = setting(0.01, "AdamW's weight decay", low=0)
    hard_negative_depth: int = setting(30, "BM25 depth the hard negatives are drawn from", low=1)
    in_batch_negatives: int = setting(4, "bce: other queries' documents sampled as negatives", low=0)
    temperature: float = setting(10.0, "bce: in-batch documents sampled in proportion to exp(temperature · cos)", low=0)
    val_fraction: float = setting(VAL_FRACTION, "share of the training queries held out for early stopping", low=0, high=1)
    val_max_docs: int = setting(20000, "validation ranks the whole corpus up to this many documents, else the union "
                                "of the BM25 top-k lists (0: always the union)", low=0)
    val_pool_depth: int = setting(100, "the BM25 depth of that union", low=1)
    patience: int = setting(2, "evaluations without a gain before training stops", low=0)
    seed: int = setting(SEED, "the seed of the validation split, the batches and every draw", low=0)
    device: str = setting(DEVICE, "auto (CUDA where there is one), cpu or cuda[:n]")
    amp: bool = setting(True, "mixed precision (autocast and a loss scale) on CUDA")
    encode_batch: int = setting(64, "documents per batch when the corpus is encoded", low=1)
    encode_workers: int = setting(0, "processes that read and featurize documents while the model encodes the corpus "
                                  "(0: the encoding process, featurizing ahead on a thread while a GPU encodes; each worker starts its own "
                                  "JVM)", low=0)
    # L2-SP (Li et al., ICML 2018): λ·Σ‖θ − θ₀‖² pulls the encoder toward the checkpoint it started from, so a
    # few hundred training queries do not spend what the checkpoint knew about other collections (0: off)
    l2sp: float = setting(0.0, "L2-SP's λ (0: off)", low=0)
    # WiSE-FT (irglow.models.mixing): after training, θ₀ + m·(θ − θ₀) for each m here is validated like an
    # epoch's model, on every validation source, and kept when it beats them all ([]: off)
    mix_checkpoint: list = setting(factory=list, doc="WiSE-FT mixing factors m tried after training ([]: off)")
    # Two more ways to keep what the checkpoint knew (BENCHMARKS.md "Fine-tuning that keeps what the checkpoint
    # knew"): freeze_layers keeps the word and position embeddings and the lowest N transformer layers at the
    # checkpoint's weights (the field embeddings and the layers above train; 0: off) ...
    freeze_layers: int = setting(0, "the lowest N transformer layers and the embeddings kept at the checkpoint's "
                                 "weights (0: off)", low=0)
    # ... and distill adds λ · KL(checkpoint ‖ model) of each query's softmax over the batch's documents (cos / τ):
    # the untouched checkpoint's own query–document similarities as a second target (0: off)
    distill: float = setting(0.0, "λ of KL(checkpoint ‖ model) over each query's batch softmax (0: off)", low=0)
    # ... or a low-rank update (LoRA, irglow.models.low_rank): every projection of the encoder moves only by a
    # rank-N matrix, trained at low_rank_lr and scaled by low_rank_scale (LoRA's α / r); the embeddings keep the
    # checkpoint's weights, the field embeddings train at lr; the saved model is merged (0: off)
    low_rank: int = setting(0, "LoRA's rank N for every projection of the encoder (0: off)", low=0)
    low_rank_scale: float = setting(2.0, "LoRA's scale α / r", low=0)
    low_rank_lr: float = setting(5e-4, "the low-rank matrices' learning rate", above=0)

    def __post_init__(self):
        check_values(self, "glow")  # types and ranges first: the checks below compare values
        if self.low_rank and (self.freeze_layers or self.l2sp or self.mix_checkpoint):
            raise ValueError("glow.low_rank replaces the encoder's own updates: it does not combine with "
                             "freeze_layers, l2sp or mix_checkpoint (set those to 0 / [])")
        self.mix_checkpoint = check_mixes(self.mix_checkpoint)

    @classmethod
    def from_dict(cls, d: dict) -> "GlowTrainConfig":
        import copy

        d = copy.deepcopy(d)  # training sets model.weights' query-length normaliser: never in the bound settings
        model = resolve_auto_budgets(d.pop("model", {}), d.get("device", DEVICE))[0]
        check_settings(model, GlowConfig.__dataclass_fields__, "[glow.model]")
        model = GlowConfig(**model)
        check_settings(d, set(cls.__dataclass_fields__) - {"model"}, "[glow]", ignore={"enabled", "variants"})
        return cls(model=model, **{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


class GlowScorer(torch.nn.Module):
    """The trainable calibration sigmoid(w · cos + b)."""

    def __init__(self, w: float = 1.0):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(float(w)))
        self.b = torch.nn.Parameter(torch.tensor(0.0))

    def forward(self, cos):
        return self.w * cos + self.b


def to_device(batch: dict, device) -> dict:
    return {k: v.to(device) for k, v in batch.items()}


def embed(model: GlowEncoder, featurizer: Featurizer, items, device, kind: str) -> torch.Tensor:
    batch = featurizer.queries([q.text for q in items]) if kind == "query" else featurizer.documents(items)
    return model(**to_device(batch, device))


# what padding holds in each featurized tensor (token weights and weight features: neutral)
_PAD_VALUE = {"attention_mask": 0, "token_type_ids": 0, "token_weights": 1.0, "weight_features": (1.0, 0.0, 0.0)}


def pad_cat(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], pad_id: int) -> dict[str, torch.Tensor]:
    """Two featurized batches as one: padded to the longer sequence (masked, so nothing changes), stacked."""
    T = max(a["input_ids"].shape[1], b["input_ids"].shape[1])
    out = {}
    for k in a:
        parts = []
        for x in (a[k], b[k]):
            extra = T - x.shape[1]
            if extra:
                fill = torch.tensor(_PAD_VALUE.get(k, pad_id), dtype=x.dtype).expand(x.shape[0], extra, *x.shape[2:])
                x = torch.cat([x, fill], dim=1)
            parts.append(x)
        out[k] = torch.cat(parts)
    return out


def embed_pair(model, featurizer: Featurizer, queries, docs, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and documents through the encoder in *one* forward call, padded to one length (Tevatron and
    sentence-transformers encode both sides of a Siamese model the same way)."""
    q = featurizer.queries([x.text for x in queries])
    d = featurizer.documents(docs)
    vectors = model(**to_device(pad_cat(q, d, featurizer.tok.pad_token_id), device))
    return vectors[: len(queries)], vectors[len(queries):]


class GlowTrainer:
    def __init__(self, config: GlowTrainConfig, out_dir: str | Path):
        self.config, self.out = config, Path(out_dir)
        w = join()
        self.rank, self.world = w.rank, w.size
        self.device = torch.device("cuda", w.local_rank) if w.size > 1 and torch.cuda.is_available() \
            else pick_device(config.device)

    def train(self, index: LuceneIndex, stats: CollectionStats, docs: dict[str, Document],
              queries: list[Query], qrels: list[Qrel], resume: bool = True, validation: tuple = (),
              bm25: LexicalConfig | None = None) -> Path:
        """``validation``: other collections' held-out queries (:mod:`irglow.models.validation`) the checkpoint
        is also chosen on — each searched in its own corpus with its own statistics, the mean over sources kept.
        ``bm25``: the experiment's BM25 (``[lexical]`` k1 and b), which the hard negatives and validation pools are
        searched with (``None``: the defaults)."""
        cfg = self.config
        seed_everything(cfg.seed)
        model = GlowEncoder.from_pretrained_bert(cfg.model).to(self.device)
        freeze_lower(model, cfg.freeze_layers)
        teacher = None
        if cfg.distill > 0:  # the checkpoint as it starts (its own weights, unweighted attention), never trained
            teacher = GlowEncoder.from_pretrained_bert(cfg.model).to(self.device)
            teacher.load_state_dict(model.state_dict())
            teacher.alpha = 0.0
            teacher.eval().requires_grad_(False)
        if cfg.low_rank:  # after the teacher took the checkpoint's weights: the adapters are the student's own
            low_rank_update(model, cfg.low_rank, cfg.low_rank_scale)
        scorer = GlowScorer(cfg.scorer_init_w).to(self.device)
        weighter = WordWeighter(index, stats, cfg.model.weight_config()) if cfg.model.weighted else None
        if weighter is not None:
            cfg.model.weights["avg_query_len"] = weighter.set_avg_query_len([q.text for q in queries])
        featurizer = Featurizer(cfg.model, model.tokenizer, weighter)
        ex = Examples.split(docs, queries, qrels, cfg.val_fraction, f"GLOW[{cfg.model.variant}] training", cfg.seed)
        pooled = LexicalSearcher(index, pool_config(bm25, max(cfg.hard_negative_depth, cfg.val_pool_depth))
                                 ).search([ex.queries[q] for q in ex.ids])
        ex.mine(pooled, cfg.hard_negative_depth)
        val = _Validation(featurizer, validation_docs(docs, pooled, ex.val_ids, cfg.val_max_docs, cfg.val_pool_depth),
                          [ex.queries[q] for q in ex.val_ids], ex.held_out_qrels(qrels), ex.val_ids,
                          [_OtherSource(v, model, pool_config(bm25, cfg.val_pool_depth), max_docs=cfg.val_max_docs)
                           for v in validation])
        batch_size = fit_batch(cfg.batch_size, len(ex.train_ids), f"GLOW[{cfg.model.variant}] training",
                               "batch_size", cfg.grad_accum)  # grad_accum batches a step, over every process
        total_steps = cfg.max_steps or max(1, len(ex.train_ids) // (batch_size * cfg.grad_accum)) * cfg.epochs
        adapters = {id(p) for m in model.modules() if isinstance(m, LowRankLinear) for p in (m.down, m.up)}
        trained = [p for p in model.parameters() if p.requires_grad]
        groups = [{"params": [p for p in trained if id(p) not in adapters], "lr": cfg.lr}]
        if adapters:
            groups.append({"params": [p for p in trained if id(p) in adapters], "lr": cfg.low_rank_lr})
        if cfg.loss == "bce":
            groups.append({"params": list(scorer.parameters()), "lr": cfg.scorer_lr, "weight_decay": 0.0})
        opt = torch.optim.AdamW(groups, lr=cfg.lr, weight_decay=cfg.weight_decay)
        inputs = training_inputs(cfg, queries, qrels, index)
        inputs["data"].update(pool_inputs(bm25))
        if validation:
            inputs["data"]["also_validate"] = [v.digest for v in validation]
        task = _GlowTask(self, model, scorer, opt, warmup_then_decay(opt, cfg.warmup_ratio, total_steps), ex, val,
                         batch_size, total_steps, teacher)
        TrainingLoop(task, LoopSettings.of(cfg), self.out, self.device).run(
            resume, inputs, {"batch_size": batch_size})
        return self.out / "best"


@dataclass
class _Validation:
    """What GLOW validates on: the held-out queries over the documents a retriever would rank, and the
    ``[validation] also`` sources."""

    featurizer: Featurizer
    docs: list[Document]
    queries: list[Query]
    qrels: list[Qrel]
    ids: list[str]
    others: list


class _GlowTask(Task):
    """GLOW/BERT in the training loop: batches of training queries, each with a positive and BM25 hard negatives
    (the module docstring's losses), validation by dense retrieval over the held-out queries' corpus; α ramps up
    and a model is kept only at full weighting strength (a ramping model is a different model)."""

    def __init__(self, trainer: GlowTrainer, model: GlowEncoder, scorer: GlowScorer, optimizer, scheduler,
                 examples: Examples, val: _Validation, batch_size: int, total_steps: int, teacher=None):
        super().__init__(model, optimizer, scheduler, config=trainer.config)
        self.teacher = teacher
        cfg = trainer.config
        self.out, self.device, self.rank, self.world = trainer.out, trainer.device, trainer.rank, trainer.world
        self.scorer, self.ex, self.val = scorer, examples, val
        self.batch_size, self.total_steps = batch_size, total_steps
        self.name = f"GLOW[{cfg.model.variant}]"
        self.sampler = random.Random(cfg.seed)
        self.measure = parse_measures(["nDCG@10"])
        # θ₀ for L2-SP: the checkpoint's own weights (a resumed run reloads them from the checkpoint it started from)
        self.start_weights = starting_weights(cfg.model) if cfg.l2sp > 0 else {}

    def parts(self) -> dict:
        return {"model": self.model, "scorer": self.scorer, "optimizer": self.optimizer, "scheduler": self.scheduler}

    def parameters(self) -> list:
        return list(self.model.parameters()) + list(self.scorer.parameters())

    def at_step(self, step: int, start: bool = False) -> None:
        ramp = self.config.alpha_ramp * self.total_steps
        full = self.config.model.weight_alpha
        # the starting checkpoint is evaluated at full weighting: what training has to beat
        self.model.alpha = full if start else full * (min(1.0, step / ramp) if ramp > 0 else 1.0)

    def keepable(self) -> bool:
        return abs(self.model.alpha - self.config.model.weight_alpha) < 1e-9

    def save(self, folder: Path) -> None:
        self.model.alpha = self.config.model.weight_alpha
        (merge_low_rank(self.model) if self.config.low_rank else self.model).save(folder)

    def epoch_batches(self, epoch: int, warming: bool = False) -> list:
        order = list(range(len(self.ex.train_ids)))
        random.Random(self.config.seed + epoch).shuffle(order)
        return [[self.ex.train_ids[i] for i in b] for b in epoch_batches(order, self.batch_size,
                                                                          self.config.grad_accum)]

    def draw(self, qids, warming: bool = False):
        """(the queries, a judged-relevant document of each, each query's hard negatives): ids only."""
        cfg, rng, ex = self.config, self.sampler, self.ex
        pos = [rng.choice(ex.positives[q])[0] for q in qids]
        return qids, pos, [d for q in qids for d in ex.negatives(q, cfg.hard_negatives, rng)]

    def loss(self, drawn, autocast, warming: bool = False) -> torch.Tensor:
        cfg, ex, judged = self.config, self.ex, self.ex.judged
        qids, pos, neg = drawn
        pos, neg = [ex.docs[d] for d in pos], [ex.docs[d] for d in neg]
        with autocast():
            qv, dv = embed_pair(self.model, self.val.featurizer, [ex.queries[q] for q in qids], pos + neg,
                                self.device)
            qv = torch.nn.functional.normalize(qv.float(), dim=-1)
            dv = torch.nn.functional.normalize(dv.float(), dim=-1)
        cos = qv @ dv.T  # [B, B(1 + h)]: columns 0..B-1 the positives, then each query's hard negatives
        batch_docs = [d.doc_id for d in pos + neg]
        # a batch document judged relevant to a query is not its negative (its own positive excepted)
        false_neg = torch.tensor([[d in judged.get(q, ()) and j != i for j, d in enumerate(batch_docs)]
                                  for i, q in enumerate(qids)], device=cos.device)
        if cfg.loss == "contrastive":
            loss = contrastive_loss(cos, false_neg, cfg.contrastive_temperature)
        else:
            if not self.state.get("bias_initialised"):
                # data-dependent start: centre the logits (b = −w · mean cosine of the first batch)
                with torch.no_grad():
                    self.scorer.b.fill_(-float(self.scorer.w) * float(cos.mean()))
                if self.world > 1:  # rank 0's first batch is one process's first batch: its start, everywhere
                    import torch.distributed as dist

                    dist.broadcast(self.scorer.b.data, 0)
                self.state["bias_initialised"] = True
            loss = bce_loss(self.scorer(cos), cos, false_neg, cfg.hard_negatives, cfg.in_batch_negatives,
                            cfg.temperature)
        if self.start_weights:
            loss = loss + cfg.l2sp * l2sp_penalty(self.model, self.start_weights)
        if self.teacher is not None:
            with torch.no_grad(), autocast():
                tq, td = embed_pair(self.teacher, self.val.featurizer, [ex.queries[q] for q in qids], pos + neg,
                                    self.device)
            target = torch.nn.functional.normalize(tq.float(), dim=-1) @ torch.nn.functional.normalize(
                td.float(), dim=-1).T
            loss = loss + cfg.distill * distillation_loss(cos, target, cfg.contrastive_temperature)
        return loss

    def ranked(self, feat, vdocs, vqueries, desc: str):
        cfg, model = self.config, self.model
        with torch.no_grad():
            dv = encode(vdocs, lambda b: embed(model, feat, b, self.device, "doc"), cfg.encode_batch, desc=desc)
            qv = encode(vqueries, lambda b: embed(model, feat, b, self.device, "query"), cfg.encode_batch)
        return dense_search(faiss_index(dv), [d.doc_id for d in vdocs], vqueries, qv, depth=100)

    def scores(self) -> tuple[float, dict[str, float]]:
        """(the score the checkpoint is chosen on, each source's): the held-out training queries, and with
        ``[validation] also`` the mean over them and every other source."""
        self.model.eval()
        val = self.val
        own = validation_score(self.measure, val.qrels, self.ranked(val.featurizer, val.docs, val.queries,
                                                                    "validation corpus")
                               ) if val.queries else float("nan")
        scores = {o.label: validation_score(self.measure, o.qrels, self.ranked(o.featurizer, o.docs, o.queries,
                                                                               f"validation corpus ({o.label})"))
                  for o in val.others}
        self.model.train()
        return selection_score(own, scores), ({"own": own, **scores} if scores else {})

    def validate(self) -> tuple[float, dict]:
        score, by_source = self.scores()
        return score, {"alpha": self.model.alpha, **({"val_by_source": by_source} if by_source else {})}

    def finish(self) -> None:
        cfg, state = self.config, self.state
        if not cfg.mix_checkpoint:
            return
        # after the checkpoint: a resumed run mixes again, from it
        done = _mixed_already(self.out / "training.json", state["step"], cfg.mix_checkpoint)
        if done is not None:  # a finished training found again: these fractions were tried on these weights
            state["mixes"] = done
        else:
            self.model.alpha = cfg.model.weight_alpha
            state["mixes"] = choose_mix(self.model, starting_weights(cfg.model), cfg.mix_checkpoint, self.scores,
                                        state["best"], self.model.save, self.out)
        kept = [c for c in state["mixes"] if c["kept"]]
        if kept:  # the kept model: the last step's weights, mixed
            state.update(best=kept[0]["val_ndcg@10"], best_mix=kept[0]["mix"], best_step=state["step"])

    def report(self) -> dict:
        val = self.val
        return {"train_queries": len(self.ex.train_ids), "val_queries": len(val.queries), "val_docs": len(val.docs),
                "val_query_ids": val.ids, "also_validated_on": {o.label: len(o.queries) for o in val.others}}


def _mixed_already(training_json: Path, step: int, mixes: list[float]) -> list[dict] | None:
    """The mixing curve a finished training recorded, when it tried these fractions on the weights of this
    ``step`` (then ``best`` holds its choice already): a model evaluated again elsewhere is not re-validated."""
    if not training_json.is_file():
        return None
    state = json.loads(training_json.read_text()).get("state", {})
    curve = state.get("mixes") or []
    return curve if state.get("step") == step and [c.get("mix") for c in curve] == mixes else None


class _OtherSource:
    """A ``[validation] also`` source as GLOW validates on it: its judged queries, the documents a retriever
    would rank (its whole corpus up to ``max_docs``, else the queries' BM25 pools) and word weights from its own
    statistics (the test-time rule)."""

    def __init__(self, source, model: GlowEncoder, bm25: LexicalConfig, max_docs: int):
        self.label, self.queries, self.qrels = source.label, list(source.queries), list(source.qrels)
        pool = LexicalSearcher(source.index, bm25).search(self.queries)
        self.docs = validation_docs(source.docs, pool, [q.query_id for q in self.queries], max_docs, bm25.depth)
        self.featurizer = featurizer_for(model, source.index, source.stats)


def starting_weights(model_config: GlowConfig) -> dict[str, torch.Tensor]:
    """The starting checkpoint's encoder weights (frozen copies), for :func:`l2sp_penalty`."""
    start = GlowEncoder.from_pretrained_bert(model_config)
    return {n: p.detach().clone() for n, p in start.named_parameters()}


def l2sp_penalty(model: GlowEncoder, start: dict[str, torch.Tensor]) -> torch.Tensor:
    """Σ‖θ − θ₀‖² over the weights the model shares with its starting checkpoint (by name and shape; token-type
    embeddings grown for extra fields are new and free)."""
    total = None
    for name, p in model.named_parameters():
        p0 = start.get(name)
        if p0 is not None and p0.shape == p.shape:
            term = ((p - p0.to(p.device)) ** 2).sum()
            total = term if total is None else total + term
    return total if total is not None else torch.zeros((), device=next(model.parameters()).device)


def freeze_lower(model: GlowEncoder, layers: int) -> None:
    """Keep the word and position embeddings and the lowest ``layers`` transformer layers at the checkpoint's
    weights (``requires_grad`` off, so the optimizer never holds them); the field (token-type) embeddings, which
    GLOW grows for its fields, and the layers above train."""
    if layers <= 0:
        return
    bert = model.bert
    stack = getattr(getattr(bert, "encoder", None), "layer", None)
    embeddings = getattr(bert, "embeddings", None)
    if stack is None or embeddings is None:
        raise ValueError(f"glow.freeze_layers = {layers}: {type(bert).__name__} has no BERT-style embeddings and "
                         f"encoder.layer stack to freeze; set it to 0")
    if layers > len(stack):
        raise ValueError(f"glow.freeze_layers = {layers}: the model has only {len(stack)} layers")
    for module in (embeddings.word_embeddings, embeddings.position_embeddings, *stack[:layers]):
        module.requires_grad_(False)


def low_rank_update(model: GlowEncoder, rank: int, scale: float) -> int:
    """Freeze the encoder (embeddings included) and give each of its layers' projections a low-rank update
    (:mod:`irglow.models.low_rank`); the field embeddings stay trainable: fields beyond the checkpoint's two
    segments start as copies and must learn what they are.  Returns the number of projections updated."""
    bert = model.bert
    if not hasattr(bert, "encoder") or not hasattr(getattr(bert, "embeddings", None), "token_type_embeddings"):
        raise ValueError(f"glow.low_rank = {rank}: {type(bert).__name__} has no BERT-style encoder and embeddings")
    bert.requires_grad_(False)
    bert.embeddings.token_type_embeddings.requires_grad_(True)
    return add_low_rank(bert.encoder, rank, scale)


def distillation_loss(cos: torch.Tensor, target: torch.Tensor, temperature: float) -> torch.Tensor:
    """KL(target ‖ model) of each query's softmax over the batch's documents at ``cos / temperature``, averaged
    over queries: zero exactly when the model ranks (and spreads) the batch as the target does."""
    log_p = torch.log_softmax(cos / temperature, dim=-1)
    log_q = torch.log_softmax(target / temperature, dim=-1)
    return (log_q.exp() * (log_q - log_p)).sum(-1).mean()


def epoch_batches(order: list[int], batch_size: int, grad_accum: int) -> list[list[int]]:
    """Full batches only, and whole accumulation groups only: a remainder would leave gradients that
    leak into the next epoch's first step."""
    batches = [order[i:i + batch_size] for i in range(0, len(order) - batch_size + 1, batch_size)]
    return batches[: len(batches) - len(batches) % grad_accum]


def validation_docs(docs: dict[str, Document], bm25, val_ids: list[str], max_docs: int,
                    pool_depth: int) -> list[Document]:
    """What a retriever would rank: the whole corpus when small, else the validation queries' BM25 pools."""
    if len(docs) <= max_docs:
        return list(docs.values())
    pool = {d for q in val_ids for d, _ in bm25.ranking.get(q, [])[:pool_depth]}
    return [docs[d] for d in sorted(pool) if d in docs]


def contrastive_loss(cos: torch.Tensor, false_neg: torch.Tensor, temperature: float) -> torch.Tensor:
    """Mean softmax cross-entropy of cos/τ where query i's positive is column i; masked columns drop out."""
    logits = (cos / temperature).masked_fill(false_neg, float("-inf"))
    target = torch.arange(cos.shape[0], device=cos.device)
    return torch.nn.functional.cross_entropy(logits, target)


def bce_loss(logits: torch.Tensor, cos: torch.Tensor, false_neg: torch.Tensor, hard_negatives: int,
             in_batch: int, temperature: float) -> torch.Tensor:
    """The papers' class-balanced BCE: positives (column i) against the query's own hard negatives and
    ``in_batch`` other batch documents sampled in proportion to exp(temperature · cos)."""
    B = cos.shape[0]
    rows = torch.arange(B, device=cos.device)
    pos_logit = logits[rows, rows]
    own = torch.zeros_like(false_neg)
    for h in range(hard_negatives):
        own[rows, B + rows * hard_negatives + h] = True
    hard_logit = logits[own]
    excluded = false_neg | own
    excluded[rows, rows] = True
    k = min(in_batch, cos.shape[1] - 1 - hard_negatives)
    probs = torch.softmax(temperature * cos.detach().masked_fill(excluded, float("-inf")), -1)
    probs = torch.nan_to_num(probs, nan=0.0)
    sampled = []
    for i in range(B):
        available = int((probs[i] > 0).sum())
        if available and k > 0:
            j = torch.multinomial(probs[i], min(k, available), replacement=False)
            sampled.append(logits[i, j])
    neg_logit = torch.cat([hard_logit] + sampled)
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    # class-balanced: positives and negatives weigh half each, so pushing every cosine down does not pay
    return 0.5 * bce(pos_logit, torch.ones_like(pos_logit)) + 0.5 * bce(neg_logit, torch.zeros_like(neg_logit))
