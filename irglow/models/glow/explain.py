"""Which words does the encoder's [CLS] attend to? Top words per field, BERT beside GLOW (the papers' Table 4)."""

from __future__ import annotations

from collections import defaultdict

import torch

from irglow.data.records import Document
from irglow.models.glow.model import Featurizer, GlowEncoder


@torch.no_grad()
def top_attended_words(model: GlowEncoder, featurizer: Featurizer, doc: Document, top: int = 5) -> dict[str, list]:
    """{field: [(word, attention mass), …]} from the last layer's [CLS] row, averaged over heads,
    summed over a word's pieces."""
    model.eval()
    batch = featurizer.documents([doc])
    last = model.attn[-1]
    last.capture = True
    try:
        model(**batch)
    finally:
        last.capture = False
    probs = last.last_probs[0].mean(0)[0]  # [T]: [CLS] → every token
    ids = batch["input_ids"][0].tolist()
    types = batch["token_type_ids"][0].tolist()
    tokens = model.tokenizer.convert_ids_to_tokens(ids)
    fields = model.config.fields
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    word, mass, field_id = "", 0.0, None
    sep_seen = 0

    def flush():
        if word and field_id is not None:
            out[fields[field_id]][word] += mass

    for t, (tok, p) in enumerate(zip(tokens, probs.tolist())):
        if tok in (model.tokenizer.cls_token, model.tokenizer.pad_token):
            continue
        if tok == model.tokenizer.sep_token:
            flush()
            word, mass, field_id = "", 0.0, None
            sep_seen += 1
            continue
        fid = sep_seen if model.config.variant == "glow-us" else types[t]
        if tok.startswith("##"):
            word, mass = word + tok[2:], mass + p
        else:
            flush()
            word, mass, field_id = tok, p, min(fid, len(fields) - 1)
    flush()
    return {f: sorted(out[f].items(), key=lambda x: -x[1])[:top] for f in fields}


def explain_table(models: dict[str, tuple[GlowEncoder, Featurizer]], doc: Document, top: int = 5) -> str:
    """Markdown: one row per field, one column per model, the top words with their attention mass."""
    results = {name: top_attended_words(m, f, doc, top) for name, (m, f) in models.items()}
    names = list(results)
    lines = [f"document {doc.doc_id}", "", "| field | " + " | ".join(names) + " |", "|:--" * (len(names) + 1) + "|"]
    fields = next(iter(models.values()))[0].config.fields
    for f in fields:
        cells = [", ".join(f"{w} ({p:.2f})" for w, p in results[n].get(f, [])) or "—" for n in names]
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
