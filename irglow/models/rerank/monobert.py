"""monoBERT (Nogueira & Cho, 2019): ``[CLS] query [SEP] f1 [SEP] f2 [SEP] …`` through BERT, a linear head
on the last-layer [CLS] gives the relevance score.

Query tokens carry segment 0 and document tokens segment 1, as in BERT's sentence-pair pre-training;
each field is cut to its own WordPiece budget (``irglow.models.fields``, the same assembly GLOW uses),
so a long body cannot push the title out.  A model is a directory: HF BERT weights and tokenizer,
``monobert.json`` (this config) and ``head.safetensors``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import torch
from torch import nn

from irglow.config import check_settings, check_values
from irglow.models.checkpoints import check_model_dir, load_encoder
from irglow.models.fields import field_budgets, field_pieces, field_words
from irglow.models.glow.weights import split_words
from irglow.settings import setting
from irglow.models.rerank.kinds import write_kind
from irglow.utils.atomic import atomic_dir

if TYPE_CHECKING:
    from irglow.data.records import Document


@dataclass
class MonoBERTConfig:
    base_model: str = setting("default", "the BERT checkpoint: default (the packaged all-MiniLM-L6-v2) or any HF model "
                              "path")
    fields: list[str] = setting(factory=lambda: ["title", "text"], doc="the document fields read, in this order")
    url_fields: list[str] = setting(factory=lambda: ["url"], doc="fields read as URLs (split into words)")
    field_max_tokens: dict[str, int] = setting(factory=dict, doc="word pieces kept per field: {title = 32, text = 256}")
    default_field_tokens: int = setting(128, "word pieces kept of a field not in field_max_tokens", low=1)
    query_max_tokens: int = setting(32, "word pieces kept of a query", low=1)
    dropout: float = setting(0.1, "dropout of the classification head", low=0, high=1)

    @classmethod
    def from_dict(cls, d: dict) -> "MonoBERTConfig":
        check_settings(d, cls.__dataclass_fields__, "[rerank.monobert.model]")
        return check_values(cls(**d), "monobert.model")


class MonoBERT(nn.Module):
    kind = "monobert"

    def __init__(self, bert, tokenizer, config: MonoBERTConfig):
        super().__init__()
        self.bert, self.tokenizer, self.config = bert, tokenizer, config
        self.dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(bert.config.hidden_size, 1)
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)

    @classmethod
    def from_pretrained_bert(cls, config: MonoBERTConfig) -> "MonoBERT":
        bert, tokenizer = load_encoder(config.base_model)
        return cls(bert, tokenizer, config)

    @classmethod
    def for_training(cls, config: MonoBERTConfig) -> "MonoBERT":
        """The model a training starts from: the pretrained encoder, the head initialised."""
        return cls.from_pretrained_bert(config)

    @classmethod
    def load(cls, path: str | Path) -> "MonoBERT":
        from safetensors.torch import load_file

        path = check_model_dir(path, ("monobert.json", "config.json", "head.safetensors"))
        config = MonoBERTConfig.from_dict(json.loads((path / "monobert.json").read_text()))
        bert, tokenizer = load_encoder(str(path))
        model = cls(bert, tokenizer, config)
        model.head.load_state_dict(load_file(str(path / "head.safetensors")))
        return model

    def save(self, path: str | Path) -> Path:
        from safetensors.torch import save_file

        with atomic_dir(path) as tmp:
            self.bert.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            save_file({k: v.detach().cpu().contiguous() for k, v in self.head.state_dict().items()},
                      str(tmp / "head.safetensors"))
            (tmp / "monobert.json").write_text(json.dumps(asdict(self.config), indent=2))
            write_kind(tmp, "monobert")  # loaded by it (irglow.models.rerank.kinds)
        return Path(path)

    def featurize(self, queries: Sequence[str], docs: Sequence["Document"]) -> dict[str, torch.Tensor]:
        """Pairs (queries[i], docs[i]) → padded ids, mask and segment ids."""
        c, tok = self.config, self.tokenizer
        budgets = field_budgets(c.fields, c.field_max_tokens, c.default_field_tokens)
        rows = []
        for q, doc in zip(queries, docs, strict=True):
            qp = field_pieces(tok, {"q": split_words(q)}, {"q": c.query_max_tokens})["q"][0]
            ids, types = [tok.cls_token_id] + qp + [tok.sep_token_id], [0] * (len(qp) + 2)
            pieces = field_pieces(tok, field_words(doc, c.fields, c.url_fields), budgets)
            for f in c.fields:
                ids += pieces[f][0] + [tok.sep_token_id]
                types += [1] * (len(pieces[f][0]) + 1)
            rows.append((ids, types))
        T = max(len(r[0]) for r in rows)
        pad = tok.pad_token_id
        return {"input_ids": torch.tensor([r[0] + [pad] * (T - len(r[0])) for r in rows]),
                "attention_mask": torch.tensor([[1] * len(r[0]) + [0] * (T - len(r[0])) for r in rows]),
                "token_type_ids": torch.tensor([r[1] + [0] * (T - len(r[1])) for r in rows])}

    def forward(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor:
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return self.head(self.dropout(out.last_hidden_state[:, 0])).squeeze(-1)

    def score(self, queries: Sequence[str], docs: Sequence["Document"]) -> torch.Tensor:
        """Relevance scores of the pairs (queries[i], docs[i]), on the model's device."""
        device = next(self.parameters()).device
        return self(**{k: v.to(device) for k, v in self.featurize(queries, docs).items()})
