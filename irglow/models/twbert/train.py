"""Training TW-BERT end to end through the differentiable Lucene BM25.

Stage 1 pulls uni-gram weights towards 1 (plain BM25) and bi-gram weights towards
``stage1_bigram_target`` (the paper uses 1; 0.2 was better on SciFact's validation split), so
training starts from the baseline;
stage 2 fine-tunes on candidates from Lucene's BM25 top-k with labels from qrels:

    s_d   = BM25_w(q, d) / max_d' BM25_1(q, d')        (scaled by the largest unweighted score)
    ŷ_d   = maxout(s_d)
    loss  = AMSE(ŷ, y; d1, d2) + ListMLE(ŷ, y)

AMSE is zero for errors below d1, squared up to d2 and linear beyond (robust to label noise).
Early stopping on nDCG@10 of a validation split carved from the training queries (re-ranking
their candidates with the same scorer); checkpoints every epoch; ``resume`` continues from the
last one.  AMP is used on CUDA.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from irglow.data.records import Qrel, Query
from irglow.eval.measures import aggregate, parse_measures
from irglow.index.forward import ForwardIndex
from irglow.index.lucene_index import LuceneIndex
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.checkpoints import pick_device, seed_everything
from irglow.models.twbert.model import TWBert, TWBertConfig
from irglow.models.twbert.scorer import CandidateFeatures, bm25_scores, build_features, collate
from irglow.models.twbert.terms import extract_terms
from irglow.runs.trec import Run
from irglow.utils.atomic import atomic_dir

log = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    model: TWBertConfig = field(default_factory=TWBertConfig)
    candidates: int = 50
    add_unretrieved_relevant: bool = True
    val_fraction: float = 0.1
    batch_queries: int = 16
    stage1_epochs: int = 1
    epochs: int = 8
    patience: int = 2
    lr: float = 3e-5
    head_lr: float = 1e-3
    weight_decay: float = 0.01
    amse_d1: float = 0.2
    amse_d2: float = 1.0
    listmle_weight: float = 1.0
    seed: int = 13
    device: str = "auto"
    amp: bool = True
    max_train_queries: int | None = None
    scale_by: str = "weighted"  # or "uniform" (see scaled_scores)
    eval_every: int = 0  # also validate every N stage-2 steps (0: once per epoch); patience counts evaluations
    stage1_unigram_target: float = 1.0
    stage1_bigram_target: float = 1.0  # the paper pulls every term to 1

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        d = dict(d)
        model = TWBertConfig(**d.pop("model", {}))
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(model=model, **known)


def amse(pred: torch.Tensor, target: torch.Tensor, d1: float, d2: float) -> torch.Tensor:
    """Element-wise: 0 below d1, ½e² in [d1, d2), d2(|e| − ½d2) beyond."""
    e = (pred - target).abs()
    quad = 0.5 * e ** 2
    lin = d2 * (e - 0.5 * d2)
    return torch.where(e < d1, torch.zeros_like(e), torch.where(e < d2, quad, lin))


def list_mle(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, generator=None) -> torch.Tensor:
    """ListMLE (Xia et al. 2008) per query over valid docs, ties in the labels shuffled. pred/target/mask: [B, D]."""
    noise = torch.rand(target.shape, generator=generator, device="cpu").to(target.device) * 1e-6
    key = torch.where(mask, target + noise, torch.full_like(target, -1e9))
    order = key.argsort(dim=-1, descending=True)
    p = pred.gather(-1, order)
    m = mask.gather(-1, order)
    p = torch.where(m, p, torch.full_like(p, -1e4))
    p = p - p.max(-1, keepdim=True).values.detach()
    tail = torch.logcumsumexp(p.flip(-1), dim=-1).flip(-1)
    loss = ((tail - p) * m).sum(-1) / m.sum(-1).clamp(min=1)
    return loss.mean()


def scaled_scores(weights, batch, k3, scale_by: str = "weighted"):
    """Scores over the largest candidate score of the query.

    ``weighted``: the largest score under the current weights (gradient flows through it), so the
    scaled scores are invariant to multiplying all weights by a constant and the loss can only
    change *relative* weights; ``uniform``: the largest unweighted BM25 score (a constant).
    """
    scores = bm25_scores(weights, batch["freq"], batch["idf"], batch["norm"], batch["term_valid"], k3)
    masked = torch.where(batch["doc_mask"], scores, torch.zeros_like(scores))
    if scale_by == "weighted":
        return scores / masked.max(-1, keepdim=True).values.clamp(min=1e-6)
    with torch.no_grad():
        ones = torch.ones_like(weights)
        base = bm25_scores(ones, batch["freq"], batch["idf"], batch["norm"], batch["term_valid"], None)
        base = torch.where(batch["doc_mask"], base, torch.zeros_like(base))
        scale = base.max(-1, keepdim=True).values.clamp(min=1e-6)
    return scores / scale


def prepare_features(index: LuceneIndex, stats: CollectionStats, queries: list[Query], qrels: list[Qrel],
                     config: TrainConfig, model: TWBert, training: bool,
                     forward: ForwardIndex | None = None) -> list[CandidateFeatures]:
    """BM25 top-k candidates from Lucene, tf/pf from term vectors, graded labels scaled to [0, 1]."""
    judged: dict[str, dict[str, int]] = {}
    for q in qrels:
        judged.setdefault(q.query_id, {})[q.doc_id] = q.relevance
    max_rel = max([q.relevance for q in qrels] + [1])
    run = LexicalSearcher(index, LexicalConfig("bm25", k1=config.model.k1, b=config.model.b,
                                               depth=config.candidates)).search(queries)
    forward = forward or ForwardIndex(index)
    known = stats.row_of_doc
    wanted = {}
    for q in queries:
        docs = [d for d, _ in run.ranking.get(q.query_id, [])]
        if training and config.add_unretrieved_relevant:
            docs += [d for d, r in judged.get(q.query_id, {}).items() if r > 0 and d not in docs and d in known]
        wanted[q.query_id] = docs
    forward.prefetch([d for docs in wanted.values() for d in docs])
    out = []
    for q in tqdm(queries, desc="features", unit="q", disable=len(queries) < 200):
        terms = model.fit_budget(extract_terms(index, q.query_id, q.text, config.model.bigrams))
        docs = wanted[q.query_id]
        labels = {d: max(0, r) / max_rel for d, r in judged.get(q.query_id, {}).items()}
        if terms.n_terms == 0 or not docs:
            continue
        if training and not any(labels.get(d, 0) > 0 for d in docs):
            continue
        out.append(build_features(terms, docs, stats, forward, config.model.k1, config.model.b, labels))
    return out


def rerank_run(model: TWBert, feats: list[CandidateFeatures], device, k3, plain_bm25: bool = False) -> Run:
    """Re-rank each query's candidates with the torch scorer (= Lucene restricted to the candidates).

    ``plain_bm25``: unit weights on uni-grams, none on bi-grams — the BM25 baseline on the same lists.
    """
    ranking = {}
    model.eval()
    with torch.no_grad():
        for start in range(0, len(feats), 32):
            chunk = feats[start:start + 32]
            batch = collate(chunk, device)
            if plain_bm25:
                weights = torch.zeros_like(batch["idf"])
                for i, f in enumerate(chunk):
                    weights[i, : len(f.terms.unigrams)] = 1.0
                k3 = None
            else:
                enc = {k: v.to(device) for k, v in model.encode([f.terms for f in chunk]).items()}
                weights = model(**enc).float()
            scores = bm25_scores(weights[:, : batch["idf"].shape[1]], batch["freq"], batch["idf"], batch["norm"],
                                 batch["term_valid"], k3)
            for i, f in enumerate(chunk):
                s = scores[i, : len(f.doc_ids)].cpu().tolist()
                ranking[f.terms.query_id] = sorted(zip(f.doc_ids, s), key=lambda x: -x[1])
    return Run(ranking, "twbert-val")


class Trainer:
    def __init__(self, config: TrainConfig, out_dir: str | Path):
        self.config, self.out = config, Path(out_dir)
        self.device = pick_device(config.device)
        self.use_amp = config.amp and self.device.type == "cuda"

    def _optimizer(self, model: TWBert):
        enc = [p for n, p in model.named_parameters() if n.startswith("encoder.")]
        head = [p for n, p in model.named_parameters() if not n.startswith("encoder.")]
        return torch.optim.AdamW([{"params": enc, "lr": self.config.lr},
                                  {"params": head, "lr": self.config.head_lr}], weight_decay=self.config.weight_decay)

    def _save_checkpoint(self, model, opt, state):
        with atomic_dir(self.out / "checkpoint") as tmp:
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "state": state,
                        "rng": {"torch": torch.get_rng_state(), "python": random.getstate(),
                                "numpy": np.random.get_state()}}, tmp / "trainer.pt")

    def train(self, index: LuceneIndex, stats: CollectionStats, queries: list[Query], qrels: list[Qrel],
              resume: bool = True) -> Path:
        cfg = self.config
        seed_everything(cfg.seed)
        model = TWBert.from_pretrained_bert(cfg.model).to(self.device)
        rng = random.Random(cfg.seed)
        judged_q = sorted({q.query_id for q in qrels if q.relevance > 0})
        qmap = {q.query_id: q for q in queries}
        ids = [q for q in judged_q if q in qmap]
        rng.shuffle(ids)
        if cfg.max_train_queries:
            ids = ids[: cfg.max_train_queries]
        n_val = max(1, int(len(ids) * cfg.val_fraction)) if len(ids) > 10 else 0
        val_ids, train_ids = set(ids[:n_val]), ids[n_val:]
        t0 = time.perf_counter()
        forward = ForwardIndex(index)
        train_feats = prepare_features(index, stats, [qmap[q] for q in train_ids], qrels, cfg, model, True, forward)
        val_feats = prepare_features(index, stats, [qmap[q] for q in sorted(val_ids)], qrels, cfg, model, False,
                                     forward)
        val_qrels = [q for q in qrels if q.query_id in val_ids]
        log.info("TW-BERT: %d training queries, %d validation queries (features %.1fs)",
                 len(train_feats), len(val_feats), time.perf_counter() - t0)
        if not train_feats:
            raise ValueError("no training query has a relevant document among its candidates")

        opt = self._optimizer(model)
        state = {"stage": 1, "epoch": 0, "best": -1.0, "bad_epochs": 0, "history": []}
        ckpt = self.out / "checkpoint" / "trainer.pt"
        if resume and ckpt.is_file():
            saved = torch.load(ckpt, map_location=self.device, weights_only=False)
            model.load_state_dict(saved["model"])
            opt.load_state_dict(saved["optimizer"])
            state = saved["state"]
            torch.set_rng_state(saved["rng"]["torch"])
            random.setstate(saved["rng"]["python"])
            np.random.set_state(saved["rng"]["numpy"])
            log.warning("resuming TW-BERT training from %s (stage %d, epoch %d)", ckpt, state["stage"], state["epoch"])
        scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        measure = parse_measures(["nDCG@10"])
        gen = torch.Generator().manual_seed(cfg.seed)

        def evaluate(plain_bm25: bool = False) -> float:
            if not val_feats:
                return float("nan")
            run = rerank_run(model, val_feats, self.device, cfg.model.k3, plain_bm25)
            return aggregate(measure, val_qrels, run)["nDCG@10"]

        if "val_bm25" not in state:
            state["val_bm25"] = evaluate(plain_bm25=True)
        while state["stage"] == 1 and state["epoch"] < cfg.stage1_epochs:
            model.train()
            order = list(range(len(train_feats)))
            random.Random(cfg.seed + state["epoch"]).shuffle(order)
            for start in tqdm(range(0, len(order), cfg.batch_queries), desc=f"stage 1 epoch {state['epoch'] + 1}",
                              unit="batch"):
                chunk = [train_feats[i] for i in order[start:start + cfg.batch_queries]]
                enc = {k: v.to(self.device) for k, v in model.encode([f.terms for f in chunk]).items()}
                with torch.autocast(self.device.type, enabled=self.use_amp):
                    w = model(**enc).float()
                valid = (enc["term_mask"].sum(-1) > 0).float()
                target = torch.full_like(w, cfg.stage1_bigram_target)
                for i, f in enumerate(chunk):
                    target[i, : len(f.terms.unigrams)] = cfg.stage1_unigram_target
                loss = (((w - target) ** 2) * valid).sum() / valid.sum().clamp(min=1)
                opt.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            state["epoch"] += 1
            self._save_checkpoint(model, opt, state)
        if state["stage"] == 1:
            state.update(stage=2, epoch=0, best=evaluate())
            state["history"].append({"stage": 1, "val_ndcg@10": state["best"]})
            model.save(self.out / "best")
            self._save_checkpoint(model, opt, state)
            log.info("after stage 1: validation nDCG@10 %.4f (BM25 %.4f)", state["best"], state.get("val_bm25", float("nan")))

        def checkpoint_eval(loss_value: float) -> None:
            score = evaluate()
            state["history"].append({"stage": 2, "epoch": state["epoch"], "step": state.get("step", 0),
                                     "loss": loss_value, "val_ndcg@10": score})
            log.info("epoch %d step %d: loss %.4f, validation nDCG@10 %.4f (BM25 %.4f)", state["epoch"],
                     state.get("step", 0), loss_value, score, state["val_bm25"])
            if score > state["best"] + 1e-5 or np.isnan(score):
                state["best"], state["bad_epochs"] = score, 0
                model.save(self.out / "best")
            else:
                state["bad_epochs"] += 1
            model.train()

        while state["stage"] == 2 and state["epoch"] < cfg.epochs and state["bad_epochs"] < cfg.patience:
            model.train()
            order = list(range(len(train_feats)))
            random.Random(cfg.seed + 1000 + state["epoch"]).shuffle(order)
            total, n_batches = 0.0, 0
            bar = tqdm(range(0, len(order), cfg.batch_queries), desc=f"stage 2 epoch {state['epoch'] + 1}", unit="batch")
            for start in bar:
                chunk = [train_feats[i] for i in order[start:start + cfg.batch_queries]]
                enc = {k: v.to(self.device) for k, v in model.encode([f.terms for f in chunk]).items()}
                batch = collate(chunk, self.device)
                with torch.autocast(self.device.type, enabled=self.use_amp):
                    w = model(**enc)
                w = w.float()[:, : batch["idf"].shape[1]]
                pred = model.maxout(scaled_scores(w, batch, cfg.model.k3, cfg.scale_by))
                mask = batch["doc_mask"]
                point = (amse(pred, batch["labels"], cfg.amse_d1, cfg.amse_d2) * mask).sum() / mask.sum()
                loss = point + cfg.listmle_weight * list_mle(pred, batch["labels"], mask, gen)
                opt.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(opt)
                scaler.update()
                total += float(loss.detach())
                n_batches += 1
                state["step"] = state.get("step", 0) + 1
                bar.set_postfix(loss=f"{total / n_batches:.4f}")
                if cfg.eval_every and state["step"] % cfg.eval_every == 0 and n_batches < len(bar):
                    checkpoint_eval(total / n_batches)
                    if state["bad_epochs"] >= cfg.patience:
                        break
            state["epoch"] += 1
            if state["bad_epochs"] < cfg.patience:
                checkpoint_eval(total / max(1, n_batches))
            self._save_checkpoint(model, opt, state)
        state["train_seconds"] = state.get("train_seconds", 0.0) + time.perf_counter() - t0
        (self.out / "training.json").write_text(json.dumps({"config": asdict(cfg), "state": state,
                                                            "n_train": len(train_feats), "n_val": len(val_feats)},
                                                           indent=2, default=str))
        return self.out / "best"
