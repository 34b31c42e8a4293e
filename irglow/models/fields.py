"""Documents as a BERT model reads them: per-field word lists and per-field WordPiece budgets.

Shared by GLOW/BISON (``[CLS] f1 [SEP] f2 [SEP] …``) and monoBERT (``[CLS] q [SEP] f1 [SEP] f2 [SEP] …``),
so both cut a long body the same way and split URLs into their parts the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

from irglow.defaults import DEVICE
from irglow.models.glow.weights import split_words

if TYPE_CHECKING:
    from irglow.data.records import Document


# `"auto"` as a field's budget: what the hardware that trains and encodes can afford.  On a GPU 256 WordPieces
# of a long field (SciFact: GLOW 0.6808 nDCG@10 at 256 against 0.6528 at 96, BENCHMARKS.md) cost seconds; on 2 CPU
# cores they cost 2.8x the training time (2,817 s against ~1,000 s), so CPU keeps 96.
AUTO_TOKENS = {"cuda": 256, "cpu": 96}


def resolve_auto_budgets(model: dict, device: str = DEVICE) -> tuple[dict, dict | None]:
    """``model`` settings with every ``"auto"`` budget (``field_max_tokens`` values, ``default_field_tokens``) made
    a number for the device that will run it: ``(settings, what was chosen)`` — ``None`` when nothing was
    ``"auto"`` (torch is not even imported then)."""
    budgets = dict(model.get("field_max_tokens", {}))
    auto = [f for f, v in budgets.items() if v == "auto"] + (["(default)"] if model.get("default_field_tokens")
                                                             == "auto" else [])
    if not auto:
        return model, None
    if device in (None, "auto"):
        import torch

        kind = "cuda" if torch.cuda.is_available() else "cpu"
    else:
        kind = "cuda" if str(device).startswith("cuda") else "cpu"
    tokens = AUTO_TOKENS[kind]
    model = {**model, "field_max_tokens": {f: tokens if v == "auto" else v for f, v in budgets.items()}}
    if model.get("default_field_tokens") == "auto":
        model["default_field_tokens"] = tokens
    return model, {"fields": auto, "tokens": tokens, "device": kind,
                   "rule": "auto: " + ", ".join(f"{n} on {'a GPU' if k == 'cuda' else 'CPU'}" for k, n in AUTO_TOKENS.items())}


def field_budgets(fields: Sequence[str], field_max_tokens: Mapping[str, int], default_tokens: int) -> dict[str, int]:
    """WordPieces each field may use (a field not named in ``field_max_tokens`` gets ``default_tokens``)."""
    return {f: int(field_max_tokens.get(f, default_tokens)) for f in fields}


def field_words(doc: "Document", fields: Sequence[str], url_fields: Sequence[str] = ()) -> dict[str, list[str]]:
    """Every instance of each field, in order, as words (a missing field is an empty list)."""
    return {f: [w for inst in doc.fields.get(f, ()) for w in split_words(inst, f in url_fields)] for f in fields}


def field_pieces(tokenizer, words_by_field: Mapping[str, list[str]],
                 budgets: Mapping[str, int]) -> dict[str, tuple[list[int], list[int | None]]]:
    """Per field: the first ``budget`` WordPiece ids and, for each, the index of the word it came from.  Only the
    first ``budget`` words are tokenized (a word gives at least one piece): a 1,000-word body kept to 96 pieces is
    not tokenized whole; where those words give fewer pieces (words the tokenizer drops), the whole field is."""
    out = {}
    for f, words in words_by_field.items():
        if not words:
            out[f] = ([], [])
            continue
        budget = max(1, budgets[f])
        enc = tokenizer(words[:budget], is_split_into_words=True, add_special_tokens=False, truncation=True,
                        max_length=budget)
        if len(enc["input_ids"]) < budget and len(words) > budget:
            enc = tokenizer(words, is_split_into_words=True, add_special_tokens=False, truncation=True,
                            max_length=budget)
        out[f] = (enc["input_ids"], enc.word_ids())
    return out
