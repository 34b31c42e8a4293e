"""Run tags and hybrids: the grammar of a fusion's tag (``a+b``) and a re-ranking's (``monobert(a)``), the configured
hybrids as :class:`Hybrid` objects, and whether a fusion asks for a run's held-out queries.  Read from ``[fusion]``
alone, so the rankers, the stage interface and every model stage can ask without importing the fusion stage (no
import circle); the runs themselves pass between stages keyed by :class:`irglow.runs.keys.RunKey`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from irglow.config import as_names, flag
from irglow.settings import FUSION_METHODS, FUSION_NORMS

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


@dataclass(frozen=True)
class Hybrid:
    """One hybrid of an experiment, as an object: the runs it fuses and, where it differs from ``[fusion]``'s, its
    own method and normalisation, or fixed weights (then nothing is tuned).  ``Experiment(systems=[…,
    Hybrid(["bm25", "glow"], method="rrf")])`` and a ``fusion.runs`` table entry (``{runs = ["bm25", "glow"],
    weights = [0.3, 0.7]}``) both make one; ``"bm25+glow"`` is ``Hybrid(["bm25", "glow"])``."""

    runs: tuple[str, ...]
    method: str | None = None
    norm: str | None = None
    weights: tuple[float, ...] | None = None

    def __init__(self, runs, method: str | None = None, norm: str | None = None, weights=None):
        object.__setattr__(self, "runs", tuple(split_fusion(runs) if isinstance(runs, str) else (str(r) for r in runs)))
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "norm", norm)
        object.__setattr__(self, "weights", None if weights is None else tuple(weights))

    @property
    def tag(self) -> str:
        return fusion_tag(self.runs)

    def options(self) -> dict[str, Any]:
        """The settings it sets itself (what its cache key adds to ``[fusion]``'s)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in
                (("method", self.method), ("norm", self.norm), ("weights", self.weights)) if v is not None}

    def tuned(self, default_method: str) -> bool:
        """Whether its weights are tuned: no fixed weights and not reciprocal-rank (``default_method``: [fusion]'s)."""
        return self.weights is None and (self.method or default_method) != "rrf"

    def settings_text(self) -> str:
        """Its own settings as an error message names them (``{'weights': [1, 0]}``, or the [fusion] defaults)."""
        return str(self.options() or "the [fusion] defaults")

    def entry(self) -> str | dict[str, Any]:
        """As a ``fusion.runs`` entry: its tag, or a table when it sets anything itself."""
        return {"runs": list(self.runs), **self.options()} if self.options() else self.tag

    @classmethod
    def of(cls, entry: Any, where: str = "fusion.runs") -> "Hybrid":
        """A ``fusion.runs`` entry (``"a+b"``, ``["a", "b"]``, a table, a Hybrid) as a Hybrid; a table's wrong key,
        method, normalisation or weights is an error naming it."""
        if isinstance(entry, Hybrid):
            return entry
        if isinstance(entry, str) or isinstance(entry, list):
            return cls(entry)
        if not isinstance(entry, dict):
            raise ValueError(f"{where} = {entry!r} must be 'a+b', a list of run tags or a table {{runs = [...], "
                             f"method = ..., weights = [...]}}")
        unknown = sorted(set(entry) - {"runs", "method", "norm", "weights"})
        if unknown or "runs" not in entry:
            raise ValueError(f"{where}: a hybrid table takes runs, method, norm and weights"
                             f"{'; not ' + ', '.join(unknown) if unknown else '; runs is missing'}")
        runs = entry["runs"]
        if not (isinstance(runs, str) or (isinstance(runs, list) and all(isinstance(r, str) for r in runs))):
            raise ValueError(f"{where}.runs = {runs!r} must be 'a+b' or a list of run tags")
        hybrid = cls(runs, entry.get("method"), entry.get("norm"), entry.get("weights"))
        for key, allowed in (("method", FUSION_METHODS), ("norm", FUSION_NORMS)):
            value = entry.get(key)
            if value is not None and value not in allowed:
                raise ValueError(f"{where}.{key} = {value!r} must be one of {', '.join(allowed)}")
        weights = entry.get("weights")
        if weights is not None:
            ok = isinstance(weights, list) and len(weights) == len(hybrid.runs) and all(
                isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 0
                for w in weights) and sum(weights) > 0
            if not ok:
                raise ValueError(f"{where}.weights = {weights!r} must be {len(hybrid.runs)} numbers >= 0, one per "
                                 f"run, not all 0")
        return hybrid


def hybrids(config: dict[str, Any]) -> list[Hybrid]:
    """The configured hybrids (``Hybrid(["all"])`` for the all-runs fusion); ``fusion.runs`` that is not a
    non-empty list of entries is an error."""
    if not flag(config, "fusion"):
        return []
    entries = _entries(config.get("fusion", {}))
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"fusion.runs = {entries!r} must be a non-empty list, e.g. [['twbert', 'glow']]")
    out: list[Hybrid] = []
    for i, entry in enumerate(entries):
        hybrid = Hybrid.of(entry, f"fusion.runs[{i}]")
        same = next((h for h in out if h.tag == hybrid.tag), None)
        if same is not None and same != hybrid:  # one tag names one run file: one of them would be dropped
            raise ValueError(f"fusion.runs[{i}]: two hybrids of {hybrid.tag} with different settings "
                             f"({same.settings_text()} and {hybrid.settings_text()}); "
                             f"a run tag names one run: keep one, or compare the settings in two experiments")
        if same is None:
            out.append(hybrid)
    return out


def _entries(fs: dict[str, Any]):
    """``fusion.runs`` as written: a list, or one ``"a+b,a+b+c"`` string (``--set``, ``FUSE=``)."""
    entries = fs.get("runs", [])
    return as_names(entries) if isinstance(entries, str) else entries
