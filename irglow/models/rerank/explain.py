"""What a re-ranker's score of a document rests on: the score with each field taken out (occlusion)."""

from __future__ import annotations

import torch

from irglow.data.records import Document


@torch.no_grad()
def field_occlusion(model, query: str, doc: Document) -> list[tuple[str, float]]:
    """[("all", score), (field, score without that field − score), …] for the model's fields."""
    model.eval()
    fields = list(model.config.fields)
    variants = [doc] + [Document(doc.doc_id, {k: v for k, v in doc.fields.items() if k != f}) for f in fields]
    scores = model.score([query] * len(variants), variants).float().cpu().tolist()
    return [("all", scores[0])] + [(f, s - scores[0]) for f, s in zip(fields, scores[1:])]


def explain_table(model, query: str, docs: list[Document]) -> str:
    rows = ["| doc | score | " + " | ".join(f"without {f}" for f in model.config.fields) + " |",
            "|:--|--:|" + "--:|" * len(model.config.fields)]
    for d in docs:
        parts = field_occlusion(model, query, d)
        rows.append(f"| {d.doc_id} | {parts[0][1]:.4f} | " + " | ".join(f"{v:+.4f}" for _, v in parts[1:]) + " |")
    return "\n".join(rows)
