"""Run tags: the grammar of a fusion's tag (``a+b``) and a re-ranking's (``monobert(a)``), one pair of functions
each way, below every module that names runs (the rankers, the stages, the command line); the runs themselves pass
between stages keyed by :class:`irglow.runs.keys.RunKey`."""

from __future__ import annotations

ALL = "all"  # fusion.runs = ["all"]: every run of the experiment that can be tuned, fused at the end


def split_fusion(tag: str) -> list[str]:
    """A fusion's tag as its parts: ``"a+b"`` → ``["a", "b"]``.  ``+`` means fusion and nothing else; inside
    parentheses it belongs to a part (``"bm25+monobert(bm25f+glow)"``: BM25 fused with monoBERT re-ranking the
    hybrid ``bm25f+glow``; ``"a+(b+c)"``: a fused with the hybrid b+c)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(tag):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            raise ValueError(f"run {tag!r}: a ')' without its '('")
        if ch == "+" and depth == 0:
            parts.append(tag[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"run {tag!r}: a '(' without its ')'")
    parts.append(tag[start:])
    if any(not p for p in parts):
        raise ValueError(f"run {tag!r}: an empty part between '+'")
    return [p[1:-1] if p.startswith("(") and p.endswith(")") and len(split_fusion(p[1:-1])) > 1 else p
            for p in parts]


def fusion_tag(parts) -> str:
    """The tag of the fusion of ``parts``: joined by ``+``, a part that is itself a fusion in parentheses."""
    return "+".join(f"({p})" if len(split_fusion(p)) > 1 else p for p in parts)


def reranked_tag(model: str, first: str) -> str:
    """The run of ``model`` re-ranking ``first``: ``monobert(bm25f+glow)``."""
    return f"{model}({first})"


def split_reranked(tag: str) -> tuple[str, str] | None:
    """A re-ranking's tag as ``(model, first)`` (``monobert(bm25f+glow)`` → ``("monobert", "bm25f+glow")``), the
    inverse of :func:`reranked_tag`; ``None`` for a tag of another form (``bm25``, a fusion ``a+monobert(b)``)."""
    model, paren, rest = tag.partition("(")
    if not paren or not model or not rest.endswith(")") or len(split_fusion(tag)) > 1:
        return None
    depth = 0
    for ch in rest[:-1]:  # its own parentheses close at the end, not before: "a(b)+c(d)" is no re-ranking
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return None
    return (model, rest[:-1]) if depth == 0 and rest[:-1] else None
