"""Training the re-rankers: one loop for monoBERT and NRM-F.

Each training query brings one judged-relevant document (its graded label kept) and ``negatives``
documents from BM25's top ``negative_depth`` that are not judged for it (a random unjudged document
when BM25 has none).  Two losses over a query's group [positive, negatives…]:

* ``softmax`` (monoBERT's; with one negative it is the pairwise softmax cross-entropy of the two
  scores, with several the listwise one): −log softmax(scores)[positive];
* ``pairwise`` (NRM-F's): Σ over pairs with label_i > label_j of (2^label_i − 2^label_j) ·
  −log σ(s_i − s_j), divided by the sum of those gains — RankNet's cross-entropy with the NDCG-style
  gain differences the paper uses for graded labels.

Validation re-ranks BM25's top ``val_depth`` of queries carved out of the training split (judged
documents are not added) and measures nDCG@10; the untrained model is evaluated first and the best
evaluation's model is kept in ``<out>/best``.  AdamW with linear warm-up and decay, AMP on CUDA,
a checkpoint per epoch that ``resume`` continues from (loaded with ``weights_only=True``).
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from tqdm.auto import tqdm

from irglow.config import check_settings, check_values
from irglow.data.records import Document, Qrel, Query
from irglow.eval.measures import parse_measures
from irglow.index.lucene_index import LuceneIndex
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.models.checkpoints import (clipped_step, fit_batch, keep_sampler, pick_device, restore_sampler,
                                      resume_trainer, save_trainer_checkpoint, seed_everything, split_validation,
                                      training_inputs, validation_score)
from irglow.models.glow.train import linear_schedule, pick_negatives
from irglow.models.rerank.rerank import rerank
from irglow.models.validation import selection_score
from irglow.runs.trec import Run
from irglow.utils.atomic import atomic_write_text

log = logging.getLogger(__name__)

KINDS = ("monobert", "nrmf")


@dataclass
class RerankTrainConfig:
    kind: str = "monobert"
    model: dict = field(default_factory=dict)  # MonoBERTConfig / NRMFConfig settings
    loss: str | None = None  # softmax | pairwise; None: monoBERT softmax, NRM-F pairwise
    negatives: int = 3
    negative_depth: int = 50
    batch_queries: int = 8
    epochs: int = 1
    max_steps: int | None = None
    lr: float | None = None  # None: 1e-4 for monoBERT (see configs/rerank.toml), 1e-3 for NRM-F
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    val_fraction: float = 0.1
    val_depth: int = 30
    eval_every: int = 0  # also validate every n steps (0: epoch ends only)
    patience: int = 2
    score_batch: int = 64
    seed: int = 13
    device: str = "auto"
    amp: bool = True

    def __post_init__(self):
        check_values(self, "rerank")  # types and ranges first: the checks below compare values
        if self.kind not in KINDS:
            raise ValueError(f"re-ranker kind must be one of {KINDS}, not {self.kind!r}")
        self.loss = self.loss or ("softmax" if self.kind == "monobert" else "pairwise")
        if self.loss not in ("softmax", "pairwise"):
            raise ValueError(f"re-ranker loss must be 'softmax' or 'pairwise', not {self.loss!r}")
        self.lr = self.lr if self.lr is not None else (1e-4 if self.kind == "monobert" else 1e-3)

    @classmethod
    def from_dict(cls, d: dict) -> "RerankTrainConfig":
        check_settings(d, cls.__dataclass_fields__, "re-ranker training", ignore={"enabled"})
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

    def model_config(self, key: str, fields: list[str] | None = None):
        """The model's settings (``[rerank.<kind>.model]``), checked — a misspelt key or a wrong type is an
        error naming ``key`` before any work, not when the model is built after the first stage ran."""
        if self.kind == "monobert":
            from irglow.models.rerank.monobert import MonoBERTConfig as Config
        else:
            from irglow.models.rerank.nrmf import NRMFConfig as Config
        if not isinstance(self.model, dict):
            raise ValueError(f"{key} = {self.model!r} must be a table of settings")
        try:
            return Config.from_dict({"fields": fields or ["text"], **self.model})
        except (TypeError, ValueError) as e:
            raise ValueError(f"{key}: {e}") from None

    def build_model(self, fields: list[str]):
        config = self.model_config(f"rerank.{self.kind}.model", fields)
        if self.kind == "monobert":
            from irglow.models.rerank.monobert import MonoBERT

            return MonoBERT.from_pretrained_bert(config)
        from irglow.models.rerank.nrmf import NRMF

        return NRMF(config)


def kept_note(best_step: int | None, last_step: int, best: float) -> str:
    """Which step's model ``best/`` holds and why, for the notes under a table."""
    if best_step == 0:
        return f"step 0 (the untrained model): no later step beat its validation nDCG@10 {best:.4f}; last step " \
               f"{last_step} was validated"
    return f"step {best_step} of {last_step}: the best validation nDCG@10 ({best:.4f})"


def softmax_loss(scores: torch.Tensor) -> torch.Tensor:
    """scores [B, 1 + n], column 0 the positive: mean −log softmax(scores)[0]."""
    return torch.nn.functional.cross_entropy(scores, torch.zeros(scores.shape[0], dtype=torch.long,
                                                                 device=scores.device))


def pairwise_loss(scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Σ_{l_i > l_j} (2^l_i − 2^l_j) · −log σ(s_i − s_j) / Σ (2^l_i − 2^l_j) over every group of the batch."""
    gain = 2.0 ** labels.float()
    weight = (gain.unsqueeze(2) - gain.unsqueeze(1)).clamp(min=0)  # [B, n, n]: i better than j
    diff = scores.unsqueeze(2) - scores.unsqueeze(1)
    loss = torch.nn.functional.softplus(-diff)  # −log σ(s_i − s_j)
    return (weight * loss).sum() / weight.sum().clamp(min=1e-12)


class RerankTrainer:
    def __init__(self, config: RerankTrainConfig, out_dir: str | Path):
        self.config, self.out = config, Path(out_dir)
        self.device = pick_device(config.device)
        self.use_amp = config.amp and self.device.type == "cuda"

    def train(self, index: LuceneIndex, docs: dict[str, Document], queries: list[Query], qrels: list[Qrel],
              fields: list[str] | None = None, resume: bool = True, first_stage: Run | None = None,
              validation: tuple = ()) -> Path:
        """``first_stage``: the run of the training queries the model will re-rank (TW-BERT's, a hybrid …):
        hard negatives and validation candidates come from it, so the model learns the mistakes of the
        ranking it corrects; ``None``: BM25's.  ``validation``: other collections' held-out queries
        (:mod:`irglow.models.validation`) the checkpoint is also chosen on, each re-ranking its own BM25 top
        ``val_depth``; the mean over sources is kept."""
        cfg = self.config
        seed_everything(cfg.seed)
        model = cfg.build_model(list(fields or index.fields)).to(self.device)
        qmap = {q.query_id: q for q in queries}
        positives: dict[str, list[tuple[str, int]]] = {}
        judged: dict[str, set[str]] = {}
        for r in qrels:
            judged.setdefault(r.query_id, set()).add(r.doc_id)
            if r.relevance > 0 and r.query_id in qmap and r.doc_id in docs:
                positives.setdefault(r.query_id, []).append((r.doc_id, int(r.relevance)))
        ids = sorted(positives)
        random.Random(cfg.seed).shuffle(ids)
        val_ids, train_ids = split_validation(ids, cfg.val_fraction, f"{cfg.kind} training", cfg.seed)
        if not train_ids:
            raise ValueError("no training query has a judged-relevant document in the collection")
        bm25 = first_stage if first_stage is not None else LexicalSearcher(
            index, LexicalConfig("bm25", depth=max(cfg.negative_depth, cfg.val_depth))).search([qmap[q] for q in ids])
        hard = {q: [d for d, _ in bm25.ranking.get(q, [])[: cfg.negative_depth] if d not in judged.get(q, ())
                    and d in docs] for q in train_ids}
        val_queries = [qmap[q] for q in val_ids]
        val_qrels = [r for r in qrels if r.query_id in set(val_ids)]
        val_run = Run({q: bm25.ranking.get(q, [])[: cfg.val_depth] for q in val_ids}, bm25.tag)
        doc_ids = list(docs)

        batch = fit_batch(cfg.batch_queries, len(train_ids), f"{cfg.kind} training", "batch_queries")
        steps_per_epoch = max(1, len(train_ids) // batch)
        total_steps = cfg.max_steps or steps_per_epoch * cfg.epochs
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        warmup = max(1, int(cfg.warmup_ratio * total_steps))
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: linear_schedule(s, warmup, total_steps))
        inputs = training_inputs(cfg, queries, qrels, index)
        if first_stage is not None:  # a checkpoint belongs to the candidates it was trained on, too
            from irglow.utils.digest import records_digest

            inputs["data"]["first_stage"] = records_digest(
                (q, d, s) for q, docs in sorted(first_stage.ranking.items()) for d, s in docs)
        if validation:
            inputs["data"]["also_validate"] = [v.digest for v in validation]
        others = [(v, LexicalSearcher(v.index, LexicalConfig("bm25", depth=cfg.val_depth)).search(list(v.queries)))
                  for v in validation]
        state = {"epoch": 0, "step": 0, "best": -1.0, "best_step": None, "bad": 0, "history": [],
                 "train_seconds": 0.0, "inputs": inputs, "batch_queries": batch}
        ckpt = self.out / "checkpoint" / "trainer.pt"
        if resume and ckpt.is_file():
            state = resume_trainer(ckpt, self.device, inputs=inputs, model=model, optimizer=opt, scheduler=sched)
            log.warning("resuming %s training from %s (epoch %d, step %d)", cfg.kind, ckpt, state["epoch"],
                        state["step"])
        scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        measure = parse_measures(["nDCG@10"])

        def evaluate(loss: float | None) -> None:
            own = float("nan")
            if val_queries:
                run = rerank(model, val_run, val_queries, docs, cfg.val_depth, cfg.score_batch, device=self.device,
                             desc="validation")
                own = validation_score(measure, val_qrels, run)
            by_source = {v.label: validation_score(measure, v.qrels, rerank(
                model, candidates, list(v.queries), v.docs, cfg.val_depth, cfg.score_batch, device=self.device,
                desc=f"validation ({v.label})")) for v, candidates in others}
            score = selection_score(own, by_source)
            model.train()
            state["history"].append({"epoch": state["epoch"], "step": state["step"], "loss": loss,
                                     "val_ndcg@10": score, **({"val_by_source": {"own": own, **by_source}}
                                                              if by_source else {})})
            log.info("%s step %d (epoch %d): loss %s, validation nDCG@10 %.4f%s", cfg.kind, state["step"],
                     state["epoch"], "-" if loss is None else f"{loss:.4f}", score,
                     "".join(f", {k} {v:.4f}" for k, v in by_source.items()))
            if score > state["best"] + 1e-5 or score != score:
                state["best"], state["best_step"], state["bad"] = score, state["step"], 0
                model.save(self.out / "best")
            else:
                state["bad"] += 1

        t0 = time.perf_counter()
        if not state["history"]:
            evaluate(None)  # the untrained model: training has to beat it
        rng = random.Random(cfg.seed + state["epoch"])
        restore_sampler(state, rng)  # resumed: where the uninterrupted run's sampler was
        while state["epoch"] < cfg.epochs and state["step"] < total_steps and state["bad"] < cfg.patience:
            model.train()
            order = list(train_ids)
            random.Random(cfg.seed + state["epoch"]).shuffle(order)
            batches = [order[i:i + batch] for i in range(0, len(order) - batch + 1, batch)]
            bar = tqdm(batches, desc=f"{cfg.kind} epoch {state['epoch'] + 1}", unit="batch")
            running, n = 0.0, 0
            for n, qids in enumerate(bar, 1):
                texts, group, labels = [], [], []
                for q in qids:
                    pos, rel = rng.choice(positives[q])
                    neg = pick_negatives(hard.get(q, []), judged.get(q, set()), doc_ids, cfg.negatives, rng)
                    texts += [qmap[q].text] * (1 + len(neg))
                    group += [docs[pos]] + [docs[d] for d in neg]
                    labels.append([rel] + [0] * len(neg))
                with torch.autocast(self.device.type, enabled=self.use_amp):
                    scores = model.score(texts, group).float().view(len(qids), -1)
                lab = torch.tensor(labels, device=scores.device)
                loss = softmax_loss(scores) if cfg.loss == "softmax" else pairwise_loss(scores, lab)
                opt.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                clipped_step(opt, scaler, model.parameters())
                sched.step()
                state["step"] += 1
                running += float(loss.detach())
                bar.set_postfix(loss=f"{running / n:.4f}")
                if cfg.eval_every and state["step"] % cfg.eval_every == 0 and state["step"] < total_steps:
                    evaluate(running / n)
                    if state["bad"] >= cfg.patience:
                        break
                if state["step"] >= total_steps:
                    break
            state["epoch"] += 1
            last = state["history"][-1]["step"] if state["history"] else -1
            finishing = state["epoch"] >= cfg.epochs or state["step"] >= total_steps or state["bad"] >= cfg.patience
            # not again right after a periodic evaluation (nearly the same model) — except after the last step,
            # which is always validated: max_steps below eval_every kept the step-0 model without a word
            if state["step"] != last and (finishing or not (cfg.eval_every and
                                                            state["step"] - last < max(1, cfg.eval_every // 2))):
                evaluate(running / max(1, n))
            state["train_seconds"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            keep_sampler(state, rng)
            save_trainer_checkpoint(self.out / "checkpoint", state, model=model, optimizer=opt, scheduler=sched)
        state["train_seconds"] += time.perf_counter() - t0
        atomic_write_text(self.out / "training.json", json.dumps(
            {"config": asdict(cfg), "state": state, "kept": kept_note(state["best_step"], state["step"], state["best"]),
             "train_queries": len(train_ids), "val_queries": len(val_ids),
             "val_query_ids": val_ids, "first_stage": bm25.tag,
             "also_validated_on": {v.label: len(v.queries) for v, _ in others}}, indent=2, default=str))
        return self.out / "best"
