"""Training GLOW / BISON Siamese encoders.

One encoder embeds queries (field 0) and documents (their fields); relevance is the cosine of
their [CLS] vectors.  Loss: binary cross-entropy on sigmoid(w · cos + b) with trainable w, b
initialised w = 20, b = 0 (the authors' code starts at w = 1; a pretrained checkpoint's [CLS]
vectors are so alike — cosines of 0.9999 between any two texts for MiniLM's first layers — that at
w = 1 the logits of positives and negatives differ by 1e-4 and nothing is learned in a short run),
positives and negatives weighted half each (unbalanced, the encoder collapses to the trivial
"every cosine low" answer on small training sets), and b set from the first batch to
−w · mean cosine so the logits start centred.  Each query's positive is a judged-relevant
document; its negatives are one BM25 hard negative from Lucene (judged documents excluded) and
in-batch documents sampled in proportion to exp(temperature · cos).  AdamW with linear warm-up
and decay, AMP on CUDA, gradient accumulation, a checkpoint every epoch (``resume`` continues),
early stopping on validation nDCG@10 from queries carved out of the training split, and DDP when
launched with ``torchrun`` (each rank takes its share of every epoch's batches).
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from irglow.data.records import Document, Qrel, Query
from irglow.dense.encode import dense_search, encode, faiss_index
from irglow.eval.measures import aggregate, parse_measures
from irglow.index.lucene_index import LuceneIndex
from irglow.index.stats import CollectionStats
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.checkpoints import pick_device, seed_everything
from irglow.models.glow.model import Featurizer, GlowConfig, GlowEncoder
from irglow.models.glow.weights import WordWeighter
from irglow.utils.atomic import atomic_dir

log = logging.getLogger(__name__)


@dataclass
class GlowTrainConfig:
    model: GlowConfig = field(default_factory=GlowConfig)
    batch_size: int = 16
    grad_accum: int = 1
    epochs: int = 2
    max_steps: int | None = None
    lr: float = 8e-5
    scorer_init_w: float = 20.0  # the authors use 1.0; see the module docstring
    scorer_lr: float = 1e-2  # the two calibration scalars w, b (at 8e-5 they would not move in a short run)
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    hard_negative_depth: int = 30
    in_batch_negatives: int = 4
    temperature: float = 10.0
    val_fraction: float = 0.1
    val_max_docs: int = 20000  # above this, validation ranks the union of BM25 top-k lists (+ judged docs)
    val_pool_depth: int = 100
    patience: int = 2
    seed: int = 13
    device: str = "auto"
    amp: bool = True
    encode_batch: int = 64

    @classmethod
    def from_dict(cls, d: dict) -> "GlowTrainConfig":
        d = dict(d)
        model = GlowConfig(**d.pop("model", {}))
        return cls(model=model, **{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


class GlowScorer(torch.nn.Module):
    """The trainable calibration sigmoid(w · cos + b)."""

    def __init__(self, w: float = 1.0):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(float(w)))
        self.b = torch.nn.Parameter(torch.tensor(0.0))

    def forward(self, cos):
        return self.w * cos + self.b


def _dist():
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def to_device(batch: dict, device) -> dict:
    return {k: v.to(device) for k, v in batch.items()}


def embed(model: GlowEncoder, featurizer: Featurizer, items, device, kind: str) -> torch.Tensor:
    batch = featurizer.queries([q.text for q in items]) if kind == "query" else featurizer.documents(items)
    return model(**to_device(batch, device))


class GlowTrainer:
    def __init__(self, config: GlowTrainConfig, out_dir: str | Path):
        self.config, self.out = config, Path(out_dir)
        self.rank, self.world = _dist()
        if self.world > 1 and torch.cuda.is_available():
            local = int(os.environ.get("LOCAL_RANK", "0"))
            torch.cuda.set_device(local)
            self.device = torch.device("cuda", local)
        else:
            self.device = pick_device(config.device)
        self.use_amp = config.amp and self.device.type == "cuda"

    def train(self, index: LuceneIndex, stats: CollectionStats, docs: dict[str, Document],
              queries: list[Query], qrels: list[Qrel], resume: bool = True) -> Path:
        cfg = self.config
        seed_everything(cfg.seed)
        model = GlowEncoder.from_pretrained_bert(cfg.model).to(self.device)
        scorer = GlowScorer(cfg.scorer_init_w).to(self.device)
        weighter = WordWeighter(index, stats, cfg.model.weight_config()) if cfg.model.weighted else None
        qmap = {q.query_id: q for q in queries}
        if weighter is not None:
            cfg.model.weights["avg_query_len"] = weighter.set_avg_query_len([q.text for q in queries])
        featurizer = Featurizer(cfg.model, model.tokenizer, weighter)

        positives: dict[str, list[str]] = {}
        judged: dict[str, set[str]] = {}
        for q in qrels:
            judged.setdefault(q.query_id, set()).add(q.doc_id)
            if q.relevance > 0 and q.query_id in qmap and q.doc_id in docs:
                positives.setdefault(q.query_id, []).append(q.doc_id)
        ids = sorted(positives)
        random.Random(cfg.seed).shuffle(ids)
        n_val = max(1, int(len(ids) * cfg.val_fraction)) if len(ids) > 10 else 0
        val_ids, train_ids = sorted(ids[:n_val]), ids[n_val:]
        bm25 = LexicalSearcher(index, LexicalConfig("bm25", depth=max(cfg.hard_negative_depth, 100))).search(
            [qmap[q] for q in ids])
        hard = {q: [d for d, _ in bm25.ranking.get(q, [])[: cfg.hard_negative_depth] if d not in judged.get(q, ())
                    and d in docs] for q in train_ids}
        # one (query, positive) pair per training query and epoch, the positive drawn anew each epoch
        pairs = [(q, None) for q in train_ids]
        val_queries = [qmap[q] for q in val_ids]
        val_qrels = [r for r in qrels if r.query_id in set(val_ids)]
        if len(docs) <= cfg.val_max_docs:
            val_docs = list(docs.values())
        else:
            pool = {d for q in val_ids for d, _ in bm25.ranking.get(q, [])[: cfg.val_pool_depth]}
            pool |= {r.doc_id for r in val_qrels}
            val_docs = [docs[d] for d in sorted(pool) if d in docs]

        steps_per_epoch = max(1, len(pairs) // (cfg.batch_size * self.world * cfg.grad_accum))
        total_steps = cfg.max_steps or steps_per_epoch * cfg.epochs
        params = list(model.parameters()) + list(scorer.parameters())
        opt = torch.optim.AdamW([{"params": list(model.parameters()), "lr": cfg.lr},
                                 {"params": list(scorer.parameters()), "lr": cfg.scorer_lr, "weight_decay": 0.0}],
                                lr=cfg.lr, weight_decay=cfg.weight_decay)
        warmup = max(1, int(cfg.warmup_ratio * total_steps))
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (total_steps - s) / max(1, total_steps - warmup))
            if s >= warmup else (s + 1) / warmup)
        state = {"epoch": 0, "step": 0, "best": -1.0, "bad": 0, "history": []}
        ckpt = self.out / "checkpoint" / "trainer.pt"
        if resume and ckpt.is_file():
            saved = torch.load(ckpt, map_location=self.device, weights_only=False)
            model.load_state_dict(saved["model"])
            scorer.load_state_dict(saved["scorer"])
            opt.load_state_dict(saved["optimizer"])
            sched.load_state_dict(saved["scheduler"])
            state = saved["state"]
            log.warning("resuming GLOW training from %s (epoch %d, step %d)", ckpt, state["epoch"], state["step"])
        train_model = model
        if self.world > 1:
            train_model = torch.nn.parallel.DistributedDataParallel(
                model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        measure = parse_measures(["nDCG@10"])

        def validate() -> float:
            if not val_queries:
                return float("nan")
            model.eval()
            dv = encode(val_docs, lambda b: embed(model, featurizer, b, self.device, "doc"), cfg.encode_batch,
                        desc="validation corpus")
            qv = encode(val_queries, lambda b: embed(model, featurizer, b, self.device, "query"), cfg.encode_batch)
            run = dense_search(faiss_index(dv), [d.doc_id for d in val_docs], val_queries, qv, depth=100)
            model.train()
            return aggregate(measure, val_qrels, run)["nDCG@10"]

        t0 = time.perf_counter()
        rng = random.Random(cfg.seed)
        while state["epoch"] < cfg.epochs and state["step"] < total_steps and state["bad"] < cfg.patience:
            model.train()
            order = list(range(len(pairs)))
            random.Random(cfg.seed + state["epoch"]).shuffle(order)
            order = order[self.rank::self.world]
            batches = [order[i:i + cfg.batch_size] for i in range(0, len(order) - cfg.batch_size + 1, cfg.batch_size)]
            bar = tqdm(batches, desc=f"GLOW[{cfg.model.variant}] epoch {state['epoch'] + 1}", unit="batch",
                       disable=self.rank != 0)
            running = 0.0
            for n, batch_idx in enumerate(bar, 1):
                qids = [pairs[i][0] for i in batch_idx]
                pos = [docs[rng.choice(positives[q])] for q in qids]
                neg = [docs[rng.choice(hard[q])] if hard.get(q) else docs[rng.choice(list(docs))] for q in qids]
                with torch.autocast(self.device.type, enabled=self.use_amp):
                    qv = torch.nn.functional.normalize(embed(train_model, featurizer, [qmap[q] for q in qids],
                                                             self.device, "query").float(), dim=-1)
                    dv = torch.nn.functional.normalize(embed(train_model, featurizer, pos + neg, self.device,
                                                             "doc").float(), dim=-1)
                cos = qv @ dv.T  # [B, 2B]: columns 0..B-1 positives, B..2B-1 hard negatives
                B = len(qids)
                doc_ids = [d.doc_id for d in pos + neg]
                is_rel = torch.tensor([[d in positives.get(q, ()) or d in judged.get(q, ()) and d == pos[i].doc_id
                                        for d in doc_ids] for i, q in enumerate(qids)], device=cos.device)
                if state["step"] == 0 and n == 1 and not state.get("bias_initialised"):
                    # data-dependent start: centre the logits (b = −w · mean cosine of the first batch),
                    # so the first steps separate positives from negatives instead of moving b
                    with torch.no_grad():
                        scorer.b.fill_(-float(scorer.w) * float(cos.mean()))
                    state["bias_initialised"] = True
                logits = scorer(cos)
                pos_logit = logits[torch.arange(B), torch.arange(B)]
                hard_logit = logits[torch.arange(B), torch.arange(B) + B]
                cand = logits.masked_fill(is_rel, float("-inf"))
                cand[torch.arange(B), torch.arange(B) + B] = float("-inf")  # the hard negative is counted once
                k = min(cfg.in_batch_negatives, 2 * B - 2)
                probs = torch.softmax(cfg.temperature * cos.detach().masked_fill(torch.isinf(cand), float("-inf")), -1)
                probs = torch.nan_to_num(probs, nan=0.0)
                sampled = []
                for i in range(B):
                    if probs[i].sum() > 0 and k > 0:
                        j = torch.multinomial(probs[i], min(k, int((probs[i] > 0).sum())), replacement=False)
                        sampled.append(logits[i, j])
                neg_logit = torch.cat([hard_logit] + sampled)
                bce = torch.nn.functional.binary_cross_entropy_with_logits
                # class-balanced: positives and negatives weigh half each, so pushing every cosine down
                # (the trivial answer when negatives outnumber positives 5:1) does not pay
                loss = 0.5 * bce(pos_logit, torch.ones_like(pos_logit)) + 0.5 * bce(neg_logit, torch.zeros_like(neg_logit))
                scaler.scale(loss / cfg.grad_accum).backward()
                if n % cfg.grad_accum == 0:
                    scaler.unscale_(opt)
                    torch.nn.utils.clip_grad_norm_(params, 1.0)
                    scaler.step(opt)
                    scaler.update()
                    opt.zero_grad(set_to_none=True)
                    sched.step()
                    state["step"] += 1
                running += float(loss.detach())
                bar.set_postfix(loss=f"{running / n:.4f}", w=f"{scorer.w.item():.2f}")
                if state["step"] >= total_steps:
                    break
            state["epoch"] += 1
            if self.rank == 0:
                score = validate()
                state["history"].append({"epoch": state["epoch"], "step": state["step"], "loss": running / max(1, n),
                                         "val_ndcg@10": score})
                log.info("GLOW[%s] epoch %d: loss %.4f, validation nDCG@10 %.4f", cfg.model.variant, state["epoch"],
                         running / max(1, n), score)
                if score > state["best"] + 1e-5 or np.isnan(score):
                    state["best"], state["bad"] = score, 0
                    model.save(self.out / "best")
                else:
                    state["bad"] += 1
                with atomic_dir(self.out / "checkpoint") as tmp:
                    torch.save({"model": model.state_dict(), "scorer": scorer.state_dict(),
                                "optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "state": state},
                               tmp / "trainer.pt")
        state["train_seconds"] = state.get("train_seconds", 0.0) + time.perf_counter() - t0
        if self.rank == 0:
            (self.out / "training.json").write_text(json.dumps(
                {"config": asdict(cfg), "state": state, "pairs": len(pairs), "val_queries": len(val_queries)},
                indent=2, default=str))
        return self.out / "best"
