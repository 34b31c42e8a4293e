"""The TW-BERT network: BERT over the query's n-grams, mean-pooled per term, a linear head → weight.

Input: ``[CLS] uni-gram words … [SEP] bi-gram words … [SEP]`` (uni-grams first, then bi-grams);
a term mask maps every WordPiece to the term whose words it came from.

Two heads (``TWBertConfig.head``):

* ``residual`` (default): w = prior · exp(δ), δ = linear(pooled) with the linear layer initialised
  to zero, so an untrained model *is* the fixed prior (uni-grams ``unigram_prior`` = 1, i.e. BM25;
  bi-grams ``bigram_prior``) exactly, and learning moves weights multiplicatively away from it.
* ``relu``: the paper's w = ReLU(linear(pooled)); stage 1 of training pulls it towards the prior.

Lucene receives ``boost = qtf · sat(w)`` (:func:`irglow.models.twbert.scorer.term_boosts`).  A model is a directory:
the BERT encoder and tokenizer (HF ``save_pretrained``), ``twbert_head.safetensors`` and
``twbert.json`` (the head and the scorer settings it was trained with).
"""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import torch
from torch import nn

from irglow.defaults import BM25_B, BM25_K1
from irglow.models.checkpoints import check_model_dir, load_encoder
from irglow.models.twbert.terms import QueryTerms
from irglow.settings import check_fields, setting
from irglow.utils.atomic import atomic_dir

log = logging.getLogger(__name__)


@dataclass
class TWBertConfig:
    base_model: str = setting("default", "the BERT checkpoint: default (the packaged all-MiniLM-L6-v2) or any HF model "
                              "path")
    max_query_tokens: int = setting(64, "word pieces of the query kept (a longer query is truncated, with a notice)",
                                    low=1)
    bigrams: bool = setting(True, "weigh bi-gram phrases beside uni-grams")
    k1: float = setting(BM25_K1, "BM25's k1 (the pipeline passes [lexical]'s k1 and b unless [twbert.model] sets its "
                        "own)", low=0)
    b: float = setting(BM25_B, "BM25's b", low=0, high=1)
    k3: float | None = setting(None, "Terrier-style query-term saturation (unset: Lucene's linear boost)", low=0)
    maxout_pieces: int = setting(3, "pieces of the paper's maxout score head", low=1)
    head: str = setting("residual", "residual: w = prior · exp(δ), starting at the fixed prior; relu: the paper's",
                        choices=("residual", "relu"))
    unigram_prior: float = setting(1.0, "the fixed prior's uni-gram weight (bm25-ngram: 1, BM25 itself)", low=0)
    bigram_prior: float = setting(0.2, "the fixed prior's bi-gram phrase weight (chosen on SciFact's validation split)",
                                  low=0)
    max_log_delta: float = setting(4.0, "the residual head's bound on |log(w / prior)| (tanh), keeping Lucene's boosts "
                                   "sane", above=0)

    def __post_init__(self):
        check_fields(self, "twbert.model")

    def priors(self, terms: QueryTerms) -> list[float]:
        return [self.bigram_prior if bi else self.unigram_prior for bi in terms.is_bigram()]


class TWBert(nn.Module):
    def __init__(self, encoder, tokenizer, config: TWBertConfig):
        super().__init__()
        self.encoder, self.tokenizer, self.config = encoder, tokenizer, config
        hidden = encoder.config.hidden_size
        self.term_head = nn.Linear(hidden, 1)
        if config.head == "residual":
            nn.init.zeros_(self.term_head.weight)
            nn.init.zeros_(self.term_head.bias)
        # maxout over L affine pieces maps the scaled BM25 score to a relevance prediction
        self.maxout_a = nn.Parameter(torch.linspace(0.5, 1.5, config.maxout_pieces))
        self.maxout_c = nn.Parameter(torch.linspace(-0.1, 0.1, config.maxout_pieces))

    # -- construction and persistence ----------------------------------------------------------
    @classmethod
    def from_pretrained_bert(cls, config: TWBertConfig | None = None) -> "TWBert":
        config = config or TWBertConfig()
        encoder, tokenizer = load_encoder(config.base_model)
        return cls(encoder, tokenizer, config)

    @classmethod
    def load(cls, path: str | Path, map_location: str | torch.device = "cpu") -> "TWBert":
        from safetensors.torch import load_file

        path = check_model_dir(path, ("twbert.json", "twbert_head.safetensors", "config.json"))
        try:
            saved = json.loads((path / "twbert.json").read_text())
            saved.setdefault("head", "relu")  # models saved before the residual head existed
            config = TWBertConfig(**saved)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{path}/twbert.json is corrupt: {e}") from None
        encoder, tokenizer = load_encoder(str(path))
        model = cls(encoder, tokenizer, config)
        try:
            head = load_file(str(path / "twbert_head.safetensors"), device=str(map_location))
        except Exception as e:  # safetensors raises its own error types
            raise ValueError(f"{path}/twbert_head.safetensors is corrupt: {e}") from None
        model.load_state_dict(head, strict=False)
        return model

    def head_state(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items() if not k.startswith("encoder.")}

    def save(self, path: str | Path) -> Path:
        """Write the model directory atomically (temp dir, then rename)."""
        from safetensors.torch import save_file

        with atomic_dir(path) as tmp:
            self.encoder.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            save_file(self.head_state(), str(tmp / "twbert_head.safetensors"))
            (tmp / "twbert.json").write_text(json.dumps(asdict(self.config), indent=2))
        return Path(path)

    # -- input encoding ------------------------------------------------------------------------------
    def fit_budget(self, terms: QueryTerms, cut: list | None = None) -> QueryTerms:
        """Drop trailing terms (bi-grams first) until the input fits ``max_query_tokens``; say so — per query,
        or, with ``cut`` (a list collecting ``(query id, kept, total)``), once for a whole batch of queries
        through :func:`report_budget`."""
        cost = [len(self.tokenizer.tokenize(s)) for s in terms.surfaces()]
        budget = self.config.max_query_tokens - 3
        n_uni = len(terms.unigrams)
        keep_uni, keep_bi, used = 0, 0, 0
        for i in range(n_uni):
            if used + cost[i] > budget:
                break
            used, keep_uni = used + cost[i], keep_uni + 1
        if keep_uni == n_uni:
            for j in range(len(terms.bigrams)):
                if used + cost[n_uni + j] > budget:
                    break
                used, keep_bi = used + cost[n_uni + j], keep_bi + 1
        dropped = terms.n_terms - keep_uni - keep_bi
        if not dropped:
            return terms
        if cut is not None:
            cut.append((terms.query_id, keep_uni + keep_bi, terms.n_terms))
        else:
            log.warning("query %s is longer than %d tokens: kept %d of %d terms", terms.query_id,
                        self.config.max_query_tokens, keep_uni + keep_bi, terms.n_terms)
        return terms.head(keep_uni, keep_bi)

    def fit_budgets(self, terms: Sequence[QueryTerms], what: str) -> list[QueryTerms]:
        """:meth:`fit_budget` for many queries, with one summary line (not one per query)."""
        dropped: list = []
        out = [self.fit_budget(t, dropped) for t in terms]
        report_budget(dropped, what, self.config.max_query_tokens)
        return out

    def encode(self, batch: list[QueryTerms]) -> dict[str, torch.Tensor]:
        """Token ids, attention mask and the term mask [B, M, T] (rows sum to 1 over a term's pieces)."""
        words_a, words_b, owners_a, owners_b = [], [], [], []
        for qt in batch:
            wa, oa, wb, ob = [], [], [], []
            for i, s in enumerate(qt.unigram_surface):
                for w in s.split() or [s]:
                    wa.append(w)
                    oa.append(i)
            for j, s in enumerate(qt.bigram_surface):
                for w in s.split() or [s]:
                    wb.append(w)
                    ob.append(len(qt.unigrams) + j)
            words_a.append(wa or [""])
            owners_a.append(oa)
            words_b.append(wb)
            owners_b.append(ob)
        has_b = any(words_b)
        enc = self.tokenizer(words_a, [w or [""] for w in words_b] if has_b else None, is_split_into_words=True,
                             padding=True, truncation=True, max_length=self.config.max_query_tokens,
                             return_tensors="pt")
        n_terms = max(1, max(qt.n_terms for qt in batch))
        mask = torch.zeros(len(batch), n_terms, enc["input_ids"].shape[1])
        for i in range(len(batch)):
            seq, word = enc.sequence_ids(i), enc.word_ids(i)
            for t, (s, w) in enumerate(zip(seq, word)):
                if w is None:
                    continue
                owners = owners_a[i] if s == 0 else owners_b[i]
                if w < len(owners):
                    mask[i, owners[w], t] = 1.0
        mask = mask / mask.sum(-1, keepdim=True).clamp(min=1.0)
        prior = torch.zeros(len(batch), n_terms)
        for i, qt in enumerate(batch):
            prior[i, : qt.n_terms] = torch.tensor(self.config.priors(qt))
        out = {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        out["term_mask"] = mask
        out["prior"] = prior
        return out

    # -- forward -----------------------------------------------------------------------------------------
    def forward(self, input_ids, attention_mask, term_mask, prior=None, token_type_ids=None) -> torch.Tensor:
        """Term weights [B, M] (≥ 0); padding terms get whatever their zero embedding gives — mask them."""
        kwargs = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        pooled = torch.bmm(term_mask.to(hidden.dtype), hidden)  # mean of each term's pieces
        raw = self.term_head(pooled).squeeze(-1).float()
        if self.config.head == "relu":
            return torch.relu(raw)
        if prior is None:
            raise ValueError("the residual head needs the terms' priors (TWBert.encode gives them)")
        c = self.config.max_log_delta
        return prior.to(raw.dtype) * torch.exp(c * torch.tanh(raw / c))

    def maxout(self, scaled_scores: torch.Tensor) -> torch.Tensor:
        return (scaled_scores.unsqueeze(-1) * self.maxout_a + self.maxout_c).max(-1).values

    @torch.no_grad()
    def predict(self, batch: list[QueryTerms], device: torch.device | str = "cpu") -> list[list[float]]:
        self.eval()
        enc = {k: v.to(device) for k, v in self.encode(batch).items()}
        weights = self(**enc).float().cpu()
        return [weights[i, : qt.n_terms].tolist() for i, qt in enumerate(batch)]


# the innermost open budget_summary block's reports, gathered for one line at its end (None: none open)
_COLLECTING: ContextVar[list | None] = ContextVar("twbert_budget_reports", default=None)


def report_budget(dropped: list, what: str, max_tokens: int) -> None:
    """One warning for every query a batch cut to the token budget: how many, and how many terms went —
    or, inside :func:`budget_summary`, kept for that block's one line."""
    if not dropped:
        return
    lost = sum(total - kept for _, kept, total in dropped)
    reports = _COLLECTING.get()
    if reports is not None:
        reports.append((what, len(dropped), lost, max_tokens, dropped[0][0]))
        return
    log.warning("%s: %d quer%s longer than %d tokens (e.g. %s): %d terms dropped, bi-grams first", what,
                len(dropped), "y is" if len(dropped) == 1 else "ies are", max_tokens, dropped[0][0], lost)


@contextmanager
def budget_summary(stage: str):
    """Every over-long-query report made in the block (training features, test weights, feedback terms …)
    as one warning line at its end: a pipeline stage says it once, not once per query set."""
    reports: list = []
    token = _COLLECTING.set(reports)
    try:
        yield
    finally:
        _COLLECTING.reset(token)
        if reports:
            parts = ", ".join(f"{what} {n}" for what, n, _, _, _ in reports)
            log.warning("%s: queries longer than %d tokens were cut, bi-grams first (%s; %d terms dropped in all, "
                        "e.g. query %s)", stage, reports[0][3], parts, sum(r[2] for r in reports), reports[0][4])
