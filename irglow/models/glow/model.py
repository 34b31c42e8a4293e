"""GLOW / BISON encoders: BERT's first L layers, field embeddings, BM25-weighted self-attention.

Documents are one sequence ``[CLS] f1 [SEP] f2 [SEP] …`` with a token budget per field, each
field's tokens (and its [SEP]) carrying the field's id in the token-type embedding, which is
extended to the number of fields and initialised from segment 0.  Every WordPiece of a word
carries that word's weight (fast-tokenizer word ids).  Queries use field id 0.

Variants (the papers' Table 3, one code path):
``bert`` no weights · ``glow`` word-level BM25/BM25F · ``glow-idf`` idf only · ``glow-tw`` token-level
BM25 (no whole-word sharing) · ``glow-us`` all tokens one field id · ``glow-wt`` weights from a small
trainable MLP over (BM25 weight, idf, stopword flag).

A model is a directory: HF BERT weights + tokenizer, ``glow.json`` and ``glow_extra.safetensors``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Sequence

import torch
from torch import nn

from irglow.index.lucene_index import LuceneIndex
from irglow.index.stats import CollectionStats
from irglow.models.checkpoints import check_model_dir, load_encoder
from irglow.models.fields import field_budgets, field_pieces, field_words
from irglow.models.glow import VARIANTS, attention  # noqa: F401 (VARIANTS re-exported)
from irglow.models.glow.attention import MODES as ATTENTION_MODES
from irglow.models.glow.features import DocumentFeatures
from irglow.models.glow.features import available as features_available
from irglow.models.glow.weights import WeightConfig, WordWeighter, split_words
from irglow.settings import check_fields, setting
from irglow.utils.atomic import atomic_dir

if TYPE_CHECKING:
    from irglow.data.records import Document

log = logging.getLogger(__name__)



@dataclass
class GlowConfig:
    base_model: str = setting("default", "the BERT checkpoint: default (the packaged all-MiniLM-L6-v2) or any HF model "
                              "path")
    # None: the checkpoint's whole depth.  The papers' 3 layers (configs/glow-paper.toml) suit a model
    # pre-trained for it on MS MARCO; cutting a small pretrained encoder in half to fine-tune on a few
    # thousand queries throws away what it knows (SciFact: 0.44 nDCG@10 at 3 layers, 0.64 at 6).
    num_layers: int | None = setting(None, "transformer layers kept (unset: the checkpoint's whole depth)", low=1)
    variant: str = setting("glow", "glow: BM25-weighted attention; bert: plain attention", choices=VARIANTS)
    attention: str = setting("key", "key (Eq. 2) | row (Eq. 4, the authors' code)", choices=ATTENTION_MODES)
    fields: list[str] = setting(factory=lambda: ["title", "body"], doc="the document fields encoded, each in its own "
                                "segment with a field embedding")
    url_fields: list[str] = setting(factory=lambda: ["url"], doc="fields read as URLs (split into words)")
    field_max_tokens: dict[str, int] = setting(factory=dict, doc="word pieces kept per field: {title = 32, text = 256}")
    default_field_tokens: int = setting(20, "word pieces kept of a field not in field_max_tokens", low=1)
    query_max_tokens: int = setting(32, "word pieces kept of a query", low=1)
    # "cls": last-layer [CLS] as in the papers; "mean": mean of last-layer tokens. The packaged MiniLM was
    # trained with mean pooling and its truncated [CLS] vectors are near-identical (cosine 0.9999 between any
    # two texts), from which a short training run learns nothing; "mean" is therefore the default here.
    pooling: str = setting("mean", "mean: mean of the last layer's tokens; cls: its [CLS] vector, as in the papers",
                           choices=("mean", "cls"))
    weights: dict = setting(factory=dict, doc="the word weighting's settings (irglow.models.glow.weights.WeightConfig "
                            "fields)")
    # token weights enter attention as w ** weight_alpha (1: the papers' form; 0: the plain checkpoint)
    weight_alpha: float = setting(1.0, "weights enter attention as w ** weight_alpha (1: the papers' form; 0: the "
                                  "plain checkpoint)", low=0)
    # a one-field model reads every field of the searched collection in its segment (:func:`read_fields`); the
    # GLOW stage sets it when the fields were not chosen and the training collection had one (NFCorpus)
    read_all_fields: bool = setting(False, "a one-field model reads every field of the searched collection in its "
                                    "segment")

    def __post_init__(self):
        check_fields(self, "glow.model")  # when the settings are bound, not at the first batch

    @property
    def weighted(self) -> bool:
        return self.variant != "bert"

    @property
    def num_fields(self) -> int:
        return max(2, len(self.fields))

    def weight_config(self) -> WeightConfig:
        return WeightConfig(**self.weights)


class GlowEncoder(nn.Module):
    def __init__(self, bert, tokenizer, config: GlowConfig):
        super().__init__()
        self.bert, self.tokenizer, self.config = bert, tokenizer, config
        self._extend_field_embeddings(config.num_fields)
        self.attn = attention.install(bert, config.attention if config.weighted else "none")
        self.weight_mlp = nn.Sequential(nn.Linear(3, 16), nn.GELU(), nn.Linear(16, 1)) if config.variant == "glow-wt" else None
        self.alpha = config.weight_alpha  # the trainer ramps it; a saved model carries config.weight_alpha

    def _extend_field_embeddings(self, n: int) -> None:
        emb = self.bert.embeddings.token_type_embeddings
        if emb.num_embeddings >= n:
            return
        new = nn.Embedding(n, emb.embedding_dim)
        with torch.no_grad():
            new.weight[:] = emb.weight[0]  # every field starts as segment 0
            new.weight[: emb.num_embeddings] = emb.weight
        self.bert.embeddings.token_type_embeddings = new
        self.bert.config.type_vocab_size = n

    def with_token_budgets(self, field_max_tokens: dict[str, int], default_field_tokens: int | None = None
                           ) -> "GlowEncoder":
        """Encode documents with other field budgets than the model was trained with (a model trained at 96
        tokens of text on a CPU, searched at 256 like its checkpoint).  Refuses budgets past the position
        embeddings: the model would index positions it has no vector for."""
        import dataclasses

        config = dataclasses.replace(
            self.config, field_max_tokens={**self.config.field_max_tokens, **field_max_tokens},
            default_field_tokens=self.config.default_field_tokens if default_field_tokens is None
            else default_field_tokens)
        budgets = field_budgets(config.fields, config.field_max_tokens, config.default_field_tokens)
        length, limit = 1 + sum(b + 1 for b in budgets.values()), self.bert.config.max_position_embeddings
        if length > limit or min(budgets.values(), default=1) < 1:
            raise ValueError(f"field budgets {budgets} make documents of {length} tokens; this model takes 1 to "
                             f"{limit} (its position embeddings), [CLS] and one [SEP] per field included")
        self.config = config
        return self

    @classmethod
    def from_pretrained_bert(cls, config: GlowConfig) -> "GlowEncoder":
        bert, tokenizer = load_encoder(config.base_model, num_layers=config.num_layers)
        return cls(bert, tokenizer, config)

    @classmethod
    def load(cls, path: str | Path) -> "GlowEncoder":
        from safetensors.torch import load_file

        path = check_model_dir(path, ("glow.json", "config.json"))
        config = GlowConfig(**json.loads((path / "glow.json").read_text()))
        bert, tokenizer = load_encoder(str(path))
        model = cls(bert, tokenizer, config)
        extra = path / "glow_extra.safetensors"
        if extra.exists():
            model.load_state_dict(load_file(str(extra)), strict=False)
        return model

    def save(self, path: str | Path) -> Path:
        from safetensors.torch import save_file

        with atomic_dir(path) as tmp:
            self.bert.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            extra = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items() if not k.startswith("bert.")}
            if extra:
                save_file(extra, str(tmp / "glow_extra.safetensors"))
            (tmp / "glow.json").write_text(json.dumps(asdict(self.config), indent=2))
        return Path(path)

    def forward(self, input_ids, attention_mask, token_type_ids, token_weights=None, weight_features=None):
        """Pooled last-layer vectors [B, H] ([CLS] or the mean over real tokens, per ``config.pooling``)."""
        if self.weight_mlp is not None and weight_features is not None:
            token_weights = nn.functional.softplus(self.weight_mlp(weight_features).squeeze(-1))
            token_weights = torch.where(attention_mask.bool(), token_weights, torch.ones_like(token_weights))
        if token_weights is not None and self.alpha != 1.0:
            token_weights = token_weights.clamp_min(1e-6) ** self.alpha
        for a in self.attn:
            a.token_weights = token_weights if self.config.weighted else None
        try:
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        finally:
            for a in self.attn:
                a.token_weights = None
        hidden = out.last_hidden_state
        if self.config.pooling == "cls":
            return hidden[:, 0]
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)


class Featurizer:
    """Text → token ids, field ids and per-token weights (and MLP features), one batch at a time."""

    def __init__(self, config: GlowConfig, tokenizer, weighter: WordWeighter | None,
                 read_fields: dict[str, list[str]] | None = None):
        self.config, self.tok, self.weighter = config, tokenizer, weighter
        # the document fields each of the model's fields reads (default: itself; see :func:`read_fields`)
        self.read_fields = read_fields or {f: [f] for f in config.fields}
        if config.weighted and weighter is None:
            raise ValueError(f"variant {config.variant!r} needs collection statistics (a WordWeighter)")
        self.mode = "idf" if config.variant == "glow-idf" else "bm25"
        self._arrays = None  # the batch featurizer, made at the first batch of documents
        self.recipe: FeaturizerRecipe | None = None  # how a worker process builds the same (featurizer_for sets it)

    # word lists → (pieces, per-piece raw weights, per-piece idf, per-piece stop flag)
    def _pieces(self, words_by_field: dict[str, list[str]], budgets: dict[str, int], is_query: bool):
        out = field_pieces(self.tok, words_by_field, budgets)
        feats = {f: None for f in words_by_field}
        if self.weighter is not None:
            w = self.weighter
            if self.config.variant == "glow-tw":
                # token-level: every WordPiece of the *whole* field is its own unit (tf counted over all
                # of them), lengths stay in words — the same statistics as ``glow``, only no sharing
                units = {f: [p.removeprefix("##") for p in self.tok.convert_ids_to_tokens(
                    self.tok(ws, is_split_into_words=True, add_special_tokens=False)["input_ids"])] if ws else []
                    for f, ws in words_by_field.items()}
                lengths = {f: w.content_length(ws) for f, ws in words_by_field.items()}
                index_of = {f: list(range(len(ids))) for f, (ids, _) in out.items()}
            else:
                units, lengths = words_by_field, None
                index_of = {f: wids for f, (_, wids) in out.items()}
            if is_query:
                raw = {f: w.query_words(u, self.mode, None if lengths is None else lengths[f])
                       for f, u in units.items()}
            else:
                raw = w.document_words(units, self.mode, lengths)
            for f in words_by_field:  # the idf of the units kept (a body's first pieces), not of every word
                u = units[f]
                feats[f] = [(raw[f][j], w.idf(t) if (t := w.mapper(u[j])) else None) for j in index_of[f]]
        return out, feats

    def _assemble(self, segments: list[tuple[int, list[int], list | None]], max_len: int):
        """segments: (field id, piece ids, per-piece (raw, idf)). → ids, types, raw list."""
        tok = self.tok
        ids, types, raw = [tok.cls_token_id], [0], [None]
        for fid, pieces, feats in segments:
            ids += pieces + [tok.sep_token_id]
            types += [fid] * (len(pieces) + 1)
            raw += (feats or [(None, None)] * len(pieces)) + [None]
        return ids[:max_len], types[:max_len], raw[:max_len]

    def _batch(self, rows: list[tuple[list[int], list[int], list]]) -> dict[str, torch.Tensor]:
        """Pad rows into tensors; weights and MLP features are built as Python lists, converted once."""
        c, w = self.config, self.weighter
        T = max(len(r[0]) for r in rows)
        pad = self.tok.pad_token_id
        special = w.config.special_weight if w else 1.0
        ids, mask, types, weights, feats = [], [], [], [], []
        for row_ids, tt, raw in rows:
            n = len(row_ids)
            ids.append(row_ids + [pad] * (T - n))
            mask.append([1] * n + [0] * (T - n))
            types.append(([0] * n if c.variant == "glow-us" else tt) + [0] * (T - n))
            if w is None:
                continue
            content = [r for r in raw if r is not None]
            normed = iter(w.normalise([r[0] for r in content]))
            idf_normed = iter(w.normalise([r[1] for r in content]))
            row_w, row_f = [], []
            for r in raw:
                if r is None:
                    row_w.append(special)
                    row_f.append((special, 0.0, 0.0))
                else:
                    x = next(normed)
                    row_w.append(x)
                    row_f.append((x, next(idf_normed), float(r[0] is None)))
            weights.append(row_w + [1.0] * (T - n))
            feats.append(row_f + [(1.0, 0.0, 0.0)] * (T - n))
        out = {"input_ids": torch.tensor(ids, dtype=torch.long), "attention_mask": torch.tensor(mask, dtype=torch.long),
               "token_type_ids": torch.tensor(types, dtype=torch.long),
               "token_weights": torch.tensor(weights) if weights else torch.ones(len(rows), T)}
        if c.variant == "glow-wt":
            out["weight_features"] = torch.tensor(feats) if feats else torch.zeros(len(rows), T, 3)
        return out

    def queries(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        rows = []
        budget = self.config.query_max_tokens - 2
        for text in texts:
            pieces, feats = self._pieces({"q": split_words(text)}, {"q": budget}, is_query=True)
            rows.append(self._assemble([(0, pieces["q"][0], feats["q"])], self.config.query_max_tokens))
        return self._batch(rows)

    def documents(self, docs: Sequence["Document"]) -> dict[str, torch.Tensor]:
        """A batch of documents as the model's inputs: in one JNI call and arrays over the batch
        (:mod:`.features`), or word by word for ``glow-tw`` (WordPiece units) and where irglow's Java helper is not
        compiled (the same numbers, slower)."""
        if self._arrays is None:
            self._arrays = DocumentFeatures(self.config, self.tok, self.weighter, self.read_fields, self.mode) \
                if self.config.variant != "glow-tw" and features_available() else False
        if self._arrays:
            try:
                return self._arrays(docs)
            except UnicodeEncodeError:  # a lone surrogate, which UTF-8 cannot carry to Java: this batch word by word
                pass
        return self.documents_per_word(docs)

    def documents_per_word(self, docs: Sequence["Document"]) -> dict[str, torch.Tensor]:
        """The reference: each document's words weighted one by one (:class:`WordWeighter`), which the array path
        equals to the last bit (``tests/integration/test_glow_features.py``)."""
        c = self.config
        budgets = field_budgets(c.fields, c.field_max_tokens, c.default_field_tokens)
        max_len = 1 + sum(budgets[f] + 1 for f in c.fields)
        rows = []
        read = self.read_fields
        own = all(read[f] == [f] for f in c.fields)  # each field reads itself: no regrouping per document
        for doc in docs:
            words = field_words(doc, c.fields, c.url_fields) if own else {
                f: [w for source in read[f] for w in field_words(doc, [source], c.url_fields)[source]]
                for f in c.fields}
            pieces, feats = self._pieces(words, budgets, is_query=False)
            segments = [(fid, pieces[f][0], feats[f]) for fid, f in enumerate(c.fields)]
            rows.append(self._assemble(segments, max_len))
        return self._batch(rows)


def featurizer_for(model: GlowEncoder, index, stats) -> Featurizer:
    """Weights always come from the collection being *searched* (its N, df and field lengths), and so do the
    fields a one-field model reads when ``read_all_fields`` is on (:func:`read_fields`)."""
    weighter = WordWeighter(index, stats, model.config.weight_config()) if model.config.weighted else None
    feat = Featurizer(model.config, model.tokenizer, weighter, read_fields(model.config.fields, list(index.fields))
                      if model.config.read_all_fields else None)
    feat.recipe = FeaturizerRecipe(model.config, model.tokenizer, str(index.path))
    return feat


@dataclass(frozen=True)
class FeaturizerRecipe:
    """What a worker process needs to build the same document featurizer: the model's settings and tokenizer and
    the searched index's folder (reopened there, with its statistics; nothing of the JVM is pickled)."""

    config: GlowConfig
    tokenizer: Any
    index_path: str

    def __call__(self):
        index = LuceneIndex.open(self.index_path)
        return featurizer_for(SimpleNamespace(config=self.config, tokenizer=self.tokenizer), index,
                              CollectionStats.load(index)).documents


def read_fields(model_fields: list[str], searched_fields: list[str]) -> dict[str, list[str]]:
    """The searched collection's fields each model field reads.  A model trained on one field (a collection
    whose only non-empty field is its text: NFCorpus) is a plain text encoder: on a collection with more
    fields it reads all of them in its one segment, in the collection's order (title, then text), as its
    checkpoint and BEIR's dense baselines read ``title + text``; otherwise it would never see a title.  A
    fielded model reads each of its fields (one the collection lacks is an empty segment).  Only for a model
    whose ``read_all_fields`` is on: a field list a user chose is read as chosen."""
    if len(model_fields) == 1 and searched_fields and searched_fields != model_fields:
        log.info("a one-field GLOW model (%s) reads every field of the searched collection in its segment: %s",
                 model_fields[0], " + ".join(searched_fields))
        return {model_fields[0]: list(searched_fields)}
    return {f: [f] for f in model_fields}
