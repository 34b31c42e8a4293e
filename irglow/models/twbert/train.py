"""Training TW-BERT end to end through the differentiable Lucene BM25.

Candidates are Lucene's BM25 top-k for each training query, labels the qrels' graded relevance.
The model's weights give every candidate the score Lucene would give it (``scorer.bm25_scores``),
scaled by the query's largest candidate score, and the loss compares those scores with the labels:

* ``softmax`` (default): listwise softmax cross-entropy, ``−Σ_d p*_d log softmax(s/τ)_d`` with
  ``p*`` the label gains normalised per query — the loss of dense retrievers and ListNet;
* ``amse+listmle`` (the paper's): AMSE(maxout(s), y) + ListMLE(maxout(s), y); ``amse`` and
  ``listmle`` alone for ablations.

Stage 1 pulls weights towards the fixed prior (uni-grams 1, bi-grams ``bigram_prior``); with the
default residual head (``model.TWBertConfig``) the untrained model *is* that prior, so stage 1 is
only needed for the paper's ReLU head.  Stage 2 is the end-to-end fine-tuning, early-stopped on
nDCG@10 of a validation split carved from the training queries.

Why the paper's stage 2 made validation worse here (evidence: ``make bench-twbert-diagnose``,
BENCHMARKS.md): the scorer's gradient is right (finite-difference check in the tests), but

1. AMSE (measured: alone it halves its loss in 40 steps while training-query nDCG@10 falls
   0.688 → 0.646) regresses a max-scaled score onto 0/1 labels: the top candidate always scores 1,
   so every query whose top document is non-relevant pushes *all* its matching terms down;
2. ListMLE alone does not hurt (validation 0.765 → 0.772), though with binary labels much of its
   gradient orders non-relevant candidates whose tie order is drawn at random;
3. judged-but-unretrieved documents added to the candidates: harmful under AMSE, neutral to slightly
   helpful under the softmax loss (validation 0.7737 vs 0.7658, about one query);
4. the ReLU head must first be pulled to the prior (stage 1) and does not end exactly at BM25.

The defaults (softmax loss, no added documents, residual head starting at the prior) are the
configuration that raised validation nDCG@10 in that study.  One change at a time from it: freezing
BERT learns less and over-fits (0.7637 at best), uniform score scaling and the label scale change
little, and BERT's learning rate matters most — 3e-5 reaches 0.7904 against 0.7658 at 1e-5, so 3e-5
is the default (SciFact test, seed 13: nDCG@10 0.6912 against BM25 0.6789 and the fixed prior 0.6834;
BENCHMARKS.md has seeds 13 to 16).
Stage 1 and stage 2 run in the one training loop (:mod:`irglow.models.training`): checkpoints, resumption, AMP,
the validation schedule and early stopping are there.

How long stage 2 runs (issue 53): early stopping on a tenth of SciFact's training queries (~80) stopped anywhere
between step 10 and step 80 depending on which queries the seed held out, and moved SciFact test by 0.02.
:meth:`Trainer.cross_validate` (``folds``) chooses the length on every training query instead — each held out
once by one of k folds — then trains on all of them; the evidence is BENCHMARKS.md's five-seed tables.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from irglow.utils.progress import tqdm

from irglow.config import check_settings, check_values
from irglow.data.records import Qrel, Query
from irglow.data.union import epoch_order
from irglow.eval.measures import parse_measures
from irglow.index.forward import ForwardIndex
from irglow.index.lucene_index import LuceneIndex
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.checkpoints import (check_checkpoint, held_out, pick_device, seed_everything,
                                      split_validation, training_inputs, validation_score)
from irglow.models.training import GeneratorState, LoopSettings, Task, TrainingLoop
from irglow.models.twbert.model import TWBert, TWBertConfig
from irglow.models.twbert.scorer import CandidateFeatures, bm25_scores, build_features, collate
from irglow.models.twbert.terms import extract_terms
from irglow.runs.trec import Run
from irglow.defaults import DEVICE, SEED, VAL_FRACTION
from irglow.settings import setting

log = logging.getLogger(__name__)

LOSSES = ("softmax", "amse+listmle", "amse", "listmle")
LABEL_SCALES = ("linear", "exp", "binary")


@dataclass
class TrainConfig:
    model: TWBertConfig = field(default_factory=TWBertConfig)
    candidates: int = setting(50, "BM25 top-k from Lucene per training query", low=1)
    add_unretrieved_relevant: bool = setting(False, "judged-relevant documents Lucene did not retrieve join the "
                                             "candidates (only under the AMSE/ListMLE losses' study)")
    val_fraction: float = setting(VAL_FRACTION, "share of the training queries held out for early stopping "
                                  "(irglow.models.checkpoints.split_validation)", low=0, high=1)
    batch_queries: int = setting(16, "queries per batch", low=1)
    stage1_epochs: int = setting(0, "epochs that first pull the weights onto the fixed prior (the residual head starts "
                                 "there; the paper's ReLU head needs 1)", low=0)
    epochs: int = setting(8, "epochs of stage 2 (end to end through the differentiable BM25)", low=1)
    patience: int = setting(4, "evaluations without a gain before training stops (every eval_every steps and at epoch "
                            "ends)", low=0)
    lr: float = setting(3e-5, "BERT's learning rate (configs/twbert.toml explains the choice)", above=0)
    head_lr: float = setting(1e-3, "the term head's and maxout's learning rate", above=0)
    weight_decay: float = setting(0.01, "AdamW's weight decay", low=0)
    freeze_encoder: bool = setting(False, "train the term head alone")
    loss: str = setting("softmax", "softmax: listwise softmax cross-entropy; amse+listmle: the paper's; amse, listmle: "
                        "each alone", choices=LOSSES)
    temperature: float = setting(0.1, "the softmax loss's temperature", above=0)
    amse_d1: float = setting(0.2, "AMSE's dead zone: errors below it cost nothing", low=0)
    amse_d2: float = setting(1.0, "AMSE's turn from quadratic to linear", low=0)
    listmle_weight: float = setting(1.0, "ListMLE's weight beside AMSE", low=0)
    label_scale: str = setting("linear", "graded labels to gains: linear rel / max_rel; exp (2^rel − 1) / (2^max − 1); "
                               "binary rel > 0", choices=LABEL_SCALES)
    delta_l2: float = setting(0.0, "penalty on log(w / prior)², keeping the weights near the fixed prior (0: off)",
                              low=0)
    seed: int = setting(SEED, "the seed of the validation split (or folds), the batch order and every draw", low=0)
    device: str = setting(DEVICE, "auto (CUDA where there is one), cpu or cuda[:n]")
    amp: bool = setting(True, "mixed precision (autocast and a loss scale) on CUDA")
    grad_accum: int = setting(1, "batches per optimizer step, over every process under torchrun "
                                          "(N processes take the steps one takes)", low=1)
    average_last: int = setting(0, "0: keep the best validation's model; N: the mean of the weights at the last N "
                                "evaluations", low=0)
    folds: int = setting(0, "k >= 2: k-fold cross-validation over the training queries chooses how many steps to "
                         "train, then one training on all of them runs that long (val_fraction and patience unused); "
                         "0: hold out val_fraction and stop early", low=0)
    #                 then one training on all of them runs that long (val_fraction and patience are then unused)
    fold_steps: int = setting(100, "with folds: the steps each fold trains, the lengths the choice is made among",
                              low=1)
    max_train_queries: int | None = setting(None, "use only the first N judged training queries of the seeded shuffle "
                                            "(unset: all)", low=1)
    balance_sources: bool = setting(False, "several training sources: as many queries of each per batch "
                                    "(irglow.data.union.epoch_order)")
    scale_by: str = setting("weighted", "scores over the query's largest candidate score under the current weights "
                            "(weighted) or under BM25 (uniform)", choices=("weighted", "uniform"))
    eval_every: int = setting(0, "also validate every N stage-2 steps (0: at epoch ends only)", low=0)
    train_eval_queries: int = setting(200, "training queries whose nDCG@10 is tracked beside validation", low=0)

    def __post_init__(self):
        check_values(self, "twbert")  # every field against its declaration; then what relates two of them
        if self.folds == 1 or (self.folds and not self.eval_every):
            raise ValueError(f"twbert folds = {self.folds}: cross-validation needs at least 2 folds and eval_every > 0 "
                             "(the folds' validation curves are compared at the same steps)")

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        import copy

        d = copy.deepcopy(d)  # a config of its own: nothing a training changes reaches the bound settings
        model = dict(d.pop("model", {}))
        check_settings(d, set(cls.__dataclass_fields__) - {"model"}, "[twbert]")
        check_settings(model, TWBertConfig.__dataclass_fields__, "[twbert.model]")
        return check_values(cls(model=TWBertConfig(**model), **d), "twbert")


@dataclass
class TrainingData:
    """Features of the training and validation queries, built once (Lucene + term vectors)."""

    train: list[CandidateFeatures]
    val: list[CandidateFeatures]
    train_qrels: list[Qrel]
    val_qrels: list[Qrel]
    max_rel: float
    seconds: float = 0.0


def choose_length(curves: list[list[tuple[int, float]]]) -> tuple[int, list[tuple[int, float]]]:
    """Cross-validation's training length: the step whose validation score, averaged over the folds, is highest
    among the steps every fold evaluated (the earliest of scores equal within 1e-5, as early stopping keeps the
    first of equal scores), and that mean curve.  Each fold's curve is a list of (step, score)."""
    common = set.intersection(*({step for step, _ in curve} for curve in curves))
    by_fold = [dict(curve) for curve in curves]
    mean = [(step, float(np.mean([c[step] for c in by_fold]))) for step in sorted(common)]
    best = max(score for _, score in mean)
    return next(step for step, score in mean if score >= best - 1e-5), mean


# -- losses ------------------------------------------------------------------------------------------
def amse(pred: torch.Tensor, target: torch.Tensor, d1: float, d2: float) -> torch.Tensor:
    """Element-wise: 0 below d1, ½e² in [d1, d2), d2(|e| − ½d2) beyond."""
    e = (pred - target).abs()
    quad = 0.5 * e ** 2
    lin = d2 * (e - 0.5 * d2)
    return torch.where(e < d1, torch.zeros_like(e), torch.where(e < d2, quad, lin))


def list_mle(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, noise: torch.Tensor | None = None
             ) -> torch.Tensor:
    """ListMLE (Xia et al. 2008) per query over valid docs, ties in the labels shuffled by ``noise`` ([B, D], below
    any label difference; drawn here when not given). pred/target/mask: [B, D]."""
    noise = (torch.rand(target.shape) * 1e-6 if noise is None else noise).to(target.device)
    key = torch.where(mask, target + noise, torch.full_like(target, -1e9))
    order = key.argsort(dim=-1, descending=True)
    p = pred.gather(-1, order)
    m = mask.gather(-1, order)
    p = torch.where(m, p, torch.full_like(p, -1e4))
    p = p - p.max(-1, keepdim=True).values.detach()
    tail = torch.logcumsumexp(p.flip(-1), dim=-1).flip(-1)
    loss = ((tail - p) * m).sum(-1) / m.sum(-1).clamp(min=1)
    return loss.mean()


def softmax_ce(scores: torch.Tensor, gains: torch.Tensor, mask: torch.Tensor, temperature: float) -> torch.Tensor:
    """Listwise softmax cross-entropy; queries without a positive gain among their valid docs are skipped."""
    logits = (scores / temperature).masked_fill(~mask, float("-inf"))
    logp = torch.log_softmax(logits, dim=-1).masked_fill(~mask, 0.0)
    g = gains * mask
    total = g.sum(-1)
    has = total > 0
    if not bool(has.any()):
        return scores.sum() * 0.0
    per_query = -(g / total.clamp(min=1e-12).unsqueeze(-1) * logp).sum(-1)
    return per_query[has].mean()


def label_gains(labels: torch.Tensor, scheme: str, max_rel: float) -> torch.Tensor:
    """Graded labels → gains in [0, 1]."""
    if scheme == "binary":
        return (labels > 0).to(labels.dtype)
    if scheme == "exp":
        return (torch.pow(2.0, labels) - 1) / (2.0 ** max_rel - 1)
    return labels / max_rel


def scaled_scores(weights, batch, k3, scale_by: str = "weighted"):
    """Scores over the largest candidate score of the query.

    ``weighted``: the largest score under the current weights (gradient flows through it), so the
    scaled scores are invariant to multiplying all weights by a constant and the loss can only
    change *relative* weights; ``uniform``: the largest BM25 score (a constant).
    """
    scores = bm25_scores(weights, batch["freq"], batch["idf"], batch["norm"], batch["term_valid"], k3, batch["qtf"])
    masked = torch.where(batch["doc_mask"], scores, torch.zeros_like(scores))
    if scale_by == "weighted":
        return scores / masked.max(-1, keepdim=True).values.clamp(min=1e-6)
    with torch.no_grad():
        base = bm25_scores(torch.ones_like(weights), batch["freq"], batch["idf"], batch["norm"], batch["term_valid"],
                           None, batch["qtf"])
        base = torch.where(batch["doc_mask"], base, torch.zeros_like(base))
        scale = base.max(-1, keepdim=True).values.clamp(min=1e-6)
    return scores / scale


def ranking_loss(model: TWBert, weights: torch.Tensor, prior: torch.Tensor, batch: dict, cfg: TrainConfig,
                 max_rel: float, noise: torch.Tensor | None = None) -> torch.Tensor:
    s = scaled_scores(weights, batch, cfg.model.k3, cfg.scale_by)
    mask = batch["doc_mask"]
    gains = label_gains(batch["labels"], cfg.label_scale, max_rel)
    if cfg.loss == "softmax":
        loss = softmax_ce(s, gains, mask, cfg.temperature)
    else:
        pred = model.maxout(s)
        loss = s.sum() * 0.0
        if "amse" in cfg.loss:
            loss = loss + (amse(pred, gains, cfg.amse_d1, cfg.amse_d2) * mask).sum() / mask.sum()
        if "listmle" in cfg.loss:
            loss = loss + cfg.listmle_weight * list_mle(pred, gains, mask, noise)
    if cfg.delta_l2 > 0:
        valid = batch["term_valid"] > 0
        delta = torch.log(weights.clamp(min=1e-6) / prior.clamp(min=1e-6))[valid]
        loss = loss + cfg.delta_l2 * (delta ** 2).mean()
    return loss


# -- candidates and features --------------------------------------------------------------------------
def prepare_features(index: LuceneIndex, stats: CollectionStats, queries: list[Query], qrels: list[Qrel],
                     config: TrainConfig, model: TWBert, training: bool,
                     forward: ForwardIndex | None = None) -> list[CandidateFeatures]:
    """BM25 top-k candidates from Lucene, tf/pf from term vectors, graded labels.

    For training queries the judged-relevant documents Lucene did not retrieve are added too,
    flagged ``retrieved=False`` (used only with ``add_unretrieved_relevant``); queries with no
    relevant candidate at all are left out of training.
    """
    judged: dict[str, dict[str, int]] = {}
    for q in qrels:
        judged.setdefault(q.query_id, {})[q.doc_id] = q.relevance
    run = LexicalSearcher(index, LexicalConfig("bm25", k1=config.model.k1, b=config.model.b,
                                               depth=config.candidates)).search(queries)
    forward = forward or ForwardIndex(index)
    known = stats.row_of_doc
    wanted: dict[str, tuple[list[str], int]] = {}
    for q in queries:
        docs = [d for d, _ in run.ranking.get(q.query_id, [])]
        n_retrieved = len(docs)
        if training:
            seen = set(docs)
            docs += [d for d, r in judged.get(q.query_id, {}).items() if r > 0 and d not in seen and d in known]
        wanted[q.query_id] = (docs, n_retrieved)
    forward.prefetch([d for docs, _ in wanted.values() for d in docs])
    out = []
    all_terms = model.fit_budgets([extract_terms(index, q.query_id, q.text, config.model.bigrams) for q in queries],
                                  f"TW-BERT {'training' if training else 'validation'} features")
    for q, terms in tqdm(list(zip(queries, all_terms)), desc="features", unit="q", disable=len(queries) < 200):
        docs, n_retrieved = wanted[q.query_id]
        labels = {d: float(r) for d, r in judged.get(q.query_id, {}).items()}
        if terms.n_terms == 0 or not docs:
            continue
        if training and not any(labels.get(d, 0) > 0 for d in docs):
            continue
        f = build_features(terms, docs, stats, forward, config.model.k1, config.model.b, labels)
        f.retrieved = np.arange(len(docs)) < n_retrieved
        out.append(f)
    return out


def rerank_run(model: TWBert | None, feats: list[CandidateFeatures], device, k3, weights: str = "model") -> Run:
    """Re-rank each query's retrieved candidates with the torch scorer (= Lucene restricted to them).

    ``weights``: ``model`` (the model's), ``bm25`` (1 on uni-grams, 0 on bi-grams: BM25 itself,
    query term counts included) or ``prior`` (the fixed prior: ``bm25-ngram``).
    """
    ranking = {}
    if model is not None:
        model.eval()
    with torch.no_grad():
        for start in range(0, len(feats), 32):
            chunk = feats[start:start + 32]
            batch = collate(chunk, device, retrieved_only=True)
            k = k3
            if weights == "model":
                enc = {key: v.to(device) for key, v in model.encode([f.terms for f in chunk]).items()}
                w = model(**enc).float()
            else:
                w = torch.zeros_like(batch["idf"])
                for i, f in enumerate(chunk):
                    if weights == "bm25":
                        w[i, : len(f.terms.unigrams)] = 1.0
                    else:
                        w[i, : f.terms.n_terms] = torch.tensor(model.config.priors(f.terms))
                k = None if weights == "bm25" else k3
            scores = bm25_scores(w[:, : batch["idf"].shape[1]], batch["freq"], batch["idf"], batch["norm"],
                                 batch["term_valid"], k, batch["qtf"])
            scores = scores.masked_fill(~batch["doc_mask"], float("-inf"))
            for i, f in enumerate(chunk):
                s = scores[i, : len(f.doc_ids)].cpu().tolist()
                ranking[f.terms.query_id] = sorted(((d, x) for d, x in zip(f.doc_ids, s) if x > float("-inf")),
                                                   key=lambda item: (-item[1], item[0]))
    return Run(ranking, "twbert-val")


# -- the trainer ----------------------------------------------------------------------------------------
class Trainer:
    def __init__(self, config: TrainConfig, out_dir: str | Path):
        self.config, self.out = config, Path(out_dir)
        self.device = pick_device(config.device)

    def _optimizer(self, model: TWBert):
        cfg = self.config
        enc = [p for n, p in model.named_parameters() if n.startswith("encoder.")]
        head = [p for n, p in model.named_parameters() if not n.startswith("encoder.")]
        groups = [{"params": head, "lr": cfg.head_lr}]
        if cfg.freeze_encoder:
            for p in enc:
                p.requires_grad_(False)
        else:
            groups.insert(0, {"params": enc, "lr": cfg.lr})
        return torch.optim.AdamW(groups, weight_decay=cfg.weight_decay)

    def _judged_ids(self, queries: list[Query], qrels: list[Qrel]) -> list[str]:
        """The training queries with a judged-relevant document, in the seed's shuffled order."""
        judged = sorted({q.query_id for q in qrels if q.relevance > 0})
        known = {q.query_id for q in queries}
        ids = [q for q in judged if q in known]
        random.Random(self.config.seed).shuffle(ids)
        return ids[: self.config.max_train_queries] if self.config.max_train_queries else ids

    def prepare(self, index: LuceneIndex, stats: CollectionStats, queries: list[Query], qrels: list[Qrel],
                model: TWBert | None = None, val_ids: set[str] | None = None) -> TrainingData:
        """Split the judged training queries into train / validation and build their features (``val_ids``:
        the held-out queries, else :func:`~irglow.models.checkpoints.split_validation`'s)."""
        cfg = self.config
        model = model or TWBert.from_pretrained_bert(cfg.model)
        qmap = {q.query_id: q for q in queries}
        ids = self._judged_ids(queries, qrels)
        if val_ids is None:
            val_ids = set(split_validation(ids, cfg.val_fraction, "TW-BERT training", cfg.seed)[0])
        train_ids = [q for q in ids if q not in val_ids]
        t0 = time.perf_counter()
        forward = ForwardIndex(index)
        train = prepare_features(index, stats, [qmap[q] for q in train_ids], qrels, cfg, model, True, forward)
        val = prepare_features(index, stats, [qmap[q] for q in sorted(val_ids)], qrels, cfg, model, False, forward)
        train_set = set(train_ids)
        data = TrainingData(train, val, [q for q in qrels if q.query_id in train_set],
                            [q for q in qrels if q.query_id in val_ids],
                            max_rel=float(max([q.relevance for q in qrels] + [1])),
                            seconds=time.perf_counter() - t0)
        log.info("TW-BERT: %d training queries, %d validation queries (features %.1fs)",
                 len(train), len(val), data.seconds)
        if not train:
            raise ValueError("no training query has a relevant document among its candidates")
        return data

    def train(self, index: LuceneIndex, stats: CollectionStats, queries: list[Query], qrels: list[Qrel],
              resume: bool = True) -> Path:
        seed_everything(self.config.seed)
        model = TWBert.from_pretrained_bert(self.config.model)
        inputs = training_inputs(self.config, queries, qrels, index)
        if resume:  # a checkpoint on other data or settings is refused before features are built
            check_checkpoint(self.out / "checkpoint" / "trainer.pt", inputs)
        if self.config.folds:
            # every query's features once, with no query held out; each fold then holds out its own share
            data = self.prepare(index, stats, queries, qrels, model, val_ids=set())
            return self.cross_validate(data, index, stats, queries, qrels, model, resume, inputs)
        data = self.prepare(index, stats, queries, qrels, model)
        return self.fit(data, model, resume=resume, inputs=inputs)

    def cross_validate(self, data: TrainingData, index: LuceneIndex, stats: CollectionStats, queries: list[Query],
                       qrels: list[Qrel], model: TWBert, resume: bool, inputs: dict) -> Path:
        """k-fold cross-validation of the training length, then the training on every query.

        The training queries fall into ``folds`` folds by :func:`~irglow.models.checkpoints.held_out` of (seed,
        id) — with 10 folds the first is the validation split a plain training holds out.  Each fold trains
        ``fold_steps`` steps on the other folds' queries, validated on its own every ``eval_every`` steps, into
        ``<out>/folds/fold-i`` (resumable like any training).  :func:`choose_length` picks the step of the best
        mean curve (each fold's own best model is kept: it scores the queries it held out when a fusion is tuned,
        out of fold, so a fusion's weights are tuned on runs of queries their model never trained on); the final
        training, on all the queries, runs that many steps — and ``(average_last − 1) · eval_every`` more with
        averaging, so that its average spans the chosen step and the evaluations after it,
        as early stopping's does.  Every length is chosen on the folds' scores, one per training query, not on a
        tenth of them."""
        cfg, k = self.config, self.config.folds
        fold_of = {f.terms.query_id: int(held_out(cfg.seed, f.terms.query_id) * k) for f in data.train}
        empty = sorted(set(range(k)) - set(fold_of.values()))
        if empty:  # a fold that holds out nothing has no validation curve: refused before any fold trains
            raise ValueError(f"twbert folds = {k}: fold(s) {', '.join(str(i + 1) for i in empty)} would hold out none "
                             f"of the {len(fold_of)} training queries (a query's fold is a hash of seed and id); use "
                             f"fewer folds")
        forward = ForwardIndex(index)
        qmap = {q.query_id: q for q in queries}
        curves, sizes, fold_models = [], [], []
        for i in range(k):
            held = sorted(q for q, fold in fold_of.items() if fold == i)
            held_set = set(held)
            val = prepare_features(index, stats, [qmap[q] for q in held], qrels, cfg, model, False, forward)
            fold = TrainingData([f for f in data.train if f.terms.query_id not in held_set], val,
                                [q for q in data.train_qrels if q.query_id not in held_set],
                                [q for q in data.train_qrels if q.query_id in held_set], data.max_rel, data.seconds)
            settings = LoopSettings(epochs=cfg.fold_steps, patience=1 << 30, eval_every=cfg.eval_every,
                                    max_steps=cfg.fold_steps, grad_accum=cfg.grad_accum, amp=cfg.amp)
            log.info("TW-BERT cross-validation: fold %d of %d (%d training, %d held-out queries)", i + 1, k,
                     len(fold.train), len(fold.val))
            state = self._loop(fold, settings, self.out / "folds" / f"fold-{i + 1}", resume, {**inputs, "fold": i + 1})
            curves.append([(h["step"], h["val_ndcg@10"]) for h in state["history"]])
            sizes.append(len(val))
            # the fold's model (best on its own held-out queries) scores those queries for a fusion's tuning
            fold_models.append({"model": f"folds/fold-{i + 1}/best", "held_out": held})
        steps, mean = choose_length(curves)
        total = steps + (cfg.average_last - 1) * cfg.eval_every if cfg.average_last else steps
        log.info("TW-BERT cross-validation: %d steps chosen (mean validation nDCG@10 %.4f over %d folds); training "
                 "on all %d queries for %d steps", steps, dict(mean)[steps], k, len(data.train), total)
        settings = LoopSettings(epochs=total, patience=1 << 30, eval_every=cfg.eval_every, max_steps=total or None,
                                grad_accum=cfg.grad_accum, amp=cfg.amp, average_last=cfg.average_last)
        report = {"cross_validation": {"folds": k, "held_out": sizes, "chosen_step": steps, "trained_steps": total,
                                       "mean_curve": mean, "fold_curves": curves, "fold_models": fold_models},
                  # every training query was held out by one fold: its model's run of them tunes a fusion
                  "val_query_ids": sorted(q for f in fold_models for q in f["held_out"])}
        self._loop(data, settings, self.out, resume, inputs, report)
        return self.kept()

    def fit(self, data: TrainingData, model: TWBert | None = None, resume: bool = True,
            inputs: dict | None = None) -> Path:
        """Stage 1 (if any), then stage 2 with early stopping, in the one training loop
        (:mod:`irglow.models.training`); returns the kept model's directory.  ``inputs``
        (:func:`~irglow.models.checkpoints.training_inputs`): what the checkpoint records and a resumption
        must match."""
        self._loop(data, LoopSettings.of(self.config), self.out, resume, inputs, model=model)
        return self.kept()

    def kept(self) -> Path:
        """The model a finished training keeps: the average of its last evaluations when it averages, else the best."""
        return self.out / ("average" if self.config.average_last and (self.out / "average").is_dir() else "best")

    def _loop(self, data: TrainingData, settings: LoopSettings, out: Path, resume: bool, inputs: dict | None,
              report: dict | None = None, model: TWBert | None = None) -> dict:
        """One training from the pretrained model (each fold's and the final one start alike)."""
        seed_everything(self.config.seed)
        model = (model or TWBert.from_pretrained_bert(self.config.model)).to(self.device)
        task = _TWBertTask(model, self._optimizer(model), self.config, data, self.device, report)
        return TrainingLoop(task, settings, out, self.device).run(resume, inputs, task.baselines())


class _TWBertTask(Task):
    """TW-BERT in the training loop: batches of queries' candidate features, the ranking loss through the
    differentiable BM25 (stage 1: the weights regressed onto the fixed prior), validation by re-ranking the
    held-out queries' candidates with the torch scorer; training queries' nDCG@10 tracked beside it."""

    name = "TW-BERT"

    def __init__(self, model: TWBert, optimizer, cfg: TrainConfig, data: TrainingData, device,
                 extra_report: dict | None = None):
        super().__init__(model, optimizer, config=cfg)
        self.data, self.device, self.extra_report = data, device, extra_report or {}
        self.warm_up_epochs = cfg.stage1_epochs
        self.generator = torch.Generator().manual_seed(cfg.seed)  # ListMLE's tie shuffling
        order_rng = random.Random(cfg.seed)
        tracked = sorted(range(len(data.train)), key=lambda i: order_rng.random())[: cfg.train_eval_queries]
        self.tracked = [data.train[i] for i in tracked]
        tracked_ids = {f.terms.query_id for f in self.tracked}
        self.tracked_qrels = [q for q in data.train_qrels if q.query_id in tracked_ids]
        self.measure = parse_measures(["nDCG@10"])

    def parts(self) -> dict:
        return {**super().parts(), "generator": GeneratorState(self.generator)}

    def ndcg(self, feats, qrels, weights: str = "model") -> float:
        if not feats:
            return float("nan")
        return validation_score(self.measure, qrels, rerank_run(self.model, feats, self.device, self.config.model.k3,
                                                                weights))

    def baselines(self) -> dict[str, float]:
        """BM25's and the fixed prior's nDCG@10 on the same candidates, recorded beside the curve."""
        d = self.data
        return {"val_bm25": self.ndcg(d.val, d.val_qrels, "bm25"), "val_prior": self.ndcg(d.val, d.val_qrels, "prior"),
                "train_bm25": self.ndcg(self.tracked, self.tracked_qrels, "bm25"),
                "train_prior": self.ndcg(self.tracked, self.tracked_qrels, "prior")}

    def train_mode(self) -> None:
        self.model.train()
        if self.config.freeze_encoder:
            self.model.encoder.eval()

    def epoch_batches(self, epoch: int, warming: bool = False) -> list:
        cfg, train = self.config, self.data.train
        if warming:
            order = list(range(len(train)))
            random.Random(cfg.seed + epoch).shuffle(order)
        else:
            order = epoch_order([f.terms.query_id for f in train], cfg.seed + 1000 + epoch, cfg.balance_sources)
        return [[train[i] for i in order[start:start + cfg.batch_queries]]
                for start in range(0, len(order), cfg.batch_queries)]

    def draw(self, chunk, warming: bool = False):
        """The batch and ListMLE's tie-shuffling noise for it ([queries, candidates]), drawn in batch order."""
        cfg = self.config
        if warming or cfg.loss == "softmax" or "listmle" not in cfg.loss:
            return chunk, None
        return chunk, torch.rand((len(chunk), max(len(f.doc_ids) for f in chunk)), generator=self.generator) * 1e-6

    def loss(self, drawn, autocast, warming: bool = False) -> torch.Tensor:
        chunk, noise = drawn
        enc = {k: v.to(self.device) for k, v in self.model.encode([f.terms for f in chunk]).items()}
        with autocast():
            w = self.model(**enc)
        w = w.float()
        if warming:  # stage 1: the weights regressed onto the fixed prior
            valid = (enc["term_mask"].sum(-1) > 0).float()
            return (((w - enc["prior"]) ** 2) * valid).sum() / valid.sum().clamp(min=1)
        batch = collate(chunk, self.device, retrieved_only=not self.config.add_unretrieved_relevant)
        m = batch["idf"].shape[1]
        return ranking_loss(self.model, w[:, :m], enc["prior"][:, :m], batch, self.config, self.data.max_rel, noise)

    def validate(self) -> tuple[float, dict]:
        return self.ndcg(self.data.val, self.data.val_qrels), {
            "train_ndcg@10": self.ndcg(self.tracked, self.tracked_qrels)}

    def report(self) -> dict:
        d = self.data
        return {"n_train": len(d.train), "n_val": len(d.val), "train_queries": len(d.train),
                "val_queries": len(d.val), "feature_seconds": d.seconds,
                # the held-out queries, as every trainer records them: what fusion may be tuned on
                "val_query_ids": sorted({f.terms.query_id for f in d.val}), **self.extra_report}
