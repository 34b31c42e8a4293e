"""GLOW's document features a batch at a time: the same numbers as the per-word reference, without per-word Python.

:class:`~irglow.models.glow.weights.WordWeighter` states the weights word by word (its ``document_words`` and
:meth:`~irglow.models.glow.model.Featurizer.documents_per_word` are the reference).  Computed that way a 1,150-word
MS MARCO document costs thousands of Python calls (a term look-up and an idf per word) and a JNI call per word
never seen before, though the model reads only its first 96 body pieces.  Here a batch is featurized by:

* **one JNI call** (``irglow.WordStats``, compiled with irglow's bulk helper): Java splits every text as Python's
  regular expression does — with Python's own character classes, passed in as a table — analyzes each word
  alone (remembered), and returns only what the weights need: each field's first words, its content length, and
  for each word returned its term's df and frequency in every field of its document;
* **arrays** for the weights: BM25F's adjusted tf, idf (``math.log`` per distinct df, remembered) and the
  per-sequence normalisation, each operation the reference's in the reference's order, so the weights are equal
  to the last bit (``tests/integration/test_glow_features.py``);
* **WordPieces per distinct word, remembered**: a pre-split word's pieces do not depend on its neighbours, so a
  field's first ``budget`` pieces are its words' pieces laid end to end; only new words reach the tokenizer.

Where the helper is not compiled (a runtime without ``javac``) or for ``glow-tw`` (WordPiece units), the
featurizer takes the reference path: slower, not different.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from itertools import chain
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import torch
from tokenizers import Tokenizer

from irglow.index.jvm import autoclass, bulk_search_available, start_jvm
from irglow.models.fields import field_budgets
from irglow.models.glow.weights import WordWeighter

if TYPE_CHECKING:
    from irglow.data.records import Document

OTHER, ALNUM, UNDERSCORE, SPACE = 0, 1, 2, 3
MEMO_LIMIT = 1_000_000  # words remembered per process before the memos start again (flat memory on MS MARCO)


@functools.cache
def python_char_classes() -> bytes:
    """Every code point's class as Python's ``re`` sees it (``\\w`` less ``_``, ``_``, ``\\s``, other): the table
    Java splits words by, so that both split alike on the Unicode version of this Python."""
    table = bytearray(sys.maxunicode + 1)
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    for pattern, cls in ((r"\w+", ALNUM), (r"\s+", SPACE)):
        for m in re.finditer(pattern, every):
            table[m.start():m.end()] = bytes([cls]) * (m.end() - m.start())
    table[ord("_")] = UNDERSCORE
    return bytes(table)


def available() -> bool:
    """Whether the Java side is compiled (the bulk helper's classes); starts the JVM."""
    start_jvm()
    return bulk_search_available()


class DocumentFeatures:
    """Token ids, field ids, weights and the weight MLP's inputs for a batch of documents (see the module);
    ``config`` is the model's :class:`~irglow.models.glow.model.GlowConfig`."""

    def __init__(self, config: Any, tokenizer, weighter: WordWeighter | None,
                 read_fields: dict[str, list[str]], mode: str):
        self.config, self.tok, self.weighter, self.read, self.mode = config, tokenizer, weighter, read_fields, mode
        self.budgets = field_budgets(config.fields, config.field_max_tokens, config.default_field_tokens)
        self.max_len = 1 + sum(self.budgets[f] + 1 for f in config.fields)
        index = weighter.mapper.index if weighter is not None else None  # without weights: words only
        self.java = autoclass("irglow.WordStats")(index and index.analyzer, index and index.lucene_reader,
                                                  python_char_classes(), MEMO_LIMIT)
        self._pieces: dict[str, list[int]] = {}
        self._idf: dict[int, float] = {}
        self._tokenizer = _plain(tokenizer)

    # -- Java: words and counts ---------------------------------------------------------------------------------
    def _scan(self, docs: Sequence["Document"], keep: list[int]):
        """(words, head [S, 3], df [words], tf [words, F]) of the batch; see ``WordStats.scan``."""
        c, n_fields = self.config, len(self.config.fields)
        texts, segment, url = [], [], []
        for d, doc in enumerate(docs):
            for k, f in enumerate(c.fields):
                for source in self.read[f]:
                    for text in doc.fields.get(source, ()):
                        texts.append(text)
                        segment.append(d * n_fields + k)
                        url.append(int(source in c.url_fields))
        n_seg = len(docs) * n_fields
        utf8 = [t.encode("utf-8") for t in texts]  # (a lone surrogate raises: the caller takes the reference path)
        out = self.java.scan(b"".join(utf8), [len(b) for b in utf8], segment, url, n_seg, n_fields, keep)
        numbers = np.frombuffer(bytes(self.java.numbers().tostring()), dtype="<i4")
        head = numbers[:3 * n_seg].reshape(n_seg, 3)
        words = out.split("\n") if out else []
        per_word = numbers[3 * n_seg:].reshape(-1, n_fields + 1)
        return words, head, per_word[:, 0], per_word[:, 1:]

    # -- the tokenizer: pieces per distinct word -----------------------------------------------------------------
    def _word_pieces(self, words: list[str]) -> list[list[int]]:
        memo = self._pieces
        new = list(set(words).difference(memo))
        if new:
            if len(memo) > MEMO_LIMIT:
                memo.clear()
                new = list(set(words))
            if self._tokenizer is not None:
                memo.update(zip(new, (e.ids for e in self._tokenizer.encode_batch([[w] for w in new],
                                                                                   is_pretokenized=True,
                                                                                   add_special_tokens=False))))
            else:
                memo.update(zip(new, self.tok([[w] for w in new], is_split_into_words=True,
                                              add_special_tokens=False)["input_ids"]))
        return list(map(memo.__getitem__, words))

    def __call__(self, docs: Sequence["Document"]) -> dict[str, torch.Tensor]:
        return self._batch(*self.arrays(docs))

    def arrays(self, docs: Sequence["Document"]):
        """(ids, mask, field ids, word) of :meth:`_layout`, and each returned word's raw weight and idf (float64, NaN
        for a dropped word; ``None`` without weights)."""
        n_fields = len(self.config.fields)
        budgets = [self.budgets[f] for f in self.config.fields] * len(docs)
        keep = [max(1, b) for b in budgets]
        words, head, df, tf = self._scan(docs, keep)
        starts = np.concatenate([[0], np.cumsum(head[:, 2])])
        pieces = self._word_pieces(words)
        short = [s for s in range(len(keep)) if head[s, 2] < head[s, 1] and
                 sum(map(len, pieces[starts[s]:starts[s + 1]])) < max(1, budgets[s])]
        if short:  # a field whose first words give fewer pieces than its budget: all its words (the reference's retry)
            short = set(short)
            keep = [-1 if s in short else k for s, k in enumerate(keep)]
            words, head, df, tf = self._scan(docs, keep)
            starts = np.concatenate([[0], np.cumsum(head[:, 2])])
            pieces = self._word_pieces(words)
        raw = idf = None
        if self.weighter is not None:
            raw, idf = self._word_weights(df, head, tf, starts, n_fields)
        return (*self._layout(pieces, head[:, 2], budgets, len(docs), n_fields), raw, idf)

    def _layout(self, pieces: list[list[int]], returned: np.ndarray, budgets: list[int], n_docs: int, n_fields: int):
        """``[CLS] f1 [SEP] f2 [SEP] …`` as padded arrays (ids, mask, field ids, each position's word: an index into
        the returned words, -1 for [CLS], [SEP] and padding): a field's first ``budget`` pieces, laid out with array
        indexing rather than per piece."""
        n_seg = n_docs * n_fields
        lens = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        flat = np.fromiter(chain.from_iterable(pieces), dtype=np.int64, count=int(lens.sum()))
        word_seg = np.repeat(np.arange(n_seg), returned)
        piece_word = np.repeat(np.arange(len(pieces)), lens)
        piece_seg = word_seg[piece_word]
        seg_pieces = np.bincount(piece_seg, minlength=n_seg)
        first = np.concatenate([[0], np.cumsum(seg_pieces)])[:-1]  # each segment's first piece
        offset = np.arange(len(flat)) - first[piece_seg]
        cap = np.maximum(1, np.array(budgets, dtype=np.int64))
        keep = offset < cap[piece_seg]
        kept = np.minimum(seg_pieces, cap).reshape(n_docs, n_fields)
        # a segment's first position in its row: [CLS], then each earlier field's pieces and [SEP]
        seg_start = (1 + np.cumsum(kept + 1, axis=1) - (kept + 1)).ravel()
        width = 1 + (kept + 1).sum(axis=1)
        T = int(width.max())
        ids = np.full((n_docs, T), self.tok.pad_token_id, dtype=np.int64)
        types = np.zeros((n_docs, T), dtype=np.int64)
        word = np.full((n_docs, T), -1, dtype=np.int64)
        mask = (np.arange(T) < width[:, None]).astype(np.int64)
        ids[:, 0] = self.tok.cls_token_id
        doc_of_seg = np.arange(n_seg) // n_fields
        sep_at = seg_start + kept.ravel()
        ids[doc_of_seg, sep_at] = self.tok.sep_token_id
        types[doc_of_seg, sep_at] = np.arange(n_seg) % n_fields
        rows, cols = doc_of_seg[piece_seg[keep]], seg_start[piece_seg[keep]] + offset[keep]
        ids[rows, cols] = flat[keep]
        types[rows, cols] = piece_seg[keep] % n_fields
        word[rows, cols] = piece_word[keep]
        if self.config.variant == "glow-us":  # one field id for every token
            types[:] = 0
        return ids, mask, types, word

    # -- weights: the reference's arithmetic over arrays ---------------------------------------------------------
    def _idf_of(self, df: np.ndarray) -> np.ndarray:
        """Each word's idf from its term's df (-1, a dropped word → NaN), as ``WordWeighter.idf``: ``math.log`` of
        Lucene's argument with the weighter's N; remembered per df."""
        memo, n = self._idf, self.weighter._n
        values = df.tolist()
        for d in set(values).difference(memo):
            memo[d] = math.nan if d < 0 else math.log(1.0 + (n - d + 0.5) / (d + 0.5))
        return np.fromiter(map(memo.__getitem__, values), dtype=np.float64, count=len(values))

    def _word_weights(self, df: np.ndarray, head: np.ndarray, tf: np.ndarray, starts: np.ndarray, n_fields: int):
        """Each returned word's raw weight and idf (NaN for a dropped word), as ``WordWeighter.document_words``."""
        w, c = self.weighter, self.weighter.config
        idf = self._idf_of(df)
        if self.mode == "idf":
            return idf.copy(), idf
        names = self.config.fields
        n_seg = len(head)
        length = head[:, 0].astype(np.int64)
        field = np.arange(n_seg) % n_fields
        b = np.array([c.field_b.get(f, 0.75) for f in names])[field]
        avg = np.array([w._field_avg.get(f) or 0.0 for f in names], dtype=np.float64)[field]
        avg = np.where(avg > 0, avg, np.maximum(1.0, length))  # the reference's ``avgdl or max(1, length)``
        denom = 1 - b + b * length / avg
        seg = np.repeat(np.arange(n_seg), np.diff(starts))
        first = (seg // n_fields) * n_fields  # each word's document's first segment
        adjusted = np.zeros(len(df))
        with np.errstate(divide="ignore", invalid="ignore"):
            for g, f in enumerate(names):  # fields in order: the reference's sum, term by term
                n = tf[:, g]
                adjusted = adjusted + np.where(n > 0, c.field_weights.get(f, 1.0) * n / denom[first + g], 0.0)
        k1 = c.doc_k1
        raw = idf * adjusted * (k1 + 1) / (adjusted + k1)  # NaN where the word is dropped (idf NaN)
        return raw, idf

    def _batch(self, ids, mask, types, word, raw, idf) -> dict[str, torch.Tensor]:
        """Tensors of the layout; weights normalised per sequence as the reference's ``Featurizer._batch`` (mean 1
        over content pieces, ``stopword_weight`` for dropped words, ``special_weight`` for [CLS] / [SEP])."""
        c = self.config
        B, T = ids.shape
        out = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask),
               "token_type_ids": torch.from_numpy(types)}
        if self.weighter is None:
            out["token_weights"] = torch.ones(B, T)
            if c.variant == "glow-wt":
                out["weight_features"] = torch.zeros(B, T, 3)
            return out
        wc = self.weighter.config
        piece = word >= 0
        where = np.where(piece, word, len(raw))  # [CLS], [SEP] and padding read a NaN past the words
        raw, idf = np.append(raw, np.nan), np.append(idf, np.nan)
        real = mask.astype(bool)
        weights = np.where(real, wc.special_weight, 1.0)
        piece_raw = raw[where]
        weights[piece] = _normalised(piece_raw, piece, wc.stopword_weight)[piece]
        out["token_weights"] = torch.from_numpy(weights).to(torch.float32)
        if c.variant == "glow-wt":
            feats = np.zeros((B, T, 3))
            feats[..., 0] = weights
            feats[..., 1][piece] = _normalised(idf[where], piece, wc.stopword_weight)[piece]
            feats[..., 2][piece] = np.isnan(piece_raw[piece])
            out["weight_features"] = torch.from_numpy(feats).to(torch.float32)
        return out


def _plain(tokenizer):
    """The fast tokenizer's Rust object with no truncation, padding or special tokens, for words one at a time
    (``None`` for a slow tokenizer: it is called as itself)."""
    backend = getattr(tokenizer, "_tokenizer", None)
    if backend is None:
        return None
    plain = Tokenizer.from_str(backend.to_str())
    plain.no_truncation()
    plain.no_padding()
    return plain


def _normalised(values: np.ndarray, piece: np.ndarray, stopword_weight: float) -> np.ndarray:
    """Per row: each content value over the row's mean of positive values (``np.mean`` over them in order, as the
    reference); NaN (a dropped word) or a value ≤ 0 → ``stopword_weight``."""
    out = np.full(values.shape, stopword_weight)
    for r in range(values.shape[0]):
        v = values[r][piece[r]]
        ok = v > 0  # NaN compares False
        mean = float(np.mean(v[ok])) if ok.any() else 1.0
        row = np.full(len(v), stopword_weight)
        row[ok] = v[ok] / mean
        out[r][piece[r]] = row
    return out
