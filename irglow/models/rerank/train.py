"""Training the re-rankers, monoBERT and NRM-F, in the one training loop (:mod:`irglow.models.training`).

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
evaluation's model is kept in ``<out>/best``.  AdamW with linear warm-up and decay; AMP, checkpoints,
resumption and early stopping are the loop's.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from pathlib import Path

import torch

from irglow.config import check_settings, check_values
from irglow.data.records import Document, Qrel, Query
from irglow.eval.measures import parse_measures
from irglow.index.lucene_index import LuceneIndex
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher, pool_config, pool_inputs
from irglow.models.checkpoints import fit_batch, pick_device, seed_everything, training_inputs, validation_score
from irglow.models.rerank.builtin import TORCH_MODELS
from irglow.models.rerank.rerank import rerank
from irglow.models.training import Examples, LoopSettings, Task, TrainingLoop, warmup_then_decay
from irglow.models.validation import selection_score
from irglow.runs.trec import Run
from irglow.defaults import DEVICE, SEED, VAL_FRACTION
from irglow.settings import setting

log = logging.getLogger(__name__)

@dataclass
class RerankTrainConfig:
    kind: str = setting("monobert", "monobert (cross-encoder) or nrmf (multi-field neural ranking)",
                        choices=tuple(TORCH_MODELS))
    model: dict = setting(factory=dict, doc="the model's settings ([rerank.<kind>.model])")
    loss: str | None = setting(None, "softmax or pairwise (unset: softmax for monoBERT, pairwise for NRM-F)",
                               choices=("softmax", "pairwise"), optional=True)
    negatives: int = setting(3, "negatives per query and step", low=1)
    negative_depth: int = setting(50, "the first stage's depth negatives are drawn from", low=1)
    batch_queries: int = setting(8, "queries per batch", low=1)
    epochs: int = setting(1, "training epochs", low=1)
    max_steps: int | None = setting(None, "stop after N optimizer steps (unset: the epochs decide)", low=1)
    lr: float | None = setting(None, "learning rate (unset: 1e-4 for monoBERT, see configs/rerank.toml; 1e-3 for "
                               "NRM-F)", above=0)
    warmup_ratio: float = setting(0.1, "share of the steps over which the learning rate warms up", low=0, high=1)
    weight_decay: float = setting(0.01, "AdamW's weight decay", low=0)
    val_fraction: float = setting(VAL_FRACTION, "share of the training queries held out for early stopping", low=0, high=1)
    val_depth: int = setting(30, "documents of the first stage re-ranked per held-out query in validation", low=1)
    eval_every: int = setting(0, "also validate every N steps (0: epoch ends only)", low=0)
    grad_accum: int = setting(1, "batches per optimizer step, over every process under torchrun "
                                          "(N processes take the steps one takes)", low=1)
    patience: int = setting(2, "evaluations without a gain before training stops", low=0)
    score_batch: int = setting(64, "query–document pairs scored per batch", low=1)
    seed: int = setting(SEED, "the seed of the validation split, the batches and every draw", low=0)
    device: str = setting(DEVICE, "auto (CUDA where there is one), cpu or cuda[:n]")
    amp: bool = setting(True, "mixed precision (autocast and a loss scale) on CUDA")

    def __post_init__(self):
        check_values(self, "rerank")  # types and ranges first: the checks below compare values
        kind = TORCH_MODELS[self.kind]  # its kind's defaults where unset
        self.loss = self.loss or kind.loss
        self.lr = self.lr if self.lr is not None else kind.lr

    @classmethod
    def from_dict(cls, d: dict) -> "RerankTrainConfig":
        import copy

        check_settings(d, cls.__dataclass_fields__, f"[rerank.{d.get('kind', '<kind>')}]", ignore={"enabled"})
        # a config of its own: nothing a training changes reaches the bound settings
        return cls(**{k: copy.deepcopy(v) for k, v in d.items() if k in cls.__dataclass_fields__})

    def model_config(self, key: str, fields: list[str] | None = None):
        """The model's settings (``[rerank.<kind>.model]``), checked — a misspelt key or a wrong type is an
        error naming ``key`` before any work, not when the model is built after the first stage ran."""
        config_class = TORCH_MODELS[self.kind].config_class
        if not isinstance(self.model, dict):
            raise ValueError(f"{key} = {self.model!r} must be a table of settings")
        try:
            return config_class.from_dict({"fields": fields or ["text"], **self.model})
        except (TypeError, ValueError) as e:
            raise ValueError(f"{key}: {e}") from None

    def build_model(self, fields: list[str]):
        return TORCH_MODELS[self.kind].model_class.for_training(self.model_config(f"rerank.{self.kind}.model", fields))


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

    def train(self, index: LuceneIndex, docs: dict[str, Document], queries: list[Query], qrels: list[Qrel],
              fields: list[str] | None = None, resume: bool = True, first_stage: Run | None = None,
              validation: tuple = (), bm25: LexicalConfig | None = None) -> Path:
        """``first_stage``: the run of the training queries the model will re-rank (TW-BERT's, a hybrid …):
        hard negatives and validation candidates come from it, so the model learns the mistakes of the
        ranking it corrects; ``None``: BM25's.  ``validation``: other collections' held-out queries
        (:mod:`irglow.models.validation`) the checkpoint is also chosen on, each re-ranking its own BM25 top
        ``val_depth``; the mean over sources is kept.  ``bm25``: the experiment's BM25 (``[lexical]`` k1 and b),
        which those BM25 pools are searched with (``None``: the defaults)."""
        cfg = self.config
        seed_everything(cfg.seed)
        model = cfg.build_model(list(fields or index.fields)).to(self.device)
        ex = Examples.split(docs, queries, qrels, cfg.val_fraction, f"{cfg.kind} training", cfg.seed)
        if not ex.train_ids:
            raise ValueError("no training query has a judged-relevant document in the collection")
        pooled = first_stage if first_stage is not None else LexicalSearcher(
            index, pool_config(bm25, max(cfg.negative_depth, cfg.val_depth))).search([ex.queries[q] for q in ex.ids])
        ex.mine(pooled, cfg.negative_depth)
        # an optimizer step takes grad_accum batches over every process: the steps one process takes
        batch = fit_batch(cfg.batch_queries, len(ex.train_ids), f"{cfg.kind} training", "batch_queries",
                          cfg.grad_accum)
        total_steps = cfg.max_steps or max(1, len(ex.train_ids) // (batch * cfg.grad_accum)) * cfg.epochs
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        inputs = training_inputs(cfg, queries, qrels, index)
        inputs["data"].update(pool_inputs(bm25))
        if first_stage is not None:  # a checkpoint belongs to the candidates it was trained on, too
            inputs["data"]["first_stage"] = first_stage.digest()
        if validation:
            inputs["data"]["also_validate"] = [v.digest for v in validation]
        others = [(v, LexicalSearcher(v.index, pool_config(bm25, cfg.val_depth)).search(list(v.queries)))
                  for v in validation]
        candidates = Run({q: pooled.ranking.get(q, [])[: cfg.val_depth] for q in ex.val_ids}, pooled.tag)
        task = _RerankTask(model, opt, warmup_then_decay(opt, cfg.warmup_ratio, total_steps), cfg, self.device, batch,
                           ex, candidates, ex.held_out_qrels(qrels), others)
        TrainingLoop(task, LoopSettings.of(cfg), self.out, self.device).run(resume, inputs, {"batch_queries": batch})
        return self.out / "best"


class _RerankTask(Task):
    """monoBERT or NRM-F in the training loop: batches of training queries, each a group of its positive and
    ``negatives`` sampled negatives scored together (the module docstring's losses); validation re-ranks the
    held-out queries' first-stage candidates."""

    def __init__(self, model, optimizer, scheduler, cfg: RerankTrainConfig, device, batch: int, examples: Examples,
                 candidates: Run, val_qrels: list[Qrel], others: list):
        super().__init__(model, optimizer, scheduler, config=cfg)
        self.name, self.device, self.batch, self.ex = cfg.kind, device, batch, examples
        self.candidates, self.val_qrels, self.others = candidates, val_qrels, others
        self.sampler = random.Random(cfg.seed)
        self.measure = parse_measures(["nDCG@10"])

    def epoch_batches(self, epoch: int, warming: bool = False) -> list:
        order = list(self.ex.train_ids)
        random.Random(self.config.seed + epoch).shuffle(order)
        return [order[i:i + self.batch] for i in range(0, len(order) - self.batch + 1, self.batch)]

    def draw(self, qids, warming: bool = False) -> list:
        """Each query with a judged-relevant document (and its grade) and its sampled negatives: ids only."""
        ex = self.ex
        return [(q, *self.sampler.choice(ex.positives[q]), ex.negatives(q, self.config.negatives, self.sampler))
                for q in qids]

    def loss(self, drawn, autocast, warming: bool = False) -> torch.Tensor:
        texts, group, labels, ex = [], [], [], self.ex
        qids = [q for q, *_ in drawn]
        for q, pos, rel, neg in drawn:
            texts += [ex.queries[q].text] * (1 + len(neg))
            group += [ex.docs[pos]] + [ex.docs[d] for d in neg]
            labels.append([rel] + [0] * len(neg))
        with autocast():
            scores = self.model.score(texts, group).float().view(len(qids), -1)
        lab = torch.tensor(labels, device=scores.device)
        return softmax_loss(scores) if self.config.loss == "softmax" else pairwise_loss(scores, lab)

    def validate(self) -> tuple[float, dict]:
        cfg, model, ex = self.config, self.model, self.ex
        own = float("nan")
        if ex.val_ids:
            own = validation_score(self.measure, self.val_qrels, rerank(
                model, self.candidates, [ex.queries[q] for q in ex.val_ids], ex.docs, cfg.val_depth, cfg.score_batch,
                device=self.device, desc="validation"))
        by_source = {v.label: validation_score(self.measure, v.qrels, rerank(
            model, candidates, list(v.queries), v.docs, cfg.val_depth, cfg.score_batch, device=self.device,
            desc=f"validation ({v.label})")) for v, candidates in self.others}
        return selection_score(own, by_source), ({"val_by_source": {"own": own, **by_source}} if by_source else {})

    def report(self) -> dict:
        state, ex = self.state, self.ex
        return {"kept": kept_note(state["best_step"], state["step"], state["best"]),
                "train_queries": len(ex.train_ids), "val_queries": len(ex.val_ids), "val_query_ids": ex.val_ids,
                "first_stage": self.candidates.tag,
                "also_validated_on": {v.label: len(v.queries) for v, _ in self.others}}
