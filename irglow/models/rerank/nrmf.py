"""NRM-F (Zamani, Mitra, Song, Craswell, Tiwary, WSDM 2018): neural ranking over multiple document fields.

Per field, every *instance* (a title; each of several anchor texts) goes through an instance encoder:
character tri-gram hashing of each word (``#word#`` → ``#wo``, ``wor``, ``ord``, ``rd#``), a tri-gram
embedding summed per word, a 1-D convolution over the word sequence, max-pooling over positions and a
dense layer.  A field's vector is the average over its *present* instances (masking: a missing instance
contributes nothing; a missing field is all-masked and gives the zero vector).  During training each
field is dropped whole with its own probability (field-level dropout), so the model cannot lean on
one field.  The query gets one representation per field (or one shared, ``query_per_field = false``);
query and field vectors are matched by a Hadamard product, the products of all fields concatenated
and scored by a hidden layer.

Deviations from the paper, written down: the tri-gram vocabulary is hashed into ``hash_buckets`` with
CRC-32 instead of a tri-gram dictionary (no vocabulary file to ship, same for every collection); the
tri-gram embedding table is shared by all encoders (the encoders' convolution and dense layers are
per field); the paper's sizes were tuned on a web search log of hundreds of millions of queries, the
defaults here (``dim`` 256, 256 filters, window 3, dropout 0.2) fit a collection of a few thousand
training queries on a CPU.  Field-level dropout is implemented (``field_dropout`` per field,
``default_field_dropout``) but off by default: with two fields and ~800 training queries it lowered
validation nDCG@10 (SciFact: 0.4428 at 0.1 against 0.4718 without) — dropping the body of a
claim-to-abstract pair removes most of what the pair has to match; the paper's setting had five
fields, anchors and clicks that overlap.
"""

from __future__ import annotations

import functools
import json
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import torch
from torch import nn

from irglow.config import check_settings, check_values
from irglow.models.checkpoints import check_model_dir
from irglow.models.glow.weights import split_words
from irglow.settings import setting
from irglow.models.rerank.kinds import write_kind
from irglow.utils.atomic import atomic_dir

if TYPE_CHECKING:
    from irglow.data.records import Document


@dataclass
class NRMFConfig:
    fields: list[str] = setting(factory=lambda: ["title", "text"], doc="the document fields read, each with its own "
                                "encoder")
    url_fields: list[str] = setting(factory=lambda: ["url"], doc="fields read as URLs (split into words)")
    field_max_words: dict[str, int] = setting(factory=dict, doc="words kept per field: {title = 20, text = 200}")
    default_field_words: int = setting(100, "words kept of a field not in field_max_words", low=1)
    max_instances: int = setting(5, "instances kept per field (a multi-instance field such as anchors)", low=1)
    query_max_words: int = setting(20, "words kept of a query", low=1)
    hash_buckets: int = setting(50_000, "buckets of the letter-trigram hashing", low=1)
    max_trigrams: int = setting(16, "letter trigrams per word (a 14-letter word); longer words keep their first ones",
                                low=1)
    embedding_dim: int = setting(256, "trigram embedding size", low=1)
    filters: int = setting(256, "convolution filters", low=1)
    window: int = setting(3, "convolution window, in words", low=1)
    dim: int = setting(256, "field and query representation size", low=1)
    hidden: int = setting(256, "the scoring network's hidden size", low=1)
    dropout: float = setting(0.2, "dropout", low=0, high=1)
    field_dropout: dict[str, float] = setting(factory=dict, doc="per-field dropout of whole fields in training: {title "
                                              "= 0.1}")
    default_field_dropout: float = setting(0.0, "whole-field dropout of a field not in field_dropout", low=0, high=1)
    query_per_field: bool = setting(True, "a query representation per field (the paper's), not one shared")
    mask_instances: bool = setting(True, "mask empty instances out of the aggregation")

    @classmethod
    def from_dict(cls, d: dict) -> "NRMFConfig":
        check_settings(d, cls.__dataclass_fields__, "[rerank.nrmf.model]")
        return check_values(cls(**d), "nrmf.model")


def trigrams(word: str) -> list[str]:
    """Character tri-grams of ``#word#`` (lower-cased): ``good`` → ``#go goo ood od#``."""
    w = f"#{word.lower()}#"
    return [w[i:i + 3] for i in range(len(w) - 2)]


@functools.lru_cache(maxsize=1 << 18)
def trigram_ids(word: str, buckets: int, limit: int) -> list[int]:
    """Hashed tri-gram ids in 1..buckets-1 (0 is padding): 1 + CRC-32(tri-gram, UTF-8) mod (buckets − 1)."""
    return [1 + zlib.crc32(t.encode("utf-8")) % (buckets - 1) for t in trigrams(word)[:limit]]


class InstanceEncoder(nn.Module):
    """Words (as summed tri-gram embeddings) → convolution → max over positions → dense."""

    def __init__(self, c: NRMFConfig):
        super().__init__()
        self.conv = nn.Conv1d(c.embedding_dim, c.filters, c.window, padding=c.window // 2)
        self.dense = nn.Linear(c.filters, c.dim)

    def forward(self, words: torch.Tensor, word_mask: torch.Tensor) -> torch.Tensor:
        """words [N, W, E] (summed tri-gram embeddings), word_mask [N, W] → [N, dim]."""
        h = torch.relu(self.conv(words.transpose(1, 2))).transpose(1, 2)  # [N, W, F]
        h = h.masked_fill(~word_mask.bool().unsqueeze(-1), float("-inf")).amax(1)
        h = torch.nan_to_num(h, neginf=0.0)  # an instance without words
        return torch.relu(self.dense(h))


class NRMF(nn.Module):
    kind = "nrmf"

    def __init__(self, config: NRMFConfig):
        super().__init__()
        c = self.config = config
        self.trigram = nn.Embedding(c.hash_buckets, c.embedding_dim, padding_idx=0)
        self.doc_encoders = nn.ModuleDict({self._key(f): InstanceEncoder(c) for f in c.fields})
        q_names = c.fields if c.query_per_field else ["query"]
        self.query_encoders = nn.ModuleDict({self._key(f): InstanceEncoder(c) for f in q_names})
        self.drop = nn.Dropout(c.dropout)
        self.hidden = nn.Linear(c.dim * len(c.fields), c.hidden)
        self.out = nn.Linear(c.hidden, 1)

    @classmethod
    def for_training(cls, config: NRMFConfig) -> "NRMF":
        """The model a training starts from: every weight initialised (NRM-F has no pretrained part)."""
        return cls(config)

    @staticmethod
    def _key(name: str) -> str:
        return "f_" + "".join(ch if ch.isalnum() else "_" for ch in name)

    @classmethod
    def load(cls, path: str | Path) -> "NRMF":
        from safetensors.torch import load_file

        path = check_model_dir(path, ("nrmf.json", "model.safetensors"))
        model = cls(NRMFConfig.from_dict(json.loads((path / "nrmf.json").read_text())))
        model.load_state_dict(load_file(str(path / "model.safetensors")))
        return model

    def save(self, path: str | Path) -> Path:
        from safetensors.torch import save_file

        with atomic_dir(path) as tmp:
            save_file({k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()},
                      str(tmp / "model.safetensors"))
            (tmp / "nrmf.json").write_text(json.dumps(asdict(self.config), indent=2))
            write_kind(tmp, "nrmf")  # loaded by it (irglow.models.rerank.kinds)
        return Path(path)

    # --- text → tensors -------------------------------------------------------------------------
    def _words(self, words: list[str], limit: int) -> list[list[int]]:
        c = self.config
        return [trigram_ids(w, c.hash_buckets, c.max_trigrams) for w in words[:limit]]

    @staticmethod
    def _pad(items: list[list[list[list[int]]]]) -> tuple[torch.Tensor, torch.Tensor]:
        """[B][I][W][K] ragged → ids [B, I, W, K] (0-padded) and word mask [B, I, W]; one tensor copy."""
        I = max(1, max(len(x) for x in items))
        W = max([1] + [len(inst) for x in items for inst in x])
        K = max([1] + [len(w) for x in items for inst in x for w in inst])
        pad_word, pad_inst = [0] * K, [[0] * K] * W
        ids = [[[w + [0] * (K - len(w)) for w in inst] + [pad_word] * (W - len(inst)) for inst in x]
               + [pad_inst] * (I - len(x)) for x in items]
        mask = [[[True] * len(inst) + [False] * (W - len(inst)) for inst in x] + [[False] * W] * (I - len(x))
                for x in items]
        return torch.tensor(ids, dtype=torch.long), torch.tensor(mask, dtype=torch.bool)

    def featurize(self, queries: Sequence[str], docs: Sequence["Document"]) -> dict[str, torch.Tensor]:
        c = self.config
        batch = {}
        q = [[self._words(split_words(t), c.query_max_words)] for t in queries]
        batch["query_ids"], batch["query_mask"] = self._pad(q)
        for f in c.fields:
            limit = c.field_max_words.get(f, c.default_field_words)
            items = []
            for d in docs:
                instances = [self._words(split_words(t, f in c.url_fields), limit)
                             for t in d.fields.get(f, ())[: c.max_instances]]
                items.append([inst for inst in instances if inst])
            batch[f"{f}_ids"], batch[f"{f}_mask"] = self._pad(items)
        return batch

    # --- scoring ----------------------------------------------------------------------------------
    def _encode(self, encoder: InstanceEncoder, ids: torch.Tensor, word_mask: torch.Tensor,
                instance_mask: torch.Tensor) -> torch.Tensor:
        """ids [B, I, W, K] → the field vector [B, dim]: the mean over present instances (masking on), or
        over every instance slot, missing ones included (masking off: the paper's ablation)."""
        B, I, W, K = ids.shape
        words = self.trigram(ids).sum(3).view(B * I, W, -1)
        wm = word_mask.view(B * I, W)
        if not self.config.mask_instances:
            wm = torch.ones_like(wm)  # padding is encoded like text: missing instances get a vector
        v = encoder(words, wm).view(B, I, -1)
        m = instance_mask.to(v.dtype) if self.config.mask_instances else torch.ones(B, I, device=v.device)
        return masked_mean(v, m)

    def forward(self, **batch: torch.Tensor) -> torch.Tensor:
        c = self.config
        q_mask = batch["query_mask"].any(-1)
        queries = {}
        for name, enc in self.query_encoders.items():
            queries[name] = self._encode(enc, batch["query_ids"], batch["query_mask"], q_mask)
        matched = []
        for f in c.fields:
            ids, wm = batch[f"{f}_ids"], batch[f"{f}_mask"]
            inst = wm.any(-1)  # [B, I]: an instance is present when it has a word
            d = self._encode(self.doc_encoders[self._key(f)], ids, wm, inst)
            p = c.field_dropout.get(f, c.default_field_dropout)
            if self.training and p > 0:  # field-level dropout: the whole field's vector, training only
                d = d * (torch.rand(d.shape[0], 1, device=d.device) >= p).to(d.dtype)
            q = queries[self._key(f) if c.query_per_field else "f_query"]
            matched.append(q * d)
        h = self.drop(torch.relu(self.hidden(torch.cat(matched, -1))))
        return self.out(h).squeeze(-1)

    def score(self, queries: Sequence[str], docs: Sequence["Document"]) -> torch.Tensor:
        device = next(self.parameters()).device
        return self(**{k: v.to(device) for k, v in self.featurize(queries, docs).items()})


def masked_mean(vectors: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """vectors [B, I, D], mask [B, I] → Σ m·v / max(1, Σ m): all-masked rows give the zero vector."""
    m = mask.unsqueeze(-1)
    return (vectors * m).sum(1) / m.sum(1).clamp(min=1.0)
