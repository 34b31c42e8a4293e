"""Documents as a BERT model reads them: per-field word lists and per-field WordPiece budgets.

Shared by GLOW/BISON (``[CLS] f1 [SEP] f2 [SEP] …``) and monoBERT (``[CLS] q [SEP] f1 [SEP] f2 [SEP] …``),
so both cut a long body the same way and split URLs into their parts the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

from irglow.models.glow.weights import split_words

if TYPE_CHECKING:
    from irglow.data.records import Document


def field_budgets(fields: Sequence[str], field_max_tokens: Mapping[str, int], default_tokens: int) -> dict[str, int]:
    """WordPieces each field may use (a field not named in ``field_max_tokens`` gets ``default_tokens``)."""
    return {f: int(field_max_tokens.get(f, default_tokens)) for f in fields}


def field_words(doc: "Document", fields: Sequence[str], url_fields: Sequence[str] = ()) -> dict[str, list[str]]:
    """Every instance of each field, in order, as words (a missing field is an empty list)."""
    return {f: [w for inst in doc.fields.get(f, ()) for w in split_words(inst, f in url_fields)] for f in fields}


def field_pieces(tokenizer, words_by_field: Mapping[str, list[str]],
                 budgets: Mapping[str, int]) -> dict[str, tuple[list[int], list[int | None]]]:
    """Per field: the first ``budget`` WordPiece ids and, for each, the index of the word it came from."""
    out = {}
    for f, words in words_by_field.items():
        if not words:
            out[f] = ([], [])
            continue
        enc = tokenizer(words, is_split_into_words=True, add_special_tokens=False, truncation=True,
                        max_length=max(1, budgets[f]))
        out[f] = (enc["input_ids"], enc.word_ids())
    return out
